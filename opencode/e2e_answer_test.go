//go:build unix

package opencode_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"codehydra/internal/testenv"
	"codehydra/opencode"
	"codehydra/workspace"
)

// waitRequest waits until the agent of ws waits on exactly one request,
// and returns it.
func (st *realStack) waitRequest(t *testing.T, ws workspace.Workspace, what string) workspace.PendingRequest {
	t.Helper()
	var reqs []workspace.PendingRequest
	// A first turn on a loaded machine takes long: opencode loads the
	// model's provider then.
	testenv.WaitFor(t, what, 2*time.Minute, func() bool {
		reqs = st.sup.AgentStatus(ws.Path).Requests
		return len(reqs) > 0
	})
	if len(reqs) != 1 {
		t.Fatalf("%s: requests = %+v, want one", what, reqs)
	}
	return reqs[0]
}

func TestRealOpencodeAnswersThroughTheSupervisorReachTheAgentAndTheTurnGoesOn(t *testing.T) {
	bin := testenv.RealOpencode(t)
	model := startModel(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A loaded machine starts opencode slowly (30 s and more seen with
	// other tests running).
	st := newRealStack(t, ctx, bin, model, realStackOptions{config: askBash,
		tune: func(o *opencode.SupervisorOptions) { o.ReadyTimeout = 3 * time.Minute }})
	ws, api := st.readyAgent(t, ctx, "answers")
	session := api.newSession()

	tests := []struct {
		what, prompt string
		// check looks at the request as the agent status shows it.
		check func(workspace.PendingRequest) bool
		reply workspace.Reply
		// toolResult is what the model must get back from the tool; ""
		// when the turn just ends.
		toolResult string
	}{
		{"a permission allowed once", bashTurn,
			func(r workspace.PendingRequest) bool {
				return r.Kind == workspace.RequestPermission && r.Tool == "bash" && r.SessionID == session &&
					r.Summary == "echo hello" && slices.Contains(r.Patterns, "echo hello")
			},
			workspace.Reply{Permission: workspace.AllowOnce}, "hello"},
		{"a question answered", questionTurn,
			func(r workspace.PendingRequest) bool {
				return r.Kind == workspace.RequestQuestion && r.Summary == "Go on?" && len(r.Questions) == 1 &&
					slices.Equal(r.Questions[0].Options, []string{"Yes", "No"}) && r.Questions[0].Header == "Go on"
			},
			workspace.Reply{Answers: [][]string{{"No"}}}, `"Go on?"="No"`},
		{"a question rejected", questionTurn,
			func(r workspace.PendingRequest) bool { return r.Kind == workspace.RequestQuestion },
			workspace.Reply{Reject: true}, ""},
		{"a permission rejected", bashTurn,
			func(r workspace.PendingRequest) bool { return r.Kind == workspace.RequestPermission },
			workspace.Reply{Permission: workspace.RejectOnce, Message: "not this one"}, ""},
	}
	for _, tt := range tests {
		before := len(model.Requests())
		turn := make(chan error, 1)
		go func() { turn <- api.prompt(ctx, session, tt.prompt) }()
		req := st.waitRequest(t, ws, tt.what+" shown")
		if !tt.check(req) {
			t.Errorf("%s: request = %+v", tt.what, req)
		}
		// A reply that does not fit is refused before it reaches opencode.
		var e *workspace.Error
		if err := st.sup.Answer(ctx, ws.Path, req.ID, workspace.Reply{}); !errors.As(err, &e) || e.Code != workspace.CodeInvalidInput {
			t.Errorf("%s: an empty reply: %v, want invalid input", tt.what, err)
		}
		if err := st.sup.Answer(ctx, ws.Path, req.ID, tt.reply); err != nil {
			t.Fatalf("%s: Answer: %v", tt.what, err)
		}
		endOf(t, turn, "the turn with "+tt.what)
		testenv.WaitFor(t, tt.what+": the request gone", 30*time.Second, func() bool {
			s := st.sup.AgentStatus(ws.Path)
			return len(s.Requests) == 0 && s.NeedsInput == 0
		})
		// Answered already: a conflict, not a second reply.
		if err := st.sup.Answer(ctx, ws.Path, req.ID, tt.reply); !errors.As(err, &e) || e.Code != workspace.CodeConflict {
			t.Errorf("%s: answering again: %v, want a conflict", tt.what, err)
		}
		if tt.toolResult == "" {
			continue
		}
		var got bool
		for _, r := range model.Requests()[before:] {
			got = got || r.LastRole == "tool" && strings.Contains(r.LastText, tt.toolResult)
		}
		if !got {
			t.Errorf("%s: the model never got a tool result with %q; requests: %+v", tt.what, tt.toolResult, model.Requests()[before:])
		}
	}
}
