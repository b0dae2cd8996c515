//go:build unix

package opencode_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"codehydra/internal/fakemodel"
	"codehydra/internal/testenv"
)

// toolResult is the text of the newest tool result the model was sent
// after the n-th request that contains want, "" for none.
func toolResult(model *fakemodel.Server, n int, want string) string {
	reqs := model.Requests()[n:]
	for _, r := range slices.Backward(reqs) {
		if r.LastRole == "tool" && strings.Contains(r.LastText, want) {
			return r.LastText
		}
	}
	return ""
}

// TestRealOpencodeAgentFollowsItsChildAndRestartsItself: with the real
// opencode and the fake model, A's agent calls workspace_list and sees
// the last reply of the child it created (read from the child's server),
// reads its own session with workspace_get_agent_session, and restarts
// itself with workspace_restart_agent: a new process that is ready again.
func TestRealOpencodeAgentFollowsItsChildAndRestartsItself(t *testing.T) {
	bin := testenv.RealOpencode(t)
	model := startModel(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := newRealStack(t, ctx, bin, model, realStackOptions{})

	wsA, apiA := st.readyAgent(t, ctx, "feat-a")
	child, apiC := st.readyAgent(t, ctx, "child")
	// What Create records when A's agent creates the child (createdBy is
	// not writable through SetMetadata).
	testenv.Git(t, child.Path, "config", "branch."+child.Branch+".codehydra.createdBy", wsA.Path)
	if err := apiC.prompt(ctx, apiC.newSession(), "hello"); err != nil {
		t.Fatalf("child's turn: %v", err)
	}

	sesA := apiA.newSession()
	n := len(model.Requests())
	if err := apiA.prompt(ctx, sesA, `CALL codehydra_workspace_list {}`); err != nil {
		t.Fatalf("A's workspace_list turn: %v", err)
	}
	got := toolResult(model, n, `"workspaces"`)
	if !strings.Contains(got, `"lastReply":{"text":"Done."}`) || !strings.Contains(got, `"createdBy":"`+wsA.Path+`"`) {
		t.Fatalf("A's workspace_list did not show its child's last reply; tool result: %s\nrequests: %+v", got, model.Requests()[n:])
	}

	n = len(model.Requests())
	if err := apiA.prompt(ctx, sesA, `CALL codehydra_workspace_get_agent_session {}`); err != nil {
		t.Fatalf("A's get_agent_session turn: %v", err)
	}
	if got := toolResult(model, n, `"sessionId"`); !strings.Contains(got, `"sessionId":"`+sesA+`"`) {
		t.Fatalf("A's session: tool result %q, want session %s", got, sesA)
	}

	pid := agentPID(t, wsA.Path)
	go func() {
		// The restart ends the turn; its request may fail.
		_ = apiA.prompt(ctx, sesA, `CALL codehydra_workspace_restart_agent {}`)
	}()
	st.waitReady(t, wsA, pid)
	testenv.WaitFor(t, "the restart logged", 10*time.Second, func() bool {
		return strings.Contains(st.logs.String(), "agent restarts on its own request")
	})
}
