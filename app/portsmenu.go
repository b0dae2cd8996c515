package app

import (
	"fmt"

	"fyne.io/fyne/v2"

	"codehydra/workspace"
)

// PortsLabel is the submenu's line for a workspace's port block, e.g.
// "Ports 20010–20019"; "" when it has none.
func PortsLabel(b workspace.PortBlock) string {
	switch {
	case b.Count < 1:
		return ""
	case b.Count == 1:
		return fmt.Sprintf("Port %d", b.First)
	}
	return fmt.Sprintf("Ports %d–%d", b.First, b.First+b.Count-1)
}

// portsItems says which ports the workspace's dev servers have.
func portsItems(w WorkspaceState) []*fyne.MenuItem {
	label := PortsLabel(w.Ports)
	if label == "" {
		return nil
	}
	return []*fyne.MenuItem{disabled(label), fyne.NewMenuItemSeparator()}
}
