package app

// The menu's items that act on a project or a folder: each project's
// submenu (New workspace here, Open folder, Remove project) and each
// workspace's Open folder, Open terminal and Open in editor.

import (
	"fyne.io/fyne/v2"

	"codehydra/app/window"
	"codehydra/workspace"
)

// The labels of the project and folder items (stable, as the others: tests
// drive the tray by them).
const (
	LabelNewWorkspaceHere = "New workspace here…"
	LabelOpenFolder       = "Open folder"
	LabelRemoveProject    = "Remove project…"
	LabelOpenTerminal     = "Open terminal"
	LabelOpenEditor       = "Open in editor"
)

// FolderActions are the actions on projects and folders; a nil one leaves
// its items disabled.
type FolderActions struct {
	NewWorkspaceIn func(projectPath string)
	RemoveProject  func(p workspace.Project)
	OpenFolder     func(path string)
	OpenTerminal   func(path string)
	OpenEditor     func(path string)
}

// projectItem is a project's heading; it opens the project's actions.
func projectItem(p ProjectState, a Actions) *fyne.MenuItem {
	pp := p.Project
	bind := func(fn func(string)) func() {
		if fn == nil {
			return nil
		}
		return func() { fn(pp.Path) }
	}
	var remove func()
	if a.RemoveProject != nil {
		remove = func() { a.RemoveProject(pp) }
	}
	it := fyne.NewMenuItem(ProjectLabel(p), nil)
	it.ChildMenu = fyne.NewMenu(pp.Name,
		// A project whose worktrees cannot be listed cannot take a new one.
		actionItem(LabelNewWorkspaceHere, when(p.Err == "", bind(a.NewWorkspaceIn))),
		actionItem(LabelOpenFolder, bind(a.OpenFolder)),
		fyne.NewMenuItemSeparator(),
		actionItem(LabelRemoveProject, remove),
	)
	return it
}

// folderItems are a workspace's Open folder, Open terminal and Open in
// editor; off while it is being deleted, as its folder is going away.
func folderItems(w WorkspaceState, a Actions) []*fyne.MenuItem {
	bind := func(fn func(string)) func() {
		if fn == nil || w.Deleting {
			return nil
		}
		return func() { fn(w.Workspace.Path) }
	}
	return []*fyne.MenuItem{
		actionItem(LabelOpenFolder, bind(a.OpenFolder)),
		actionItem(LabelOpenTerminal, bind(a.OpenTerminal)),
		actionItem(LabelOpenEditor, bind(a.OpenEditor)),
	}
}

// folderActions are the tray's FolderActions; they run on the Fyne
// thread.
func (t *Tray) folderActions() FolderActions {
	opener := func(prog window.Program, title string) func(string) {
		return func(path string) { t.win.OpenIn(prog, title, path) }
	}
	return FolderActions{
		NewWorkspaceIn: func(projectPath string) { t.win.Open(window.Spec{Kind: window.KindCreate, Path: projectPath}) },
		RemoveProject:  func(p workspace.Project) { t.win.Open(window.Spec{Kind: window.KindRemoveProject, Project: p}) },
		OpenFolder:     opener(window.FileManager, LabelOpenFolder),
		OpenTerminal:   opener(window.Terminal, LabelOpenTerminal),
		OpenEditor:     opener(window.Editor, LabelOpenEditor),
	}
}
