package mcp

import (
	"context"
	"strings"
	"testing"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// TestStatusAndContextShowTheWorkspacesPortBlockOrWhyItHasNone pins the
// "ports" and "portsNote" of workspace_get_status and
// workspace_get_context (docs/DESIGN.md "Dev servers and ports").
func TestStatusAndContextShowTheWorkspacesPortBlockOrWhyItHasNone(t *testing.T) {
	isolateGit(t)
	project := testenv.GitRepo(t, "proj")
	mgr := workspace.NewManager(workspace.Options{Projects: []string{project}, WorktreeRoot: t.TempDir(),
		Ports: workspace.PortsOptions{First: 30000, Last: 30019, PerWorkspace: 10, InUse: func(int) bool { return false }}})
	if err := mgr.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, mgr, project)
	a := h.create("a")
	h.create("b")
	c := h.create("c") // the range holds two blocks

	type out struct {
		Ports     *workspace.PortBlock `json:"ports"`
		PortsNote string               `json:"portsNote"`
	}
	for _, tool := range []string{ToolGetStatus, ToolGetContext} {
		var got out
		okJSON(t, call(t, h.session(a.Path), tool, nil), &got)
		if got.Ports == nil || *got.Ports != (workspace.PortBlock{First: 30000, Count: 10}) || got.PortsNote != "" {
			t.Errorf("%s of a: ports %v, note %q; want the block from 30000", tool, got.Ports, got.PortsNote)
		}
		got = out{}
		okJSON(t, call(t, h.session(c.Path), tool, nil), &got)
		if got.Ports != nil || !strings.Contains(got.PortsNote, "no block of 10 ports is free in 30000-30019") {
			t.Errorf("%s of c: ports %v, note %q; want none and why", tool, got.Ports, got.PortsNote)
		}
	}
}
