package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/workspace"
)

// The tools that land a workspace's work: merging it into its base (or
// another branch) and bringing its base into it.

func mergeTool() toolDef {
	return toolDef{
		tool: &sdk.Tool{
			Name:  ToolMerge,
			Title: "Merge a child workspace",
			Description: "Lands a child workspace's branch (one your agent created) in its base branch or target: strategy " +
				"merge (a merge commit, or a fast-forward), squash (one commit) or rebase (its commits replayed onto the " +
				"target, then a fast-forward). Only commits are merged: uncommitted or untracked files in the workspace " +
				"refuse it, and so do conflicts and changed files where the target is checked out (that checkout moves " +
				"with the branch); the refusal names the files. preflight true only answers what a merge would do. After " +
				"a merge the target is checked to hold all of the work (verified); cleanup true then deletes the workspace " +
				"and its branch, unless it changed since the merge. You cannot merge your own workspace; you may merge a " +
				"child only on a branch CodeHydra created, into its base or your own branch.",
			Annotations: &sdk.ToolAnnotations{DestructiveHint: new(true), OpenWorldHint: new(false)},
		},
		handler:        typed((*Server).merge),
		needsWorkspace: true,
		workspaceArg:   true,
	}
}

type mergeInput struct {
	Workspace string `json:"workspace" jsonschema:"absolute path of the workspace to merge: a child of yours; the user may name any"`
	Strategy  string `json:"strategy,omitempty" jsonschema:"merge (the default), squash or rebase"`
	Target    string `json:"target,omitempty" jsonschema:"the local branch to merge into; the workspace's base by default"`
	Message   string `json:"message,omitempty" jsonschema:"message of the merge or squash commit; CodeHydra writes one by default"`
	Cleanup   bool   `json:"cleanup,omitempty" jsonschema:"true: once the merge is verified, delete the workspace (worktree and branch)"`
	Preflight bool   `json:"preflight,omitempty" jsonschema:"true: only say what the merge would do (conflicts, uncommitted files, the target's checkout); nothing changes"`
}

// mergeOutput is workspace_merge's answer.
type mergeOutput struct {
	Preflight  workspace.Preflight `json:"preflight" jsonschema:"what was found before merging: canMerge, and blockers naming what is in the way"`
	Merged     bool                `json:"merged" jsonschema:"true when the target branch moved"`
	TargetHead string              `json:"targetHead,omitempty" jsonschema:"the commit the target is at after the merge"`
	Verified   bool                `json:"verified" jsonschema:"true when the target was checked to hold all of the workspace's work"`
	Cleanup    string              `json:"cleanup,omitempty" jsonschema:"the workspace's delete: offered (verified; call again with cleanup, or workspace_delete), done, or failed: why; absent when not verified"`
}

// Cleanup answers of workspace_merge.
const (
	cleanupOffered = "offered"
	cleanupDone    = "done"
)

// merge answers workspace.Manager.Merge (or Preflight) for a workspace
// the caller may land: any for the user, a child of its for a workspace's
// agent, never its own (see landable).
func (s *Server) merge(ctx context.Context, _ *sdk.CallToolRequest, in mergeInput) (*sdk.CallToolResult, mergeOutput, error) {
	ws, err := s.landable(ctx, in.Workspace)
	if err == nil {
		err = s.agentsChild(ctx, ws)
	}
	if err == nil {
		err = s.agentsTarget(ctx, ws, in.Target)
	}
	if err != nil {
		return nil, mergeOutput{}, fail(err)
	}
	o := workspace.MergeOptions{Strategy: workspace.Strategy(in.Strategy), Target: in.Target, Message: in.Message}
	if in.Preflight {
		pf, err := s.opts.Workspaces.Preflight(ctx, ws.Path, o)
		if err != nil {
			return nil, mergeOutput{}, fail(err)
		}
		return nil, mergeOutput{Preflight: pf, TargetHead: pf.TargetHead}, nil
	}
	res, err := s.opts.Workspaces.Merge(ctx, ws.Path, o)
	if err != nil {
		return nil, mergeOutput{}, fail(err)
	}
	out := mergeOutput{Preflight: res.Preflight, Merged: res.Merged, TargetHead: res.TargetHead, Verified: res.Verified}
	switch {
	case !res.Verified:
	case !in.Cleanup:
		out.Cleanup = cleanupOffered
	default:
		out.Cleanup = s.cleanup(ctx, ws, res.Head)
	}
	return nil, out, nil
}

// cleanup deletes a workspace whose work a merge landed, at head, the
// way workspace_delete does, and says how that went. The user's delete
// takes the branch too (it is merged); a workspace's agent's only a branch
// CodeHydra created, as its workspace_delete does. The agent the delete
// stops is the child's, never the caller's, so it runs before the answer.
func (s *Server) cleanup(ctx context.Context, ws workspace.Workspace, head string) string {
	// Its agent may have written files since the merge: those would go
	// with the worktree. Checked first so as not to stop the agent for
	// nothing; the delete checks again once the agent is stopped
	// (ExpectHead), which is what keeps work done in between.
	c, err := s.opts.Workspaces.Changes(ctx, ws.Path)
	if err == nil && len(c.Changed)+len(c.Untracked) > 0 {
		return fmt.Sprintf("failed: the workspace has files changed since the merge (%s); it was not deleted",
			strings.Join(append(c.Changed, c.Untracked...), ", "))
	}
	var run func(context.Context) error
	if err == nil {
		o := workspace.DeleteOptions{DeleteBranch: callerFrom(ctx).isUser(), ExpectHead: head}
		run, err = s.opts.Workspaces.StartDelete(ctx, ws.Path, o)
	}
	if err == nil {
		err = run(ctx)
	}
	if err != nil {
		s.log.Warn("delete a merged workspace", slog.String("workspace", ws.Path), slog.Any("error", err))
		return "failed: " + err.Error()
	}
	s.log.Info("merged workspace deleted", slog.String("workspace", ws.Path))
	return cleanupDone
}

