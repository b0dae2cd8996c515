package mcp

// Handlers of the workspace tools: each acts on the caller's own workspace,
// which the call pipeline resolved from X-Workspace-Path.

import (
	"context"
	"log/slog"
	"strconv"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/workspace"
)

func (s *Server) getStatus(ctx context.Context, _ *sdk.CallToolRequest, _ noInput) (*sdk.CallToolResult, statusOutput, error) {
	ws := callerWorkspace(ctx)
	st, err := s.opts.Workspaces.Status(ctx, ws.Path)
	if err != nil {
		return nil, statusOutput{}, fail(err)
	}
	return nil, statusOutput{
		Path: ws.Path, Name: ws.Name, Branch: ws.Branch, ProjectPath: ws.ProjectPath,
		IsDirty: st.IsDirty, Base: st.Base, Ahead: st.Ahead, Behind: st.Behind, Agent: st.Agent,
	}, nil
}

func (s *Server) getMetadata(ctx context.Context, _ *sdk.CallToolRequest, _ noInput) (*sdk.CallToolResult, map[string]string, error) {
	md, err := s.opts.Workspaces.Metadata(ctx, callerWorkspace(ctx).Path)
	if err != nil {
		return nil, nil, fail(err)
	}
	if md == nil {
		md = map[string]string{}
	}
	return nil, md, nil
}

func (s *Server) setMetadata(ctx context.Context, _ *sdk.CallToolRequest, in setMetadataInput) (*sdk.CallToolResult, any, error) {
	if err := s.opts.Workspaces.SetMetadata(ctx, callerWorkspace(ctx).Path, in.Key, in.Value); err != nil {
		return nil, nil, fail(err)
	}
	return textResult("null"), nil, nil
}

func (s *Server) getOpencodePort(ctx context.Context, _ *sdk.CallToolRequest, _ noInput) (*sdk.CallToolResult, any, error) {
	if s.opts.Agents == nil {
		return textResult("null"), nil, nil
	}
	port, ok := s.opts.Agents.OpencodePort(callerWorkspace(ctx).Path)
	if !ok || port <= 0 {
		return textResult("null"), nil, nil
	}
	return textResult(strconv.Itoa(port)), nil, nil
}

// deleteWorkspace reserves the delete at once, so that a delete already
// running (from the tray or another call) is a conflict in this answer,
// and runs it in the background. The delete's first step stops the
// calling agent, so it must not start before the answer is on its way: it
// starts once the HTTP response carrying this result has been flushed
// (afterResponse), not after a guessed delay. It runs with the server's
// context, not the request's, so that it outlives the call; Shutdown waits
// for it.
func (s *Server) deleteWorkspace(ctx context.Context, req *sdk.CallToolRequest, in deleteInput) (*sdk.CallToolResult, deleteOutput, error) {
	ws := callerWorkspace(ctx)
	opts := workspace.DeleteOptions{KeepBranch: in.KeepBranch, DeleteBranch: in.DeleteBranch}
	if in.DeleteBranch && !in.KeepBranch && !callerOf(req).isUser() {
		// A branch that existed before the workspace is the user's: only
		// the user deletes it. A workspace's token deletes only a branch
		// CodeHydra created, which a delete does without deleteBranch.
		created, err := s.opts.Workspaces.BranchCreated(ctx, ws.Path)
		if err != nil {
			return nil, deleteOutput{}, fail(err)
		}
		if !created {
			return nil, deleteOutput{}, fail(workspace.Errorf(workspace.CodeForbidden,
				"deleteBranch: the branch of this workspace existed before it, so it is the user's, and only the user (the tray, or the user's token) may delete it; nothing was deleted (delete without deleteBranch to keep the branch)"))
		}
		opts.DeleteBranch = false
	}
	if !s.reserveBackground() {
		return nil, deleteOutput{}, fail(workspace.Errorf(workspace.CodeInternal, "CodeHydra is shutting down; delete the workspace after it restarts"))
	}
	run, err := s.opts.Workspaces.StartDelete(ctx, ws.Path, opts)
	if err != nil {
		s.releaseBackground()
		return nil, deleteOutput{}, fail(err)
	}

	s.afterResponse(requestHeader(req), func() {
		s.runBackground(func(ctx context.Context) {
			if err := run(ctx); err != nil {
				s.log.Warn("background workspace delete failed", slog.String("workspace", ws.Path), slog.Any("error", err))
				return
			}
			s.log.Info("workspace deleted", slog.String("workspace", ws.Path))
		})
	})
	return nil, deleteOutput{Started: true}, nil
}
