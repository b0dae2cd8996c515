package app

import (
	"context"
	"slices"
	"strings"
	"testing"

	"codehydra/app/internal/uitest"
	"codehydra/workspace"
)

func TestAHibernatedWorkspaceShowsItsMarkOffersWakeAndIsCounted(t *testing.T) {
	var calls []string
	a := allActions(&calls)
	a.Hibernate = func(path string) { calls = append(calls, "hibernate "+path) }
	a.Wake = func(path string) { calls = append(calls, "wake "+path) }
	s := oneProject(wsState("h", uitest.AgentHibernated), wsState("a", uitest.AgentIdle), wsState("n", workspace.NoAgent))
	m := BuildMenu(s, a)

	it := find(m, "☾ h (hibernated)")
	if it == nil {
		t.Fatalf("no hibernated item in\n%s", strings.Join(labels(m), "\n"))
	}
	var enabled []string
	for _, sub := range it.ChildMenu.Items {
		if !sub.IsSeparator && !sub.Disabled {
			enabled = append(enabled, sub.Label)
		}
	}
	// Open agent and Copy attach command wake it, so they stay on.
	want := []string{LabelOpenAgent, LabelCopyPath, LabelCopyAttach, LabelCopyWorkspaceMCPConfig, LabelWake, LabelRestartAgent, LabelDelete}
	if !slices.Equal(enabled, want) {
		t.Errorf("enabled items = %q, want %q", enabled, want)
	}
	if find(m, "☾ h (hibernated)", LabelHibernate) != nil {
		t.Error("a hibernated workspace offers Hibernate")
	}
	if it := find(m, "– n (no agent)", LabelHibernate); it == nil || !it.Disabled {
		t.Error("a workspace without agent offers Hibernate")
	}
	find(m, "☾ h (hibernated)", LabelWake).Action()
	find(m, "○ a (idle)", LabelHibernate).Action()
	if want := []string{"wake /wt/h", "hibernate /wt/a"}; !slices.Equal(calls, want) {
		t.Errorf("calls = %q, want %q", calls, want)
	}
	if got, want := Summary(s), "CodeHydra: 3 workspaces, 1 hibernated, 1 without agent"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
	if got := Overall(s); got != TrayIdle {
		t.Errorf("Overall = %q, want idle", got)
	}
}

func TestHibernateAndWakeFromTheTrayActOnTheAgent(t *testing.T) {
	f, ws, agents := uitest.OneWorkspace(uitest.AgentIdle)
	h := newHarness(t, Deps{Workspaces: f, Agents: agents, Hibernation: agents})
	h.startTray()
	h.waitFor("the menu", func() bool { return h.view.menu() != nil })
	find(h.view.menu(), "○ feat (idle)", LabelHibernate).Action()
	h.waitFor("the agent hibernated", func() bool { return agents.Hibernated(ws.Path) })
	h.tray.mu.Lock()
	h.tray.reload(context.Background())
	h.tray.mu.Unlock()
	h.tray.publish()
	h.drain()
	find(h.view.menu(), "☾ feat (hibernated)", LabelWake).Action()
	h.waitFor("the agent woken", func() bool { return !agents.Hibernated(ws.Path) })
}

func TestCopyAttachCommandWakesAHibernatedAgentFirst(t *testing.T) {
	f, ws, agents := uitest.OneWorkspace(uitest.AgentIdle)
	h := newHarness(t, Deps{Workspaces: f, Agents: agents, Hibernation: agents})
	h.startTray()
	h.waitFor("the menu", func() bool { return h.view.menu() != nil })
	if err := agents.Hibernate(context.Background(), ws.Path); err != nil {
		t.Fatal(err)
	}
	find(h.view.menu(), "○ feat (idle)", LabelCopyAttach).Action()
	h.waitFor("the attach command copied", func() bool {
		h.drain()
		return strings.Contains(h.app.Clipboard().Content(), "OPENCODE_SERVER_PASSWORD=pw-4101 opencode attach http://127.0.0.1:4101")
	})
	if w := agents.Woken(); !slices.Equal(w, []string{ws.Path}) {
		t.Errorf("woken %q", w)
	}
}
