package app

import (
	"slices"
	"testing"

	"fyne.io/fyne/v2"

	"codehydra/app/internal/uitest"
	"codehydra/workspace"
)

func TestAnUnconfinedAgentIsMarkedAndItsSubmenuSaysWhy(t *testing.T) {
	confined := uitest.AgentIdle
	confined.Sandbox = workspace.AgentSandbox{Enforced: true, ABI: 7}
	open := uitest.AgentBusy
	open.Sandbox = workspace.AgentSandbox{Reason: "not confined: this kernel has no Landlock"}
	gone := uitest.AgentFailed
	gone.Sandbox = open.Sandbox // an agent that does not run confines nothing either way
	s := oneProject(wsState("safe", confined), wsState("open", open), wsState("gone", gone))
	m := BuildMenu(s, Actions{})

	got := labels(m)
	for _, want := range []string{"○ safe (idle)", "● open (busy, unconfined)", "✕ gone (failed)"} {
		if !slices.Contains(got, want) {
			t.Errorf("menu %q lacks %q", got, want)
		}
	}
	if want := "CodeHydra: 3 workspaces, 1 busy, 1 failed, 1 unconfined"; Summary(s) != want {
		t.Errorf("Summary = %q, want %q", Summary(s), want)
	}
	sub := func(name string) *fyne.Menu {
		for _, it := range m.Items {
			if it.ChildMenu != nil && it.ChildMenu.Label == name {
				return it.ChildMenu
			}
		}
		t.Fatalf("no submenu %s", name)
		return nil
	}
	if first := sub("open").Items[0]; first.Label != "⚠ not confined: this kernel has no Landlock" || !first.Disabled {
		t.Errorf("first line of open's submenu = %q (disabled %v)", first.Label, first.Disabled)
	}
	if first := sub("safe").Items[0]; first.Label != LabelOpenAgent {
		t.Errorf("first line of safe's submenu = %q, want %q", first.Label, LabelOpenAgent)
	}
}