// agentsTarget refuses a workspace's agent a merge target other than the
// child's base (what "" means) or the agent's own branch: its landing
// power is to hand its child's work back where it was meant to go, never
// into some other branch of the user's.
func (s *Server) agentsTarget(ctx context.Context, ws workspace.Workspace, target string) error {
	target = strings.TrimPrefix(target, "refs/heads/")
	if target == "" || callerFrom(ctx).isUser() {
		return nil
	}
	st, err := s.opts.Workspaces.Status(ctx, ws.Path)
	if err != nil {
		return err
	}
	if target == strings.TrimPrefix(st.Base, "refs/heads/") {
		return nil
	}
	if own, err := s.opts.Workspaces.Resolve(callerWorkspace(ctx).Path); err == nil && own.Branch != "" && target == own.Branch {
		return nil
	}
	return workspace.Errorf(workspace.CodeForbidden,
		"target %s is neither the base of %s (%s) nor your own workspace's branch; an agent lands a child's work only there (leave target out for the base); another branch is the user's to merge into",
		target, ws.Path, st.Base)
}

// agentsChild refuses a workspace's agent a child whose branch CodeHydra
// did not create: a branch that existed before (reused by
// workspace_create) is the user's, not the agent's to merge or rewrite.
func (s *Server) agentsChild(ctx context.Context, ws workspace.Workspace) error {
	if callerFrom(ctx).isUser() || ws.Path == callerWorkspace(ctx).Path {
		return nil
	}
	created, err := s.opts.Workspaces.BranchCreated(ctx, ws.Path)
	if err != nil {
		return err
	}
	if !created {
		return workspace.Errorf(workspace.CodeForbidden,
			"the branch of %s was not created by CodeHydra for it (it existed before, or was checked out there since), so it is the user's; only the user may merge it or update it from its base", ws.Path)
	}
	return nil
}

// landable is the workspace a merge acts on: the user may name any, a
// workspace's agent only a child of its (see reviewable). An agent never
// lands its own work: that is for whoever handed the work out.
func (s *Server) landable(ctx context.Context, path string) (workspace.Workspace, error) {
	if path == "" {
		return workspace.Workspace{}, workspace.Errorf(workspace.CodeInvalidInput, "workspace is required: the absolute path of the workspace to merge")
	}
	ws, err := s.reviewable(ctx, path)
	if err != nil {
		return workspace.Workspace{}, err
	}
	if !callerFrom(ctx).isUser() && ws.Path == callerWorkspace(ctx).Path {
		return workspace.Workspace{}, workspace.Errorf(workspace.CodeForbidden,
			"an agent may not merge its own workspace: landing work is for the user, or for the agent that created the workspace; say that your work is ready instead")
	}
	return ws, nil
}

func updateFromBaseTool() toolDef {
	return toolDef{
		tool: &sdk.Tool{
			Name:  ToolUpdateFromBase,
			Title: "Update a workspace from its base",
			Description: "Brings a workspace's base branch into it: mode rebase replays its commits onto the base, mode merge " +
				"merges the base in. Its uncommitted or untracked files refuse it (commit first); on a conflict nothing " +
				"changes and the answer names the files. Your own workspace, or with workspace a child of yours.",
			Annotations: &sdk.ToolAnnotations{DestructiveHint: new(true), OpenWorldHint: new(false)},
		},
		handler:        typed((*Server).updateFromBase),
		needsWorkspace: true,
		workspaceArg:   true,
	}
}

type updateInput struct {
	Workspace string `json:"workspace,omitempty" jsonschema:"absolute path of the workspace to update: your own (the default) or a child of yours; the user may name any"`
	Mode      string `json:"mode" jsonschema:"rebase (replay the workspace's commits onto its base) or merge (merge the base in)"`
}

// updateFromBase answers workspace.Manager.UpdateFromBase for a workspace
// the caller may review (reviewable).
func (s *Server) updateFromBase(ctx context.Context, _ *sdk.CallToolRequest, in updateInput) (*sdk.CallToolResult, workspace.UpdateResult, error) {
	ws, err := s.reviewable(ctx, in.Workspace)
	if err == nil {
		err = s.agentsChild(ctx, ws)
	}
	if err != nil {
		return nil, workspace.UpdateResult{}, fail(err)
	}
	res, err := s.opts.Workspaces.UpdateFromBase(ctx, ws.Path, workspace.UpdateMode(in.Mode))
	if err != nil {
		return nil, workspace.UpdateResult{}, fail(err)
	}
	return nil, res, nil
}
