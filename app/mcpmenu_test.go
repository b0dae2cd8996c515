package app

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"fyne.io/fyne/v2"

	"codehydra/app/internal/uitest"
	"codehydra/internal/settings"
	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// servers describes the "MCP servers" submenu of the workspace labelled
// wsLabel: each item's name, "✓" when checked and "(off)" when it cannot
// be clicked; nil when there is no such submenu.
func servers(m *fyne.Menu, wsLabel string) []string {
	it := find(m, wsLabel, LabelMCPServers)
	if it == nil {
		return nil
	}
	var out []string
	for _, s := range it.ChildMenu.Items {
		d := s.Label
		if s.Checked {
			d += " ✓"
		}
		if s.Disabled {
			d += " (off)"
		}
		out = append(out, d)
	}
	return out
}

// A workspace's submenu lists the servers its project offers, checked
// when on for it; a click switches the server for that workspace in its
// metadata (the real manager's, in a real repository), and the item flips.
// A change of the settings saved through what the windows get reaches the
// menu at once; without servers there is no submenu.
func TestWorkspaceSubmenuSwitchesEachMCPServerForThatWorkspace(t *testing.T) {
	repo := testenv.GitRepo(t, "repo")
	m := uitest.RealManager(t, repo)
	ctx := context.Background()
	feat, err := m.Create(ctx, workspace.CreateOptions{ProjectPath: repo, Name: "feat"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := m.Create(ctx, workspace.CreateOptions{ProjectPath: repo, Name: "other"})
	if err != nil {
		t.Fatal(err)
	}
	off := false
	store := settings.NewStore(filepath.Join(t.TempDir(), "settings.json"))
	if err := store.Update(func(s *settings.Settings) {
		s.MCPServers = map[string]settings.MCPServer{
			"beta":  {Command: "/bin/true"},
			"alpha": {Command: "/bin/true"},
			// Configured but switched off for everyone: not offered.
			"gamma": {Command: "/bin/true", Enabled: &off},
			// Not among those the project offers.
			"delta": {Command: "/bin/true"},
		}
		s.ProjectSetup = map[string]settings.ProjectSetup{repo: {MCPServers: []string{"alpha", "beta", "gamma"}}}
	}); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Deps{Workspaces: m, Settings: store})
	h.startTray()
	featLabel, otherLabel := "– feat (no agent)", "– other (no agent)"
	menu := func() []string { return servers(h.view.menu(), featLabel) }
	if got, want := menu(), []string{"alpha ✓", "beta ✓"}; !slices.Equal(got, want) {
		t.Fatalf("the submenu lists %q, want %q", got, want)
	}

	click := func(name string) {
		t.Helper()
		it := find(h.view.menu(), featLabel, LabelMCPServers, name)
		if it == nil || it.Action == nil {
			t.Fatalf("no clickable %s in the MCP servers of feat: %q", name, menu())
		}
		it.Action()
	}
	click("beta")
	h.waitFor("beta to show as off", func() bool { return slices.Equal(menu(), []string{"alpha ✓", "beta"}) })
	if got, err := m.MCPServersOff(ctx, feat.Path); err != nil || !slices.Equal(got, []string{"beta"}) {
		t.Errorf("feat's servers off: %q, %v; want beta", got, err)
	}
	if got := servers(h.view.menu(), otherLabel); !slices.Equal(got, []string{"alpha ✓", "beta ✓"}) {
		t.Errorf("switching feat's beta changed other's: %q", got)
	}
	if got, _ := m.MCPServersOff(ctx, other.Path); len(got) != 0 {
		t.Errorf("other's servers off: %q, want none", got)
	}

	click("beta")
	h.waitFor("beta to show as on again", func() bool { return slices.Equal(menu(), []string{"alpha ✓", "beta ✓"}) })
	if got, err := m.MCPServersOff(ctx, feat.Path); err != nil || len(got) != 0 {
		t.Errorf("feat's servers off after switching beta on: %q, %v; want none", got, err)
	}

	// The Settings window saves through the windows' store, in whichever
	// process it runs.
	saved := h.tray.deps.windows(h.tray, h.tray.log).Settings
	if err := saved.Update(func(s *settings.Settings) {
		s.ProjectSetup = map[string]settings.ProjectSetup{repo: {MCPServers: []string{"alpha", "delta"}}}
	}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the project's new servers", func() bool { return slices.Equal(menu(), []string{"alpha ✓", "delta ✓"}) })
	if err := saved.Update(func(s *settings.Settings) { s.MCPServers = nil }); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the submenu to go with the last server", func() bool {
		return find(h.view.menu(), featLabel) != nil && menu() == nil
	})
}

// A workspace being deleted shows its servers' state but cannot switch
// them; one on a detached HEAD switches them like any other (the
// switch-off is its worktree's, not its branch's); one whose project
// offers none has no submenu.
func TestMCPServersSubmenuState(t *testing.T) {
	var switched []string
	a := Actions{SwitchMCPServer: func(ws workspace.Workspace, server string, on bool) {
		switched = append(switched, fmt.Sprintf("%s %s %v", ws.Name, server, on))
	}}
	ws := workspace.Workspace{Name: "w", Branch: "w", Path: "/wt/w"}
	detached := ws
	detached.Branch = ""
	for _, tc := range []struct {
		name string
		w    WorkspaceState
		want []string
	}{
		{"on and off", WorkspaceState{Workspace: ws, MCPServers: []string{"a", "b"}, MCPOff: []string{"b", "gone"}}, []string{"a ✓", "b"}},
		{"deleting", WorkspaceState{Workspace: ws, Deleting: true, MCPServers: []string{"a", "b"}, MCPOff: []string{"a"}}, []string{"a (off)", "b ✓ (off)"}},
		{"detached HEAD", WorkspaceState{Workspace: detached, MCPServers: []string{"a"}}, []string{"a ✓"}},
		{"no servers", WorkspaceState{Workspace: ws, MCPOff: []string{"a"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := BuildMenu(State{Projects: []ProjectState{{Project: workspace.Project{Name: "p", Path: "/src/p"}, Workspaces: []WorkspaceState{tc.w}}}}, a)
			if got := servers(m, WorkspaceLabel(tc.w)); !slices.Equal(got, tc.want) {
				t.Errorf("the submenu lists %q, want %q", got, tc.want)
			}
		})
	}
	m := BuildMenu(State{Projects: []ProjectState{{Project: workspace.Project{Name: "p"}, Workspaces: []WorkspaceState{
		{Workspace: ws, MCPServers: []string{"a", "b"}, MCPOff: []string{"b"}},
	}}}}, a)
	find(m, "– w (no agent)", LabelMCPServers, "a").Action()
	find(m, "– w (no agent)", LabelMCPServers, "b").Action()
	if want := []string{"w a false", "w b true"}; !slices.Equal(switched, want) {
		t.Errorf("clicks switched %q, want %q", switched, want)
	}
}
