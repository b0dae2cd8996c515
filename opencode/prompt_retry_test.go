package opencode

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// A first prompt whose session could not be created (the agent answered
// 500 right after it was ready) is tried again while the agent stays
// ready, with a backoff, up to sendAttempts times; then it fails with the
// reason.
func TestAFirstPromptWhoseSessionFailsIsRetriedWhileTheAgentStaysReady(t *testing.T) {
	for _, tc := range []struct {
		name      string
		failures  int
		wantState workspace.DeliveryState
	}{
		{"delivered after two failures", sendAttempts - 1, workspace.DeliveryDelivered},
		{"failed after the last attempt", sendAttempts, workspace.DeliveryFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, "FAKEOC_FAIL_SESSIONS="+strconv.Itoa(tc.failures))
			s := f.start(f.options())
			ws := worktreeWorkspace(t)
			s.Start(ws)
			waitState(t, s, ws.Path, workspace.AgentStateReady, 10*time.Second)
			if _, err := s.QueuePrompt(ws.Path, workspace.FirstPrompt{Prompt: "hello"}); err != nil {
				t.Fatal(err)
			}
			var d workspace.PromptDelivery
			testenv.WaitFor(t, "the prompt's delivery to end", 15*time.Second, func() bool {
				d, _ = s.PromptDelivery(ws.Path)
				return d.State != workspace.DeliveryPending
			})
			if d.State != tc.wantState {
				t.Fatalf("delivery = %+v, want %s", d, tc.wantState)
			}
			switch tc.wantState {
			case workspace.DeliveryDelivered:
				if d.SessionID != "ses_fake003" {
					t.Fatalf("delivery = %+v, want the session of the third POST /session", d)
				}
			case workspace.DeliveryFailed:
				if !strings.Contains(d.Error, "500") {
					t.Fatalf("delivery = %+v, want the reason (500)", d)
				}
			}
			if st := s.AgentStatus(ws.Path); st.State != workspace.AgentStateReady {
				t.Fatalf("agent %+v, want still ready", st)
			}
		})
	}
}
