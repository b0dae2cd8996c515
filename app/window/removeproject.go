package window

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

// The window that confirms removing a project, and says what stays.

// removeProjectDialog asks before a project is removed, and says what
// stays.
type removeProjectDialog struct {
	u       *UI
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
func (u *UI) openRemoveProject(p workspace.Project) *removeProjectDialog {
	var d *removeProjectDialog
	u.window(Spec{Kind: KindRemoveProject, Project: p}, func() (fyne.Window, func()) {
		d = u.newRemoveProjectDialog(p)
		return d.win, nil
	})
	return d
}

func (u *UI) newRemoveProjectDialog(p workspace.Project) *removeProjectDialog {
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
				say(d.status, "The project was not removed: "+UserMessage(err), true)
				return
			}
			d.removed = true
			d.win.Close()
		})
	})
}
