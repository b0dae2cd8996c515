package mcp

// The workspace tools: each acts on the caller's own workspace, which the
// call pipeline resolved from X-Workspace-Path.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/workspace"
)

func getStatusTool() toolDef {
	return toolDef{
		tool: &sdk.Tool{
			Name:  ToolGetStatus,
			Title: "Get workspace status",
			Description: "Reports the state of your own workspace (the git worktree you are working in): its path and branch, " +
				"whether it has uncommitted changes (isDirty), how far it is ahead of or behind its base branch, and what its " +
				"agent sessions are doing (agent.type none|idle|busy|mixed with counts) and what they cost so far (agent.usage: " +
				"inputTokens, outputTokens, cost in US dollars), and the ports your dev servers should listen on (ports: count ports " +
				"from first, also in the environment as CODEHYDRA_PORT, CODEHYDRA_PORTS and PORT). Call it before committing, " +
				"merging or asking to delete the workspace.",
			Annotations: readOnly(),
		},
		handler:        typed((*Server).getStatus),
		needsWorkspace: true,
	}
}

type statusOutput struct {
	Path        string                `json:"path" jsonschema:"absolute path of the workspace"`
	Name        string                `json:"name" jsonschema:"workspace name (its branch)"`
	Branch      string                `json:"branch,omitempty" jsonschema:"checked-out branch; absent on a detached HEAD"`
	ProjectPath string                `json:"projectPath" jsonschema:"absolute path of the project"`
	IsDirty     bool                  `json:"isDirty" jsonschema:"true when the worktree has uncommitted changes"`
	Base        string                `json:"base,omitempty" jsonschema:"branch the workspace is compared with"`
	Ahead       int                   `json:"ahead" jsonschema:"commits on the workspace branch that base lacks"`
	Behind      int                   `json:"behind" jsonschema:"commits on base that the workspace branch lacks"`
	Agent       workspace.AgentStatus `json:"agent" jsonschema:"what the workspace's agent sessions are doing"`
	Ports       *workspace.PortBlock  `json:"ports,omitempty" jsonschema:"the workspace's own ports for dev servers: count ports from first (also in the environment as CODEHYDRA_PORT, CODEHYDRA_PORTS and PORT)"`
	PortsNote   string                `json:"portsNote,omitempty" jsonschema:"why the workspace has no ports, when it has none"`
}

func (s *Server) getStatus(ctx context.Context, _ *sdk.CallToolRequest, _ noInput) (*sdk.CallToolResult, statusOutput, error) {
	ws := callerWorkspace(ctx)
	st, err := s.opts.Workspaces.Status(ctx, ws.Path)
	if err != nil {
		return nil, statusOutput{}, fail(err)
	}
	return nil, statusOutput{
		Path: ws.Path, Name: ws.Name, Branch: ws.Branch, ProjectPath: ws.ProjectPath,
		IsDirty: st.IsDirty, Base: st.Base, Ahead: st.Ahead, Behind: st.Behind, Agent: st.Agent,
		Ports: st.Ports, PortsNote: st.PortsNote,
	}, nil
}

func getMetadataTool() toolDef {
	return toolDef{
		tool: &sdk.Tool{
			Name:  ToolGetMetadata,
			Title: "Get workspace metadata",
			Description: "Returns all metadata of your workspace as a flat object of string values. \"base\" is always present: " +
				"the branch this workspace was created from and should be merged back into. Other keys are notes that " +
				"you or the user stored with workspace_set_metadata (e.g. a ticket or a plan).",
			Annotations: readOnly(),
		},
		handler:        typed((*Server).getMetadata),
		needsWorkspace: true,
	}
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

func setMetadataTool() toolDef {
	return toolDef{
		tool: &sdk.Tool{
			Name:  ToolSetMetadata,
			Title: "Set workspace metadata",
			Description: "Stores a string under a key in your workspace's metadata (kept in the project's git config, so it " +
				"survives restarts); value null deletes the key. Keys start with a letter and contain only letters, digits " +
				"and '-'. Use it to remember things about this workspace, such as a ticket ID or the state of your task. " +
				"Returns null.",
			InputSchema: setMetadataSchema(),
			Annotations: &sdk.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(false), OpenWorldHint: new(false)},
		},
		handler:        typed((*Server).setMetadata),
		needsWorkspace: true,
	}
}

