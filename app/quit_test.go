package app

import (
	"codehydra/app/internal/uitest"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"
)

func TestQuitAsksFirstWhenAgentsAreBusyAndCancelKeepsTheAppRunning(t *testing.T) {
	f := uitest.NewWorkspaces()
	a := f.AddWorkspace("proj", "featA")
	b := f.AddWorkspace("proj", "featB")
	idle := f.AddWorkspace("proj", "featC")
	agents := uitest.NewAgents()
	agents.Set(a.Path, uitest.AgentBusy)
	agents.Set(b.Path, uitest.AgentInput)
	agents.Set(idle.Path, uitest.AgentIdle)
	h := newHarness(t, Deps{Workspaces: f, Agents: agents})
	h.startTray()
	h.waitFor("the menu", func() bool { return h.view.menu() != nil && find(h.view.menu(), LabelQuit) != nil })

	find(h.view.menu(), LabelQuit).Action()
	q := h.app.AskedQuestion("Quit?")
	if q == nil {
		t.Fatal("Quit did not ask though featA and featB are working")
	}
	if want := "featA and featB are working. Quit anyway?"; !strings.HasPrefix(q.Message.Text, want) {
		t.Errorf("question = %q, want it to start with %q", q.Message.Text, want)
	}
	test.Tap(q.Cancel)
	if h.app.Quits() != 0 || h.windowOpen("CodeHydra: Quit?") {
		t.Fatalf("after Cancel: %d quits, question open %v", h.app.Quits(), h.windowOpen("CodeHydra: Quit?"))
	}
	find(h.view.menu(), LabelQuit).Action()
	test.Tap(h.app.AskedQuestion("Quit?").OK)
	if h.app.Quits() != 1 {
		t.Errorf("Quit anyway quit %d times", h.app.Quits())
	}
}

// Restart now's half of this is window's
// TestRestartNowActsAtOnceWhenNoAgentIsBusy.
func TestQuitActsAtOnceWhenNoAgentIsBusy(t *testing.T) {
	f, _, agents := uitest.OneWorkspace(uitest.AgentIdle)
	h := newHarness(t, Deps{Workspaces: f, Agents: agents})
	h.startTray()
	h.waitFor("the menu", func() bool { return h.view.menu() != nil && find(h.view.menu(), LabelQuit) != nil })
	find(h.view.menu(), LabelQuit).Action()
	h.drain()
	if h.app.Quits() != 1 || h.windowOpen("CodeHydra: Quit?") {
		t.Errorf("with idle agents: %d quits, question open %v; want 1 and no question", h.app.Quits(), h.windowOpen("CodeHydra: Quit?"))
	}
}
