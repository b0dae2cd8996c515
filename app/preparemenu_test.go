package app

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"codehydra/app/internal/uitest"
	"codehydra/internal/settings"
	"codehydra/internal/testenv"
	"codehydra/prepare"
	"codehydra/workspace"
)

// failedSetupTray is a tray over a real repository whose project's setup
// fails, with a real Preparer whose agent starts are recorded.
type failedSetupTray struct {
	h       *harness
	store   *settings.Store
	prep    *prepare.Preparer
	ws      workspace.Workspace
	mu      sync.Mutex
	started []string
}

func newFailedSetupTray(t *testing.T) *failedSetupTray {
	t.Helper()
	repo := testenv.GitRepo(t, "repo")
	m := uitest.RealManager(t, repo)
	f := &failedSetupTray{store: settings.NewStore(filepath.Join(t.TempDir(), "settings.json"))}
	if err := f.store.Update(func(s *settings.Settings) {
		s.ProjectSetup = map[string]settings.ProjectSetup{repo: {Setup: `sh -c "echo npm ERR! missing script; exit 3"`}}
	}); err != nil {
		t.Fatal(err)
	}
	f.prep = prepare.New(prepare.Options{
		Setup: func(p string) (settings.ProjectSetup, bool) { return f.store.Get().SetupFor(p) },
		Start: func(ws workspace.Workspace) {
			f.mu.Lock()
			f.started = append(f.started, ws.Path)
			f.mu.Unlock()
		},
		OnChange: func(path string) {
			m.Publish(workspace.Event{Kind: workspace.EventAgentChanged, Workspace: workspace.Workspace{Path: path}})
		},
	})
	t.Cleanup(f.prep.Close)
	f.h = newHarness(t, Deps{Workspaces: m, Settings: f.store, Prepare: f.prep})
	f.h.startTray()
	ws, err := m.Create(context.Background(), workspace.CreateOptions{ProjectPath: repo, Name: "feat"})
	if err != nil {
		t.Fatal(err)
	}
	f.ws = ws
	f.prep.Added(ws, true)
	return f
}

func (f *failedSetupTray) startedAgents() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.started)
}

// submenu is the labels of the workspace's submenu, "" when it has none.
func (f *failedSetupTray) submenu() string {
	m := f.h.view.menu()
	if m == nil {
		return ""
	}
	for _, it := range m.Items {
		if it.ChildMenu != nil && it.ChildMenu.Label == f.ws.Name {
			return strings.Join(labels(it.ChildMenu), "|")
		}
	}
	return ""
}

func TestTrayOffersRetrySetupAndStartAnywayForAFailedSetup(t *testing.T) {
	f := newFailedSetupTray(t)
	head := `⚠ setup "sh -c 'echo npm ERR! missing script; exit 3'" failed with exit code 3 (off)|` +
		`    last output: npm ERR! missing script (off)|` + LabelRetrySetup + "|" + LabelStartAnyway + "|---|"
	f.h.waitFor("the failed setup's items", func() bool { return strings.HasPrefix(f.submenu(), head) })
	if got := f.submenu(); strings.Count(got, "⚠") != 1 {
		t.Errorf("submenu %q: want the reason once, not the agent's long trouble line too", got)
	}
	if got := f.startedAgents(); len(got) != 0 {
		t.Fatalf("agents started %v before the user chose", got)
	}

	// A retry runs the project's current setup: fixed, it starts the agent.
	if err := f.store.Update(func(s *settings.Settings) {
		s.ProjectSetup[f.ws.ProjectPath] = settings.ProjectSetup{Setup: "true"}
	}); err != nil {
		t.Fatal(err)
	}
	find(f.h.view.menu(), WorkspaceLabel(WorkspaceState{Workspace: f.ws, Agent: workspace.NoAgent}), LabelRetrySetup).Action()
	f.h.waitFor("the agent to start after the retry", func() bool { return slices.Equal(f.startedAgents(), []string{f.ws.Path}) })
	f.h.waitFor("the items to go", func() bool { return !strings.Contains(f.submenu(), LabelRetrySetup) })
}

func TestTraysStartAgentAnywayStartsTheAgentOfAFailedSetup(t *testing.T) {
	f := newFailedSetupTray(t)
	f.h.waitFor("Start agent anyway", func() bool { return strings.Contains(f.submenu(), LabelStartAnyway) })
	find(f.h.view.menu(), WorkspaceLabel(WorkspaceState{Workspace: f.ws, Agent: workspace.NoAgent}), LabelStartAnyway).Action()
	f.h.waitFor("the agent to start", func() bool { return slices.Equal(f.startedAgents(), []string{f.ws.Path}) })
	f.h.waitFor("the items to go", func() bool {
		s := f.submenu()
		return s != "" && !strings.Contains(s, LabelStartAnyway) && !strings.Contains(s, "⚠")
	})
	if st, _ := f.prep.State(f.ws.Path); st.Phase != prepare.PhaseDone || !st.Anyway {
		t.Errorf("preparation %+v, want done anyway", st)
	}
}

func TestSetupItemsAppearOnlyForAFailedSetupAndNotWhileDeleting(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    WorkspaceState
		want bool
	}{
		{"a failed agent", wsState("a", uitest.AgentFailed), false},
		{"a failed setup", func() WorkspaceState { w := wsState("a", uitest.AgentFailed); w.SetupFailed = "setup failed"; return w }(), true},
		{"a failed setup being deleted", func() WorkspaceState {
			w := wsState("a", uitest.AgentFailed)
			w.SetupFailed, w.Deleting = "setup failed", true
			return w
		}(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls []string
			a := allActions(&calls)
			a.RetrySetup = func(path string) { calls = append(calls, "retry "+path) }
			a.StartAnyway = func(path string) { calls = append(calls, "anyway "+path) }
			m := BuildMenu(oneProject(tc.w), a)
			label := WorkspaceLabel(tc.w)
			if got := find(m, label, LabelRetrySetup) != nil; got != tc.want {
				t.Fatalf("Retry setup shown = %v, want %v: %q", got, tc.want, labels(find(m, label).ChildMenu))
			}
			if !tc.want {
				return
			}
			find(m, label, LabelRetrySetup).Action()
			find(m, label, LabelStartAnyway).Action()
			if want := []string{"retry /wt/a", "anyway /wt/a"}; !slices.Equal(calls, want) {
				t.Errorf("calls %v, want %v", calls, want)
			}
		})
	}
}
