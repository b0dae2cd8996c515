package app

// The menu's items that act on a project or a folder: each project's
// submenu (New workspace here, Open folder, Remove project) and each
// workspace's Open folder, Open terminal and Open in editor; and the
// window that confirms removing a project.

import (
	"context"
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/widget"

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

// folderActions are the UI's FolderActions; they run on the Fyne thread.
func (u *ui) folderActions() FolderActions {
	opener := func(kind, title string) func(string) {
		return func(path string) { u.openIn(kind, title, path) }
	}
	return FolderActions{
		NewWorkspaceIn: func(projectPath string) { u.openCreate(projectPath) },
		RemoveProject:  func(p workspace.Project) { u.openRemoveProject(p) },
		OpenFolder:     opener(openFolder, "Open folder"),
		OpenTerminal:   opener(openTerminal, "Open terminal"),
		OpenEditor:     opener(openEditor, "Open in editor"),
	}
}

// openIn opens path as kind; what goes wrong is shown in a window titled
// after the item.
func (u *ui) openIn(kind, title, path string) {
	failed := func(err error) { u.do(func() { u.showError(title, err) }) }
	if err := u.open(kind, path, failed); err != nil {
		u.showError(title, err)
	}
}

// open opens path as kind with the user's settings. A program that cannot
// start is returned; one that fails soon after goes to failed, later.
func (u *ui) open(kind, path string, failed func(error)) error {
	l, err := newFinder(u.deps.Getenv).command(kind, path, u.deps.Settings.Get())
	if err != nil {
		return err
	}
	u.log.Info("open", "what", l.what, "argv0", l.argv[0], "dir", path)
	return l.run(failed)
}

// removeProjectDialog asks before a project is removed, and says what
// stays.
type removeProjectDialog struct {
	u       *ui
	win     fyne.Window
	project workspace.Project
	status  *widget.Label
	remove  *widget.Button
	cancel  *widget.Button
	// removed is set once RemoveProject succeeded.
	removed bool
}

// openRemoveProject opens the confirmation to remove p, or brings the open
// one forward (and returns nil).
func (u *ui) openRemoveProject(p workspace.Project) *removeProjectDialog {
	var d *removeProjectDialog
	u.window(windowSpec{Kind: windowRemoveProject, Project: p}, func() (fyne.Window, func()) {
		d = u.newRemoveProjectDialog(p)
		return d.win, nil
	})
	return d
}

func (u *ui) newRemoveProjectDialog(p workspace.Project) *removeProjectDialog {
	d := &removeProjectDialog{u: u, win: u.app.NewWindow("Remove project"), project: p}
	var folders []string
	if list, err := u.deps.Workspaces.Workspaces(p.Path); err == nil {
		for _, w := range list {
			folders = append(folders, w.Path)
		}
	}
	head := widget.NewLabelWithStyle(fmt.Sprintf("Remove the project %s from CodeHydra?", p.Name), fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	body := widget.NewLabel(RemoveProjectNote(p, folders))
	body.Wrapping = fyne.TextWrapWord
	d.status = statusLabel()
	d.remove = widget.NewButton("Remove project", d.submit)
	d.remove.Importance = widget.DangerImportance
	d.cancel = widget.NewButton("Cancel", d.win.Close)
	d.win.Canvas().SetOnTypedKey(func(k *fyne.KeyEvent) {
		switch k.Name {
		case fyne.KeyEscape:
			d.win.Close()
		case fyne.KeyReturn, fyne.KeyEnter:
			d.submit()
		}
	})
	d.win.SetContent(container.NewVBox(head, body, d.status,
		container.NewHBox(layout.NewSpacer(), d.cancel, d.remove)))
	d.win.Resize(fyne.NewSize(520, 0))
	return d
}

// maxListedFolders keeps the confirmation short for a project with many
// workspaces.
const maxListedFolders = 5

// RemoveProjectNote says what removing project p does: its agents stop,
// and nothing on disk changes, naming the worktree folders that stay.
func RemoveProjectNote(p workspace.Project, worktrees []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s leaves the menu", p.Path)
	switch n := len(worktrees); n {
	case 0:
		b.WriteString(".")
	case 1:
		b.WriteString(" with its workspace, whose agent stops.")
	default:
		fmt.Fprintf(&b, " with its %d workspaces, whose agents stop.", n)
	}
	b.WriteString(" Nothing is deleted: the repository, its branches")
	if len(worktrees) > 0 {
		b.WriteString(" and its worktrees stay on disk:")
		for i, f := range worktrees {
			if i == maxListedFolders {
				fmt.Fprintf(&b, "\n  … and %d more", len(worktrees)-i)
				break
			}
			b.WriteString("\n  " + f)
		}
		b.WriteString("\n")
	} else {
		b.WriteString(" and its files stay on disk. ")
	}
	b.WriteString("Add project… brings it back with its workspaces.")
	return b.String()
}

// submit removes the project through the manager (as project_remove does).
func (d *removeProjectDialog) submit() {
	if d.remove.Disabled() {
		return
	}
	d.remove.Disable()
	say(d.status, "Removing…", false)
	d.u.background(func(ctx context.Context) {
		err := d.u.deps.Workspaces.RemoveProject(ctx, d.project.Path)
		d.u.do(func() {
			if err != nil {
				d.remove.Enable()
				say(d.status, "The project was not removed: "+userMessage(err), true)
				return
			}
			d.removed = true
			d.win.Close()
		})
	})
}
