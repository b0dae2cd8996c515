package app

import (
	"context"
	"slices"
	"strings"

	"fyne.io/fyne/v2"

	"codehydra/app/window"
	"codehydra/internal/settings"
	"codehydra/workspace"
)

// LabelMCPServers is a workspace's submenu of the user's MCP servers, one
// check item per server its project offers, checked when the workspace's
// agents see it. The daemon's refusal of a switched-off server's tool
// names it, so that the user finds it.
const LabelMCPServers = "MCP servers"

// titleMCPServers is the title of the error a failed switch shows.
const titleMCPServers = "MCP servers"

// MCPServerOn reports whether the workspace's agents see the MCP server
// named server: its project offers it and the user did not switch it off
// for the workspace.
func (w WorkspaceState) MCPServerOn(server string) bool {
	return slices.Contains(w.MCPServers, server) && !slices.Contains(w.MCPOff, server)
}

// mcpServersItem is the workspace's "MCP servers" submenu; nil when its
// project offers no server. A click switches the server for this
// workspace only, whatever its worktree has checked out. A workspace being
// deleted shows its servers without switching them.
func mcpServersItem(w WorkspaceState, a Actions) *fyne.MenuItem {
	if len(w.MCPServers) == 0 {
		return nil
	}
	ws := w.Workspace
	can := a.SwitchMCPServer != nil && !w.Deleting
	var items []*fyne.MenuItem
	for _, name := range w.MCPServers {
		on := w.MCPServerOn(name)
		it := actionItem(name, when(can, func() { a.SwitchMCPServer(ws, name, !on) }))
		it.Checked = on
		items = append(items, it)
	}
	it := fyne.NewMenuItem(LabelMCPServers, nil)
	it.ChildMenu = fyne.NewMenu(LabelMCPServers, items...)
	return it
}

// switchMCPServer is the tray's SwitchMCPServer: the manager records the
// switch for the workspace's worktree, and its metadata-changed event both
// flips the item and makes the daemon tell the gateway.
func (t *Tray) switchMCPServer(ws workspace.Workspace, server string, on bool) {
	t.background(func(ctx context.Context) {
		if err := t.deps.Workspaces.SetMCPServerOff(ctx, ws.Path, server, !on); err != nil {
			t.do(func() { t.win.ShowError(titleMCPServers, err) })
		}
	})
}

// mcpServers are the user's MCP servers that the project at projectPath
// offers its workspaces: those configured and enabled, less those its
// projectSetup leaves out; sorted.
func (t *Tray) mcpServers(projectPath string) []string {
	set := t.deps.Settings.Get()
	proj := set.ProjectOf(projectPath)
	var names []string
	for name, srv := range set.MCPServers {
		if srv.On() && proj.Offers(name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// mcpOff are the servers switched off for a workspace, as its metadata
// reports them (workspace.MetadataMCPOff).
func mcpOff(md map[string]string) []string {
	var names []string
	for n := range strings.SplitSeq(md[workspace.MetadataMCPOff], ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	return names
}

// refreshMCPServers re-reads which servers each workspace's project
// offers, after a change of the settings, and shows it.
func (t *Tray) refreshMCPServers() {
	t.mu.Lock()
	for _, p := range t.state.Projects {
		for _, w := range p.Workspaces {
			servers := t.mcpServers(w.Workspace.ProjectPath)
			if !slices.Equal(servers, w.MCPServers) {
				t.update(w.Workspace.Path, func(w *WorkspaceState) { w.MCPServers = servers })
			}
		}
	}
	t.mu.Unlock()
	t.publish()
}

// settingsStore is the settings as the tray hands them on: a change
// saved through it (the Settings window's, in whichever process) reaches
// the menu at once, since the servers a workspace's submenu lists come
// from them.
type settingsStore struct {
	window.SettingsStore
	saved func()
}

// Update saves like the store's Update, then tells the tray.
func (s settingsStore) Update(fn func(*settings.Settings)) error {
	if err := s.SettingsStore.Update(fn); err != nil {
		return err
	}
	s.saved()
	return nil
}
