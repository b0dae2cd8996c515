package app

import (
	"fmt"

	"fyne.io/fyne/v2"

	"codehydra/mcp"
	"codehydra/workspace"
)

// The labels of the "Copy MCP config" submenus. A workspace's copies a
// config that acts on that workspace only; the top-level one is for the
// user's own clients and acts as the user, so its label says so.
const (
	LabelCopyWorkspaceMCPConfig = "Copy MCP config"
	LabelCopyMCPConfig          = "Copy MCP config for your own clients"
	// LabelUserConfigScope heads the top-level submenu: what such a
	// client may do.
	LabelUserConfigScope = "Acts as you: every tool, on all projects"
	// LabelWorkspaceConfigScope heads a workspace's submenu.
	LabelWorkspaceConfigScope = "Acts on this workspace only"
)

// copyConfigItem is a "Copy MCP config" submenu: a line saying what a
// client set up with it may do, then one item per client that calls copy
// with the client's name; nil copy disables it.
func copyConfigItem(label, scope string, copy func(client string)) *fyne.MenuItem {
	items := []*fyne.MenuItem{disabled(scope), fyne.NewMenuItemSeparator()}
	for _, c := range mcp.Clients() {
		var fn func()
		if copy != nil {
			fn = func() { copy(c) }
		}
		items = append(items, actionItem(mcp.ClientTitle(c), fn))
	}
	it := fyne.NewMenuItem(label, nil)
	it.ChildMenu = fyne.NewMenu(label, items...)
	it.Disabled = copy == nil
	return it
}

// userConfigItem is the top-level "Copy MCP config for your own clients".
func userConfigItem(s State, a Actions) *fyne.MenuItem {
	var copy func(string)
	if s.CanCopyMCPConfig && a.CopyMCPConfig != nil {
		copy = a.CopyMCPConfig
	}
	return copyConfigItem(LabelCopyMCPConfig, LabelUserConfigScope, copy)
}

// workspaceConfigItem is a workspace's "Copy MCP config" submenu.
func workspaceConfigItem(s State, w WorkspaceState, a Actions) *fyne.MenuItem {
	var copy func(string)
	if s.CanCopyMCPConfig && a.CopyWorkspaceMCPConfig != nil && !w.Deleting {
		ws := w.Workspace
		copy = func(client string) { a.CopyWorkspaceMCPConfig(client, ws) }
	}
	return copyConfigItem(LabelCopyWorkspaceMCPConfig, LabelWorkspaceConfigScope, copy)
}

// CopiedConfigNotice confirms a copied config: for the workspace named
// wsName, or the user's own clients when wsName is "".
func CopiedConfigNotice(client, wsName string) Notice {
	who := "your own clients (all projects)"
	if wsName != "" {
		who = wsName
	}
	return Notice{
		Title:   "MCP config copied",
		Content: fmt.Sprintf("Copied the %s config for %s. Paste it into %s's MCP settings.", mcp.ClientTitle(client), who, mcp.ClientTitle(client)),
	}
}

// copyConfigActions are the tray's copy actions: copy the config for the
// user or a workspace, and confirm it with a notification. They run on
// the Fyne thread.
func (t *Tray) copyConfigActions(a *Actions) {
	config := t.deps.MCPConfig
	if config == nil {
		return
	}
	copyConfig := func(client, wsPath, wsName string) {
		text, err := config(client, wsPath)
		if err != nil {
			t.win.ShowError("Copy MCP config", err)
			return
		}
		t.copyText(text)
		// A confirmation of what the user just did, so it is shown even
		// with agent notifications turned off.
		n := CopiedConfigNotice(client, wsName)
		t.app.SendNotification(fyne.NewNotification(n.Title, n.Content))
	}
	a.CopyMCPConfig = func(client string) { copyConfig(client, "", "") }
	a.CopyWorkspaceMCPConfig = func(client string, ws workspace.Workspace) { copyConfig(client, ws.Path, ws.Name) }
}
