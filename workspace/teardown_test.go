package workspace

import (
	"context"
	"errors"
	"slices"
	"testing"

	"codehydra/internal/testenv"
)

// teardownFunc is a Teardowns of a function.
type teardownFunc func(ctx context.Context, ws Workspace) error

func (f teardownFunc) Teardown(ctx context.Context, ws Workspace) error { return f(ctx, ws) }

// stepsOf lists the delete steps that events announced for path.
func stepsOf(evs []Event, path string) []DeleteStep {
	var steps []DeleteStep
	for _, e := range evs {
		if e.Kind == EventDeleteProgress && e.Workspace.Path == path {
			steps = append(steps, e.Step)
		}
	}
	return steps
}

func TestTheTeardownRunsAfterTheAgentStopsAndBeforeTheWorktreeGoes(t *testing.T) {
	t.Parallel()
	agents := &fakeAgents{}
	var sawAgentStopped, sawWorktree bool
	m, _ := newManager(t, Options{Agents: agents, Teardowns: teardownFunc(func(_ context.Context, ws Workspace) error {
		agents.mu.Lock()
		sawAgentStopped = slices.Equal(agents.stopped, []string{ws.Path})
		agents.mu.Unlock()
		sawWorktree = exists(ws.Path)
		return nil
	})})
	p, err := m.AddProject(context.Background(), testenv.GitRepo(t, "project"))
	if err != nil {
		t.Fatal(err)
	}
	ws := create(t, m, p, "ws")
	evs := record(t, m)
	if err := m.Delete(context.Background(), ws.Path, DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if !sawAgentStopped || !sawWorktree {
		t.Errorf("the teardown saw the agent stopped %v and the worktree %v, want both", sawAgentStopped, sawWorktree)
	}
	evs.sync(t, m)
	if got := stepsOf(evs.all(), ws.Path); !slices.Equal(got, DeleteSteps) {
		t.Errorf("delete steps %v, want %v", got, DeleteSteps)
	}
}

func TestATeardownCutShortByACrashLeavesTheWorkspaceToTheNextLaunch(t *testing.T) {
	t.Parallel()
	repo := testenv.GitRepo(t, "project")
	var relaunch []Workspace
	var relaunchErr error
	var m *Manager
	m, _ = newManager(t, Options{Projects: []string{repo}, Teardowns: teardownFunc(func(ctx context.Context, ws Workspace) error {
		// What a crash now leaves on disk is what the next launch finds.
		next, _ := newManager(t, Options{Projects: []string{repo}, WorktreeRoot: m.opts.WorktreeRoot})
		if relaunchErr = next.Load(ctx); relaunchErr == nil {
			relaunch, relaunchErr = next.Workspaces(repo)
		}
		return errors.New("killed")
	})})
	if err := m.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	ws, err := m.Create(context.Background(), CreateOptions{ProjectPath: repo, Name: "ws"})
	if err != nil {
		t.Fatal(err)
	}
	err = m.Delete(context.Background(), ws.Path, DeleteOptions{})
	if !errors.Is(err, ErrTeardownFailed) {
		t.Fatalf("Delete = %v, want the teardown's failure", err)
	}
	if relaunchErr != nil || len(relaunch) != 1 || relaunch[0].Path != ws.Path {
		t.Fatalf("a launch during the teardown found %+v (%v), want the workspace", relaunch, relaunchErr)
	}
	if !exists(ws.Path) || !branchExists(t, repo, "ws") {
		t.Fatal("the workspace or its branch went")
	}
}
