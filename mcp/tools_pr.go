package mcp

import (
	"context"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/workspace"
)

// The review loop's pull requests: pushing a workspace's branch and
// opening its pull request with the user's command.

// prCallSlack is added to the pull request's own bounds (the push's and
// the command's timeouts) for the call around them.
const prCallSlack = 10 * time.Second

func createPRTool() toolDef {
	return toolDef{
		tool: &sdk.Tool{
			Name:  ToolCreatePR,
			Title: "Open a workspace's pull request",
			Description: "Pushes a workspace's branch to its project's remote (git push -u; never forced) and opens its pull " +
				"request into the workspace's base with the user's prCommand (default: gh pr create), then records the URL " +
				"as the workspace's metadata pr. title and body go to the command as one argument each; without them gh fills " +
				"both from the commits. When the project has no remote, or there is no command (gh not on PATH, prCommand " +
				"unset), note says so and no pull request is opened (the branch is still pushed when there is a remote). " +
				"Your own workspace, or with workspace a child of yours (one your agent created).",
			Annotations: &sdk.ToolAnnotations{DestructiveHint: new(false), OpenWorldHint: new(true)},
		},
		handler:        typed((*Server).createPR),
		needsWorkspace: true,
		workspaceArg:   true,
		timeout: func(s *Server) time.Duration {
			if s.opts.PullRequests == nil {
				return s.opts.CallTimeout
			}
			return s.opts.PullRequests.MaxDuration() + prCallSlack
		},
	}
}

type createPRInput struct {
	Workspace string `json:"workspace,omitempty" jsonschema:"absolute path of the workspace whose branch to push: your own (the default) or a child of yours; the user may name any"`
	Title     string `json:"title,omitempty" jsonschema:"the pull request's title, one line, not starting with '-'; leave it out (and body) to fill both from the commits"`
	Body      string `json:"body,omitempty" jsonschema:"the pull request's description (needs a title)"`
}

// createPR pushes the workspace's branch and opens its pull request. A
// workspace's agent may push only a branch CodeHydra created, never one
// of the user's that it switched to.
func (s *Server) createPR(ctx context.Context, _ *sdk.CallToolRequest, in createPRInput) (*sdk.CallToolResult, workspace.PullRequest, error) {
	ws, err := s.reviewable(ctx, in.Workspace)
	if err != nil {
		return nil, workspace.PullRequest{}, fail(err)
	}
	if s.opts.PullRequests == nil {
		return nil, workspace.PullRequest{}, fail(workspace.Errorf(workspace.CodeInternal, "this CodeHydra opens no pull requests"))
	}
	pr, err := s.opts.PullRequests.Create(ctx, ws.Path, workspace.PullRequestOptions{
		Title: in.Title, Body: in.Body, CreatedBranchOnly: !callerFrom(ctx).isUser(),
	})
	if err != nil {
		return nil, workspace.PullRequest{}, fail(err)
	}
	return nil, pr, nil
}
