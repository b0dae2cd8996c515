//go:build unix

package opencode

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// A first prompt or a review whose session could not be created (the
// agent answered 500 right after it was ready; a review makes one when the
// agent has none) is tried again while the agent stays ready, with a
// backoff, up to sendAttempts times; then it fails with the reason.
func TestAPromptWhoseSessionFailsIsRetriedWhileTheAgentStaysReady(t *testing.T) {
	send := map[string]func(*Supervisor, string) (func() workspace.PromptDelivery, error){
		"first prompt": func(s *Supervisor, path string) (func() workspace.PromptDelivery, error) {
			_, err := s.QueuePrompt(path, workspace.FirstPrompt{Prompt: "hello"})
			return func() workspace.PromptDelivery { d, _ := s.PromptDelivery(path); return d }, err
		},
		"review": func(s *Supervisor, path string) (func() workspace.PromptDelivery, error) {
			_, err := s.SendReview(path, workspace.Review{From: "user", Summary: "hello"})
			return func() workspace.PromptDelivery {
				r := s.Reviews(path)[0]
				return workspace.PromptDelivery{State: r.State, SessionID: r.SessionID, Error: r.Error}
			}, err
		},
	}
	for _, tc := range []struct {
		kind, name string
		failures   int
		wantState  workspace.DeliveryState
	}{
		{"first prompt", "delivered after two failures", sendAttempts - 1, workspace.DeliveryDelivered},
		{"first prompt", "failed after the last attempt", sendAttempts, workspace.DeliveryFailed},
		{"review", "delivered after two failures", sendAttempts - 1, workspace.DeliveryDelivered},
		{"review", "failed after the last attempt", sendAttempts, workspace.DeliveryFailed},
	} {
		t.Run(tc.kind+" "+tc.name, func(t *testing.T) {
			f := newFixture(t, "FAKEOC_FAIL_SESSIONS="+strconv.Itoa(tc.failures))
			s := f.start(f.options())
			ws := worktreeWorkspace(t)
			s.Start(ws)
			waitState(t, s, ws.Path, workspace.AgentStateReady, 10*time.Second)
			delivery, err := send[tc.kind](s, ws.Path)
			if err != nil {
				t.Fatal(err)
			}
			var d workspace.PromptDelivery
			testenv.WaitFor(t, "the prompt's delivery to end", 15*time.Second, func() bool {
				d = delivery()
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
