//go:build unix

package opencode

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// A first prompt or a review for a workspace whose agent has failed
// already (here: no opencode binary) fails at once with the agent's
// reason, rather than waiting for a ready that will not come.
func TestAPromptForAnAgentThatFailedAlreadyFailsAtOnce(t *testing.T) {
	f := newFixture(t)
	o := f.options()
	o.Bin = ""
	s := f.start(o)
	ws := worktreeWorkspace(t)
	s.Start(ws)
	waitState(t, s, ws.Path, workspace.AgentStateNotFound, 5*time.Second)

	d, err := s.QueuePrompt(ws.Path, workspace.FirstPrompt{Prompt: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.SendReview(ws.Path, workspace.Review{From: "user", Summary: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	for what, d := range map[string]workspace.PromptDelivery{"first prompt": d, "review": {State: r.State, Error: r.Error}} {
		if d.State != workspace.DeliveryFailed || !strings.Contains(d.Error, "opencode not found") {
			t.Errorf("%s: delivery = %+v, want failed with the agent's reason", what, d)
		}
	}
	if got, ok := s.PromptDelivery(ws.Path); !ok || got.State != workspace.DeliveryFailed {
		t.Errorf("PromptDelivery = %+v, %v", got, ok)
	}
	if got := s.Reviews(ws.Path); len(got) != 1 || got[0] != r {
		t.Errorf("Reviews = %+v, want %+v", got, r)
	}
}

// worktreeWorkspace is a workspace on a new git worktree "feat" (a first
// prompt is recorded in its git admin folder).
func worktreeWorkspace(t *testing.T) workspace.Workspace {
	t.Helper()
	repo := testenv.GitRepo(t, "repo")
	wt := filepath.Join(filepath.Dir(repo), "feat")
	testenv.Git(t, repo, "worktree", "add", "-q", "-b", "feat", wt)
	ws := workspace.Workspace{Name: "feat", Branch: "feat", Path: wt, ProjectPath: repo}
	return ws
}
