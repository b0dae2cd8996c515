package mcp

// workspace_answer: a parent agent answers the permission requests and
// questions its children's agents wait on (workspace_list shows them); the
// user answers any workspace's.

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/workspace"
)

// Answers replies to the requests agents wait on; the opencode supervisor
// implements it.
type Answers interface {
	// Answer replies r to the pending request requestID of the agent of
	// the workspace at path.
	Answer(ctx context.Context, path, requestID string, r workspace.Reply) error
}

func answerTool() toolDef {
	return toolDef{
		tool: &sdk.Tool{
			Name:  ToolAnswer,
			Title: "Answer a child's agent",
			Description: "Answers a permission request or a question that the agent of a child of yours (a workspace your " +
				"agent created) waits on; workspace_list shows them as agent.requests (id, kind, summary, a question's " +
				"options). A permission: reply {\"permission\":\"once\"} or {\"permission\":\"reject\",\"message\":\"why\"} " +
				"(\"always\" is the user's alone). A question: reply {\"answers\":[[\"label\"],…]}, one list of chosen " +
				"labels per question (your own words where the question allows them), or {\"reject\":true}. The child's " +
				"turn goes on at once. Answers {\"answered\":true}.",
			Annotations: &sdk.ToolAnnotations{DestructiveHint: new(false), OpenWorldHint: new(false)},
		},
		handler:        typed((*Server).answer),
		needsWorkspace: true,
		workspaceArg:   true,
	}
}

type (
	answerInput struct {
		Workspace string      `json:"workspace" jsonschema:"absolute path of the workspace whose agent asks: a child of yours (one your agent created); the user may name any"`
		RequestID string      `json:"requestId" jsonschema:"the request's id, as workspace_list shows it in agent.requests"`
		Reply     answerReply `json:"reply" jsonschema:"the answer: permission (with message), or answers, or reject"`
	}

	// answerReply is workspace.Reply with its schema's words.
	answerReply struct {
		Permission string     `json:"permission,omitempty" jsonschema:"for a permission request: once (allow this time) or reject; always (allow from now on) is the user's alone"`
		Message    string     `json:"message,omitempty" jsonschema:"with permission reject: what the agent should do instead"`
		Answers    [][]string `json:"answers,omitempty" jsonschema:"for a question: one answer per question, each the labels chosen (one unless the question allows several), or your own words where the question allows them"`
		Reject     bool       `json:"reject,omitempty" jsonschema:"for a question: dismiss it without an answer"`
	}

	answerOutput struct {
		Answered bool `json:"answered" jsonschema:"true: the agent has the answer and its turn goes on"`
	}
)

// answer replies to a request of a workspace the caller may act on as a
// parent: a child of its own, never its own workspace (an agent does not
// grant itself a permission), and not "always", which changes the child's
// rules for good.
func (s *Server) answer(ctx context.Context, _ *sdk.CallToolRequest, in answerInput) (*sdk.CallToolResult, answerOutput, error) {
	if in.Workspace == "" {
		return nil, answerOutput{}, fail(workspace.Errorf(workspace.CodeInvalidInput, "name the workspace whose agent asks (workspace): a child of yours"))
	}
	if in.RequestID == "" {
		return nil, answerOutput{}, fail(workspace.Errorf(workspace.CodeInvalidInput, "name the request (requestId) as workspace_list shows it"))
	}
	ws, err := s.reviewable(ctx, in.Workspace)
	if err != nil {
		return nil, answerOutput{}, fail(err)
	}
	if !callerFrom(ctx).isUser() {
		if ws.Path == callerWorkspace(ctx).Path {
			return nil, answerOutput{}, fail(workspace.Errorf(workspace.CodeForbidden,
				"%s is your own workspace: its requests are the user's to answer; you may answer those of the workspaces your agent created", ws.Path))
		}
		if in.Reply.Permission == workspace.AllowAlways {
			return nil, answerOutput{}, fail(workspace.Errorf(workspace.CodeForbidden,
				"\"always\" would allow this for the rest of the child's run: only the user may; reply \"once\" or \"reject\""))
		}
	}
	if s.opts.Answers == nil {
		return nil, answerOutput{}, fail(workspace.Errorf(workspace.CodeConflict, "CodeHydra runs no agents here, so none waits for an answer"))
	}
	if err := s.opts.Answers.Answer(ctx, ws.Path, in.RequestID, workspace.Reply(in.Reply)); err != nil {
		return nil, answerOutput{}, fail(err)
	}
	return nil, answerOutput{Answered: true}, nil
}