type setMetadataInput struct {
	Key   string  `json:"key" jsonschema:"metadata key: a letter, then letters, digits or '-'"`
	Value *string `json:"value" jsonschema:"new value; null deletes the key"`
}

// metadataKeyPattern is docs/DESIGN.md's rule for metadata keys; the workspace
// domain enforces it too, the schema tells the model up front.
const metadataKeyPattern = `^[A-Za-z][A-Za-z0-9-]*$`

// setMetadataSchema is workspace_set_metadata's input schema, with the
// key's pattern that struct tags cannot express.
func setMetadataSchema() *jsonschema.Schema {
	in, err := jsonschema.For[setMetadataInput](nil)
	if err != nil {
		panic(fmt.Sprintf("schema of %s: %v", ToolSetMetadata, err))
	}
	in.Properties["key"].Pattern = metadataKeyPattern
	return in
}

func (s *Server) setMetadata(ctx context.Context, _ *sdk.CallToolRequest, in setMetadataInput) (*sdk.CallToolResult, any, error) {
	if err := s.opts.Workspaces.SetMetadata(ctx, callerWorkspace(ctx).Path, in.Key, in.Value); err != nil {
		return nil, nil, fail(err)
	}
	return textResult("null"), nil, nil
}

func getOpencodePortTool() toolDef {
	return toolDef{
		tool: &sdk.Tool{
			Name:  ToolGetOpencodePort,
			Title: "Get OpenCode port",
			Description: "Returns the TCP port (a bare number) of the OpenCode server that runs your workspace's agent on " +
				"127.0.0.1, or null when none runs; a hibernated agent is woken first. Only needed to talk to that server's HTTP API directly.",
			Annotations: readOnly(),
		},
		handler:        typed((*Server).getOpencodePort),
		needsWorkspace: true,
	}
}

func (s *Server) getOpencodePort(ctx context.Context, _ *sdk.CallToolRequest, _ noInput) (*sdk.CallToolResult, any, error) {
	if s.opts.Agents == nil {
		return textResult("null"), nil, nil
	}
	if err := s.wakeIfHibernated(ctx, callerWorkspace(ctx).Path); err != nil {
		return nil, nil, fail(err)
	}
	port, ok := s.opts.Agents.OpencodePort(callerWorkspace(ctx).Path)
	if !ok || port <= 0 {
		return textResult("null"), nil, nil
	}
	return textResult(strconv.Itoa(port)), nil, nil
}

func deleteTool() toolDef {
	return toolDef{
		tool: &sdk.Tool{
			Name:  ToolDelete,
			Title: "Delete this workspace",
			Description: "Deletes your own workspace: stops its agent (you), removes its metadata and its git worktree " +
				"(uncommitted changes are lost) and deletes its branch, if CodeHydra created it, unless keepBranch is true. It answers " +
				"{\"started\":true} at once and the deletion continues in the background; this conversation ends " +
				"with it. Before anything is removed, the project's teardown command (if the user set one) runs; if it " +
				"fails the workspace is kept, unless force is true. Only call it when the user asked for it or your work " +
				"is merged and nothing is left to do.",
			Annotations: &sdk.ToolAnnotations{DestructiveHint: new(true), OpenWorldHint: new(false)},
		},
		handler:        typed((*Server).deleteWorkspace),
		needsWorkspace: true,
		// The user's call waits for the project's teardown.
		timeout: func(s *Server) time.Duration { return s.opts.CallTimeout + teardownWait },
	}
}

