package app

import (
	"slices"
	"strings"
	"testing"

	"codehydra/app/internal/uitest"
	"codehydra/workspace"
)

func TestWorkspaceSubmenuShowsItsPortsAsADisabledLineAfterWhyItsAgentFailed(t *testing.T) {
	a, b := wsState("a", uitest.AgentFailed), wsState("b", workspace.NoAgent)
	a.Ports = workspace.PortBlock{First: 20010, Count: 10}
	m := BuildMenu(oneProject(a, b), allActions(nil))
	subA, subB := find(m, WorkspaceLabel(a)), find(m, WorkspaceLabel(b))
	if subA == nil || subB == nil {
		t.Fatalf("no submenus for a and b in %q", labels(m))
	}
	got := labels(subA.ChildMenu)
	if i := slices.Index(got, "Ports 20010–20019 (off)"); i < 1 || !strings.HasPrefix(got[0], "⚠ ") {
		t.Errorf("a's submenu %q lacks the disabled line \"Ports 20010–20019\" after the agent's trouble", got)
	}
	if got := labels(subB.ChildMenu); slices.ContainsFunc(got, func(l string) bool { return strings.HasPrefix(l, "Port") }) {
		t.Errorf("b, which has no block, shows ports: %q", got)
	}
	if got := PortsLabel(workspace.PortBlock{First: 20010, Count: 1}); got != "Port 20010" {
		t.Errorf("a block of one is %q", got)
	}
}
