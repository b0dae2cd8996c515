package prepare

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"codehydra/internal/settings"
	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// harness is a Preparer whose Start records the workspaces started.
type harness struct {
	*Preparer
	log     *testenv.SyncBuffer
	mu      sync.Mutex
	setup   settings.ProjectSetup
	started []string
}

func newHarness(t *testing.T, setup settings.ProjectSetup) *harness {
	h := &harness{log: &testenv.SyncBuffer{}, setup: setup}
	h.Preparer = New(Options{
		Setup: func(string) (settings.ProjectSetup, bool) {
			h.mu.Lock()
			defer h.mu.Unlock()
			return h.setup, !h.setup.Empty()
		},
		Start: func(ws workspace.Workspace) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.started = append(h.started, ws.Path)
		},
		Logger: slog.New(slog.NewTextHandler(h.log, nil)),
	})
	t.Cleanup(h.Close)
	return h
}

func (h *harness) startedCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.started)
}

func (h *harness) waitPhase(t *testing.T, path string, want Phase) State {
	t.Helper()
	var st State
	testenv.WaitFor(t, "phase "+string(want), 20*time.Second, func() bool {
		st, _ = h.State(path)
		return st.Phase == want
	})
	return st
}

func TestAFailingSetupKeepsTheWorkspaceSaysWhyAndRetryWorks(t *testing.T) {
	main, wt, _ := newWorktree(t)
	// The setup fails until a marker exists: a retry after the user fixed
	// the cause succeeds.
	h := newHarness(t, settings.ProjectSetup{Copy: []string{".env*"}, Setup: `sh -c "echo checking; test -e ok || { echo 'need ok' >&2; exit 7; }"`})
	ws := workspace.Workspace{Path: wt, ProjectPath: main, Name: "feature"}
	h.Added(ws, true)
	st := h.waitPhase(t, wt, PhaseFailed)
	var se *SetupError
	if !errors.As(st.Err, &se) || se.ExitCode != 7 || !strings.Contains(st.Err.Error(), "need ok") {
		t.Fatalf("failure %v, want exit code 7 and the last output", st.Err)
	}
	if !strings.Contains(st.Detail(), "exit code 7") || !strings.Contains(strings.Join(st.Notes, "\n"), ".env* matched no untracked file") {
		t.Fatalf("detail %q / notes %v do not say why / what matched nothing", st.Detail(), st.Notes)
	}
	if h.startedCount() != 0 {
		t.Fatal("the agent started although the setup failed")
	}
	if _, err := os.Stat(wt); err != nil {
		t.Fatalf("the workspace is gone after a failed setup: %v", err)
	}
	logged := h.log.String()
	for _, want := range []string{"checking", "need ok", wt, "matched no untracked file"} {
		if !strings.Contains(logged, want) {
			t.Errorf("the log lacks %q:\n%s", want, logged)
		}
	}

	testenv.WriteFile(t, filepath.Join(wt, "ok"), "")
	if err := h.Retry(wt); err != nil {
		t.Fatal(err)
	}
	h.waitPhase(t, wt, PhaseDone)
	testenv.WaitFor(t, "the agent to start", 5*time.Second, func() bool { return h.startedCount() == 1 })
	if err := h.Retry(wt); !errors.Is(err, ErrNotFailed) {
		t.Fatalf("Retry after success = %v, want ErrNotFailed", err)
	}
}

func TestStartAnywayStartsTheAgentOfAFailedSetup(t *testing.T) {
	main, wt, _ := newWorktree(t)
	h := newHarness(t, settings.ProjectSetup{Setup: "false"})
	h.Added(workspace.Workspace{Path: wt, ProjectPath: main}, true)
	h.waitPhase(t, wt, PhaseFailed)
	if err := h.StartAnyway(wt); err != nil {
		t.Fatal(err)
	}
	st, _ := h.State(wt)
	if st.Phase != PhaseDone || !st.Anyway || h.startedCount() != 1 {
		t.Fatalf("state %+v, started %d; want done anyway and one start", st, h.startedCount())
	}
	if err := h.StartAnyway(wt); !errors.Is(err, ErrNotFailed) {
		t.Fatalf("a second StartAnyway = %v, want ErrNotFailed", err)
	}
}

func TestOnlyCreatedWorkspacesOfAProjectWithASetupArePrepared(t *testing.T) {
	main, wt, _ := newWorktree(t)
	marker := filepath.Join(t.TempDir(), "ran")
	h := newHarness(t, settings.ProjectSetup{Setup: "touch " + marker})
	// Found at start-up or made outside CodeHydra: no setup runs.
	h.Added(workspace.Workspace{Path: wt, ProjectPath: main}, false)
	if _, ok := h.State(wt); ok || h.startedCount() != 1 {
		t.Fatalf("a found workspace was prepared or not started (started %d)", h.startedCount())
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatal("the setup ran for a workspace CodeHydra did not create")
	}
}

func TestAWorkspaceRemovedDuringSetupEndsItAndStartsNoAgent(t *testing.T) {
	main, wt, _ := newWorktree(t)
	h := newHarness(t, settings.ProjectSetup{Setup: "sleep 60"})
	h.Added(workspace.Workspace{Path: wt, ProjectPath: main}, true)
	h.waitPhase(t, wt, PhaseSetup)
	h.Removed(wt)
	done := make(chan struct{})
	go func() { h.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the setup of a removed workspace still runs")
	}
	if h.startedCount() != 0 {
		t.Fatal("the agent of a removed workspace started")
	}
}