// teardownWait is how much longer than a call the user's workspace_delete
// may take: the settings' default teardownTimeoutSeconds. A longer
// teardown goes on in the background, and the answer says so.
const teardownWait = time.Minute

type (
	deleteInput struct {
		KeepBranch bool `json:"keepBranch,omitempty" jsonschema:"keep the git branch after removing the worktree (default false: the branch is deleted too if CodeHydra created it; a branch that existed before the workspace is kept unless deleteBranch)"`
		// DeleteBranch asks to delete a branch that existed before the
		// workspace too; keepBranch wins.
		DeleteBranch bool `json:"deleteBranch,omitempty" jsonschema:"also delete the branch when it existed before the workspace (default false: such a branch is kept); keepBranch wins"`
		Force        bool `json:"force,omitempty" jsonschema:"the user's token only: delete even when the project's teardown command fails (it still runs); default false: a failed teardown keeps the workspace"`
	}

	deleteOutput struct {
		Started bool `json:"started" jsonschema:"true: the deletion runs in the background"`
		// Deleted and Note answer the user's call, which waits for the
		// delete: a workspace's own call cannot, its agent is stopped.
		Deleted bool   `json:"deleted,omitempty" jsonschema:"the user's call only: the workspace is deleted"`
		Note    string `json:"note,omitempty" jsonschema:"what the delete kept on purpose, or that it still runs the project's teardown in the background"`
	}
)

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
	opts := workspace.DeleteOptions{KeepBranch: in.KeepBranch, DeleteBranch: in.DeleteBranch, Force: in.Force}
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
	if in.Force && !callerOf(req).isUser() {
		// The teardown is the user's guard (unpushed work, a database
		// still in use); only the user overrules it.
		return nil, deleteOutput{}, fail(workspace.Errorf(workspace.CodeForbidden,
			"force: only the user (the tray's Delete anyway, or the user's token) may delete a workspace whose teardown fails; nothing was deleted (delete without force: a failed teardown keeps the workspace, and the tray says why)"))
	}
	if !s.reserveBackground() {
		return nil, deleteOutput{}, fail(workspace.Errorf(workspace.CodeInternal, "CodeHydra is shutting down; delete the workspace after it restarts"))
	}
	run, err := s.opts.Workspaces.StartDelete(ctx, ws.Path, opts)
	if err != nil {
		s.releaseBackground()
		return nil, deleteOutput{}, fail(err)
	}

	done := make(chan error, 1)
	background := func() {
		s.runBackground(func(ctx context.Context) {
			err := run(ctx)
			done <- err
			if err != nil {
				s.log.Warn("background workspace delete failed", slog.String("workspace", ws.Path), slog.Any("error", err))
				return
			}
			s.log.Info("workspace deleted", slog.String("workspace", ws.Path))
		})
	}
	if !callerOf(req).isUser() {
		s.afterResponse(requestHeader(req), background)
		return nil, deleteOutput{Started: true}, nil
	}
	// The user's call stops no agent of its own: it waits for the delete
	// (its teardown above all), until shortly before its own timeout.
	background()
	wait := time.NewTimer(time.Until(deadlineOf(ctx)) - time.Second)
	defer wait.Stop()
	select {
	case err := <-done:
		if errors.Is(err, workspace.ErrTeardownFailed) {
			return nil, deleteOutput{}, fail(fmt.Errorf("%w\n(workspace_delete with force: true deletes it although the teardown fails)", err))
		}
		if err != nil {
			return nil, deleteOutput{}, fail(err)
		}
		return nil, deleteOutput{Started: true, Deleted: true}, nil
	case <-wait.C:
		return nil, deleteOutput{Started: true, Note: "the delete still runs (the project's teardown, most likely) and goes on in the background; the tray shows how it ends"}, nil
	}
}

// deadlineOf is ctx's deadline; far off when it has none.
func deadlineOf(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(time.Hour)
}
