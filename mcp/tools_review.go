package mcp

import (
	"context"
	"path/filepath"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/workspace"
	"codehydra/wsfs"
)

// The review loop's tools: seeing what a workspace changed, and sending
// its agent a review.

func getDiffTool() toolDef {
	return toolDef{
		tool: &sdk.Tool{
			Name:  ToolGetDiff,
			Title: "See a workspace's changes",
			Description: "What a workspace changed against its base branch (from the merge-base): its commits, uncommitted " +
				"changes and untracked files. Answers each changed file (status, +/- lines; binary files are said, not " +
				"shown) and a page of the unified patch: pass nextOffset as offset for the next page, or file for one " +
				"file's patch. Your own workspace, or with workspace a child of yours (one your agent created).",
			Annotations: readOnly(),
		},
		handler:        typed((*Server).getDiff),
		needsWorkspace: true,
		workspaceArg:   true,
	}
}

type diffInput struct {
	Workspace string `json:"workspace,omitempty" jsonschema:"absolute path of the workspace to compare: your own (the default) or a child of yours; the user may name any"`
	File      string `json:"file,omitempty" jsonschema:"only this file's patch, a path relative to the workspace as files lists it"`
	Offset    int    `json:"offset,omitempty" jsonschema:"where in the patch (bytes) the page starts: the last answer's nextOffset"`
	MaxBytes  int    `json:"maxBytes,omitempty" jsonschema:"the most patch bytes to answer, 1 to 1048576 (default 65536)"`
}

// getDiff answers workspace.Manager.Diff for the caller's workspace or a
// workspace it may review. Files the file tools refuse (the deny list, a
// file with another name) are listed as withheld, with why, and left out
// of the patch.
func (s *Server) getDiff(ctx context.Context, _ *sdk.CallToolRequest, in diffInput) (*sdk.CallToolResult, workspace.Diff, error) {
	ws, err := s.reviewable(ctx, in.Workspace)
	if err != nil {
		return nil, workspace.Diff{}, fail(err)
	}
	files := wsfs.New(ws.Path, s.opts.WorkspaceDeny, nil)
	d, err := s.opts.Workspaces.Diff(ctx, ws.Path, workspace.DiffOptions{
		File: in.File, Offset: in.Offset, MaxBytes: in.MaxBytes, Withhold: files.Withheld,
	})
	if err != nil {
		return nil, workspace.Diff{}, fail(err)
	}
	if d.Files == nil {
		d.Files = []workspace.FileChange{}
	}
	return nil, d, nil
}

func sendReviewTool() toolDef {
	return toolDef{
		tool: &sdk.Tool{
			Name:  ToolSendReview,
			Title: "Review a child's changes",
			Description: "Sends a review to the agent of a child of yours (a workspace your agent created): a summary and " +
				"comments on files and lines of its changes (as workspace_get_diff shows them), which its agent gets as one " +
				"prompt in its current session, exactly once, as soon as it is ready. Answers the review's delivery " +
				"(state pending|delivered|failed, sessionId, error); workspace_list shows the last one as review. Your own " +
				"workspace cannot be reviewed this way.",
			Annotations: &sdk.ToolAnnotations{DestructiveHint: new(false), OpenWorldHint: new(false)},
		},
		handler:        typed((*Server).sendReview),
		needsWorkspace: true,
		workspaceArg:   true,
	}
}

type (
	reviewInput struct {
		Workspace string          `json:"workspace" jsonschema:"absolute path of the workspace to review: a child of yours (one your agent created); the user may name any"`
		Summary   string          `json:"summary,omitempty" jsonschema:"what you think of the changes as a whole, and what to do first"`
		Comments  []reviewComment `json:"comments,omitempty" jsonschema:"comments on files and lines, at most 200; the summary and comments hold at most 65536 bytes of text"`
	}

	// reviewComment is workspace.ReviewComment with its schema's words.
	reviewComment struct {
		File    string `json:"file" jsonschema:"path relative to the workspace, as workspace_get_diff lists it"`
		Line    int    `json:"line,omitempty" jsonschema:"the line (from 1, of the file in the workspace) the comment is about; leave it out for the whole file"`
		EndLine int    `json:"endLine,omitempty" jsonschema:"the last line of a range that starts at line"`
		Text    string `json:"text" jsonschema:"what should change, or what you ask"`
	}
)

// sendReview hands a review of a workspace the caller may review, other
// than its own, to that workspace's agent: from the user, or from the
// calling workspace's agent.
func (s *Server) sendReview(ctx context.Context, _ *sdk.CallToolRequest, in reviewInput) (*sdk.CallToolResult, workspace.ReviewDelivery, error) {
	if in.Workspace == "" {
		return nil, workspace.ReviewDelivery{}, fail(workspace.Errorf(workspace.CodeInvalidInput, "name the workspace to review (workspace): a child of yours"))
	}
	ws, err := s.reviewable(ctx, in.Workspace)
	if err != nil {
		return nil, workspace.ReviewDelivery{}, fail(err)
	}
	r := workspace.Review{Summary: in.Summary, From: workspace.ReviewFromUser}
	if own := callerWorkspace(ctx); !callerFrom(ctx).isUser() {
		if ws.Path == own.Path {
			return nil, workspace.ReviewDelivery{}, fail(workspace.Errorf(workspace.CodeForbidden,
				"%s is your own workspace: a review of it would go to your own agent; review the workspaces your agent created", ws.Path))
		}
		r.From = own.Path
	}
	for _, c := range in.Comments {
		r.Comments = append(r.Comments, workspace.ReviewComment(c))
	}
	if err := workspace.CheckReview(r); err != nil {
		return nil, workspace.ReviewDelivery{}, fail(err)
	}
	if s.opts.Reviews == nil {
		return nil, workspace.ReviewDelivery{}, fail(workspace.Errorf(workspace.CodeConflict, "CodeHydra runs no agents here, so there is none to review"))
	}
	d, err := s.opts.Reviews.SendReview(ws.Path, r)
	if err != nil {
		return nil, workspace.ReviewDelivery{}, fail(err)
	}
	return nil, d, nil
}

// reviewable is the workspace a review tool acts on: the caller's own
// when path is "" (for the user, the one X-Workspace-Path names, which
// the user may leave out when it names path), else the workspace at path, which the user may name
// whatever it is and a workspace's token only when it is that workspace
// or a child of it (its createdBy). Whether another path is a workspace
// at all is none of a workspace's business: every refusal is the same.
func (s *Server) reviewable(ctx context.Context, path string) (workspace.Workspace, error) {
	own := callerWorkspace(ctx)
	switch {
	case path == "" && own.Path == "":
		return workspace.Workspace{}, workspace.Errorf(workspace.CodeInvalidInput,
			"name the workspace: its absolute path in workspace (or in the %s header)", WorkspaceHeader)
	case path == "":
		return own, nil
	}
	if !filepath.IsAbs(path) {
		return workspace.Workspace{}, workspace.Errorf(workspace.CodeInvalidInput, "workspace must be an absolute path: %q", path)
	}
	ws, err := s.opts.Workspaces.Resolve(path)
	who := callerFrom(ctx)
	if who.isUser() || err == nil && ws.Path == own.Path {
		return ws, err
	}
	if err == nil {
		var md map[string]string
		if md, err = s.opts.Workspaces.Metadata(ctx, ws.Path); err == nil && md[workspace.MetadataCreatedBy] == own.Path {
			return ws, nil
		}
	}
	return workspace.Workspace{}, workspace.Errorf(workspace.CodeForbidden,
		"%s is not your workspace nor a child of it (a workspace your agent created); you may review only those", path)
}
