package window

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/widget"

	"codehydra/workspace"
)

// projectDialog is the "Add project" window: a path, typed or chosen in a
// folder dialog, checked by the manager when added.
type projectDialog struct {
	u   *UI
	win fyne.Window

	path   *field
	browse *widget.Button
	status *widget.Label
	add    *widget.Button
	cancel *widget.Button

	busy bool
	// folders is the open folder dialog, nil when none is.
	folders *dialog.FileDialog
	// added is the project, once AddProject succeeded.
	added *workspace.Project
}

// openAddProject opens the "Add project" window, or brings the open one
// forward (and returns nil).
func (u *UI) openAddProject() *projectDialog {
	var d *projectDialog
	u.window(Spec{Kind: KindAddProject}, func() (fyne.Window, func()) {
		d = u.newProjectDialog()
		return d.win, nil
	})
	return d
}

func (u *UI) newProjectDialog() *projectDialog {
	d := &projectDialog{u: u, win: u.app.NewWindow("Add project")}
	d.path = newField(checkFolder)
	d.path.SetPlaceHolder("/path/to/a/git/repository")
	d.path.onEdit = func(string) {
		say(d.status, "", false)
		d.refresh()
	}
	d.path.OnSubmitted = func(string) { d.submit() }
	d.browse = widget.NewButton("Choose…", d.chooseFolder)
	d.status = statusLabel()
	d.add = widget.NewButton("Add", d.submit)
	d.add.Importance = widget.HighImportance
	d.cancel = widget.NewButton("Cancel", d.win.Close)

	help := widget.NewLabel("A project is a git repository; its worktrees become workspaces.")
	help.Wrapping = fyne.TextWrapWord
	d.win.SetContent(container.NewVBox(
		help,
		container.NewBorder(nil, nil, widget.NewLabel("Folder"), d.browse, d.path.withReason()),
		d.status,
		container.NewHBox(layout.NewSpacer(), d.cancel, d.add),
	))
	d.win.Resize(fyne.NewSize(520, 0))
	answerEscape(d.win, d.escape, d.path.entry)
	d.refresh()
	return d
}

func (d *projectDialog) refresh() {
	setEnabled(d.add, strings.TrimSpace(d.path.Text) != "" && !d.busy)
	setEnabled(d.browse, !d.busy)
	setEnabled(d.path, !d.busy)
}

// chooseFolder shows a folder dialog; the folder chosen fills the entry.
func (d *projectDialog) chooseFolder() {
	// Fyne's folder dialog lives inside its window, which must be big
	// enough to use it.
	size := d.win.Canvas().Size()
	d.win.Resize(fyne.NewSize(max(size.Width, 760), max(size.Height, 560)))
	fd := dialog.NewFolderOpen(func(dir fyne.ListableURI, err error) {
		d.folders = nil
		d.win.Resize(size)
		switch {
		case err != nil:
			say(d.status, "Cannot open the folder: "+err.Error(), true)
		case dir != nil:
			d.path.SetText(dir.Path())
		}
	}, d.win)
	if start := d.startDir(); start != "" {
		if uri, err := storage.ListerForURI(storage.NewFileURI(start)); err == nil {
			fd.SetLocation(uri)
		}
	}
	d.folders = fd
	fd.Show()
}

// escape closes the folder dialog when it is open, else the window.
func (d *projectDialog) escape() {
	if d.folders != nil {
		d.folders.Dismiss()
		return
	}
	d.win.Close()
}

// checkFolder says, as the path is typed, when there is no folder there;
// whether it is a git repository the manager says when it is added.
func checkFolder(s string) error {
	p := expandHome(strings.TrimSpace(s))
	if p == "" {
		return nil
	}
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return fmt.Errorf("there is no folder %s", p)
	case !fi.IsDir():
		return fmt.Errorf("%s is a file, not a folder", p)
	}
	return nil
}

// startDir is where the folder dialog opens: the typed folder if it
// exists, else the home folder.
func (d *projectDialog) startDir() string {
	if p := expandHome(strings.TrimSpace(d.path.Text)); p != "" {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			return p
		}
	}
	home, _ := os.UserHomeDir()
	return home
}

// submit adds the project; the manager says what is wrong with the path.
func (d *projectDialog) submit() {
	if d.add.Disabled() {
		return
	}
	path := expandHome(strings.TrimSpace(d.path.Text))
	d.busy = true
	say(d.status, "Adding "+path+"…", false)
	d.refresh()
	d.u.background(func(ctx context.Context) {
		before := d.u.deps.Workspaces.Projects()
		p, err := d.u.deps.Workspaces.AddProject(ctx, path)
		d.u.do(func() {
			d.busy = false
			d.refresh()
			if err != nil {
				say(d.status, "Could not add the project: "+UserMessage(err), true)
				return
			}
			// The manager answers an add of a known project with that
			// project; closing as if it were new would leave the user
			// looking for a second entry.
			if slices.ContainsFunc(before, func(q workspace.Project) bool { return q.Path == p.Path }) {
				say(d.status, AlreadyAddedNote(p), false)
				return
			}
			d.added = &p
			d.win.Close()
		})
	})
}

// AlreadyAddedNote says that p was a project already.
func AlreadyAddedNote(p workspace.Project) string {
	return fmt.Sprintf("%s is already added (as %s); its workspaces are in the menu. Nothing changed.", p.Path, p.Name)
}

// expandHome turns a leading "~" into the home folder, as a shell would.
func expandHome(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") && !strings.HasPrefix(p, `~\`) {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return p
	}
	return filepath.Join(home, p[1:])
}
