package mcp

// Hibernation's tools: a parent (or the user) stops the agent of a child
// while it is not needed and starts it again. The tools that need a
// running agent (the port and session tools, workspace_restart_agent)
// wake it themselves through wakeIfHibernated.

import (
	"context"
	"log/slog"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/workspace"
)

func hibernateTool() toolDef {
	return toolDef{
		tool: &sdk.Tool{
			Name:  ToolHibernate,
			Title: "Hibernate a child's agent",
			Description: "Stops the agent of a child of yours (a workspace your agent created) to free its memory, and keeps " +
				"everything else: its worktree, branch, metadata and the prompts and reviews waiting for it. A turn it is in " +
				"ends. It stays hibernated, also across a restart of CodeHydra, until workspace_wake or anything that needs " +
				"its agent (a review sent, its port or session asked for) starts it again; workspace_get_status and " +
				"workspace_list show agent.state \"hibernated\" without waking it. Answers {\"state\":\"hibernated\"}.",
			Annotations: &sdk.ToolAnnotations{DestructiveHint: new(false), IdempotentHint: true, OpenWorldHint: new(false)},
		},
		handler:        typed((*Server).hibernate),
		needsWorkspace: true,
		workspaceArg:   true,
	}
}

func wakeTool() toolDef {
	return toolDef{
		tool: &sdk.Tool{
			Name:  ToolWake,
			Title: "Wake a hibernated agent",
			Description: "Starts the hibernated agent of a child of yours (or your own workspace) again and waits until it is " +
				"ready. Answers {\"state\":\"ready\",\"port\":n}; an agent that is ready already answers at once.",
			Annotations: &sdk.ToolAnnotations{DestructiveHint: new(false), IdempotentHint: true, OpenWorldHint: new(false)},
		},
		handler:        typed((*Server).wake),
		needsWorkspace: true,
		workspaceArg:   true,
	}
}

type (
	hibernateInput struct {
		Workspace string `json:"workspace,omitempty" jsonschema:"absolute path of the workspace: a child of yours (one your agent created); the user may name any, or leave it out for the one X-Workspace-Path names"`
	}

	hibernateOutput struct {
		State workspace.AgentState `json:"state" jsonschema:"the agent's state now: hibernated, or ready after workspace_wake"`
		Port  int                  `json:"port,omitempty" jsonschema:"port of the woken agent's OpenCode server on 127.0.0.1"`
	}
)

// hibernate stops the agent of a child of the caller (any workspace for
// the user). A workspace's own agent cannot hibernate itself: that would
// end the very turn that asks.
func (s *Server) hibernate(ctx context.Context, _ *sdk.CallToolRequest, in hibernateInput) (*sdk.CallToolResult, hibernateOutput, error) {
	ws, err := s.ownChild(ctx, in.Workspace, "hibernate")
	if err != nil {
		return nil, hibernateOutput{}, fail(err)
	}
	if own := callerWorkspace(ctx); !callerFrom(ctx).isUser() && ws.Path == own.Path {
		return nil, hibernateOutput{}, fail(workspace.Errorf(workspace.CodeForbidden,
			"%s is your own workspace: hibernating it would stop you; hibernate the workspaces your agent created", ws.Path))
	}
	if s.opts.Hibernation == nil {
		return nil, hibernateOutput{}, fail(workspace.Errorf(workspace.CodeConflict, "CodeHydra runs no agents here, so there is none to hibernate"))
	}
	if err := s.opts.Hibernation.Hibernate(ctx, ws.Path); err != nil {
		return nil, hibernateOutput{}, fail(err)
	}
	s.log.Info("agent hibernated on request", slog.String("workspace", ws.Path), slog.String("by", callerFrom(ctx).name()))
	return nil, hibernateOutput{State: workspace.AgentStateHibernated}, nil
}

// wake starts the agent of the caller's own workspace or a child of it
// (any workspace for the user) and waits until it is ready.
func (s *Server) wake(ctx context.Context, _ *sdk.CallToolRequest, in hibernateInput) (*sdk.CallToolResult, hibernateOutput, error) {
	ws, err := s.ownChild(ctx, in.Workspace, "wake")
	if err != nil {
		return nil, hibernateOutput{}, fail(err)
	}
	if s.opts.Hibernation == nil {
		return nil, hibernateOutput{}, fail(workspace.Errorf(workspace.CodeConflict, "CodeHydra runs no agents here, so there is none to wake"))
	}
	if err := s.opts.Hibernation.Wake(ctx, ws.Path); err != nil {
		return nil, hibernateOutput{}, fail(err)
	}
	out := hibernateOutput{State: workspace.AgentStateReady}
	if s.opts.Agents != nil {
		out.Port, _ = s.opts.Agents.OpencodePort(ws.Path)
	}
	return nil, out, nil
}

// ownChild is the workspace a hibernation tool acts on: as reviewable
// has it (the caller's own, or a child of it; any for the user), refused
// in words that name what was asked.
func (s *Server) ownChild(ctx context.Context, path, what string) (workspace.Workspace, error) {
	ws, err := s.reviewable(ctx, path)
	if workspace.CodeOf(err) == workspace.CodeForbidden {
		return ws, workspace.Errorf(workspace.CodeForbidden,
			"%s is not your workspace nor a child of it (a workspace your agent created); you may %s only those", path, what)
	}
	return ws, err
}

// wakeIfHibernated wakes the hibernated agent of the workspace at path
// and waits until it is ready, for a tool that needs it running.
func (s *Server) wakeIfHibernated(ctx context.Context, path string) error {
	h := s.opts.Hibernation
	if h == nil || !h.Hibernated(path) {
		return nil
	}
	s.log.Info("waking a hibernated agent for a call", slog.String("workspace", path))
	return h.Wake(ctx, path)
}
