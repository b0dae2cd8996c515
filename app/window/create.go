package window

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"codehydra/workspace"
)

// createDialog is the "New workspace" window: a project, a name checked as
// it is typed, the branch to start from, and an optional first prompt for
// the new agent with the opencode agent to run it.
type createDialog struct {
	u   *UI
	win fyne.Window

	projects []workspace.Project
	project  *widget.Select
	// name shows why a typed name cannot be used under it.
	name *field
	// reuse says, under the name, that a branch of that name exists and
	// is reused as it is.
	reuse *widget.Label
	base  *widget.Select
	// prompt is the new agent's first task ("" for none) and agent the
	// opencode agent to run it with ("" for opencode's default); both say
	// under them what workspace_create would refuse in them.
	prompt *field
	agent  *field
	// agentMenu is the agent's list of choices, while it is shown.
	agentMenu *widget.PopUpMenu
	// status says what is going on: creating, or what failed.
	status *widget.Label
	create *widget.Button
	cancel *widget.Button

	// projectPath is the selected project; taken holds its workspaces'
	// names and free its branches checked out nowhere, once loaded.
	projectPath string
	taken       map[string]bool
	free        map[string]bool
	loading     bool
	busy        bool
	// created is the workspace made, once Create succeeded.
	created *workspace.Workspace
	// setup follows the new workspace's copy and setup (setup.go).
	setup *setupProgress
}

// openCreate opens the "New workspace" window, with projectPath selected
// when it is not "", or brings the open one forward (and returns nil).
func (u *UI) openCreate(projectPath string) *createDialog {
	var d *createDialog
	u.window(Spec{Kind: KindCreate, Path: projectPath}, func() (fyne.Window, func()) {
		d = u.newCreateDialog(projectPath)
		return d.win, func() { d.setup.stop() }
	})
	return d
}

func (u *UI) newCreateDialog(projectPath string) *createDialog {
	d := &createDialog{
		u:        u,
		win:      u.app.NewWindow("New workspace"),
		projects: u.deps.Workspaces.Projects(),
		taken:    map[string]bool{},
		free:     map[string]bool{},
	}
	d.project = projectSelect(d.projects, d.selectProject)
	d.name = newField(func(name string) error {
		if name == "" {
			return nil // an empty form is no mistake yet: Create stays off
		}
		return d.validateName(name)
	})
	d.name.SetPlaceHolder("feature/login")
	d.name.onEdit = func(string) { d.refresh() }
	d.name.OnSubmitted = func(string) { d.submit() }
	d.reuse = statusLabel()
	d.reuse.Importance = widget.WarningImportance
	d.reuse.Hide()
	d.base = widget.NewSelect(nil, func(string) { d.refresh() })
	d.base.PlaceHolder = "Choose a project first"
	d.newPromptFields()
	d.status = statusLabel()
	d.create = widget.NewButton("Create", d.submit)
	d.create.Importance = widget.HighImportance
	d.cancel = widget.NewButton("Cancel", d.win.Close)
	d.setup = newSetupProgress(u, d.win)

	form := container.New(layout.NewFormLayout(),
		widget.NewLabel("Project"), d.project,
		widget.NewLabel("Name"), container.NewVBox(d.name.withReason(), d.reuse),
		widget.NewLabel("Start from"), d.base,
		widget.NewLabel("First prompt"), d.prompt.withReason(),
		widget.NewLabel("Agent"), d.agent.withReason(),
	)
	d.win.SetContent(container.NewVBox(
		form,
		d.status,
		d.setup.box,
		container.NewHBox(layout.NewSpacer(), d.cancel, d.create),
	))
	d.win.Resize(fyne.NewSize(520, 0))
	answerEscape(d.win, d.win.Close, d.name.entry, d.prompt.entry, d.agent.entry)
	// The name is what there is to type: take the keys from the start.
	d.win.Canvas().Focus(d.name)

	switch {
	case len(d.projects) == 0:
		say(d.status, "There is no project yet: add a git repository with Add project… first.", true)
	case projectPath != "":
		for i, p := range d.projects {
			if p.Path == projectPath {
				d.project.SetSelectedIndex(i)
			}
		}
	case len(d.projects) == 1:
		d.project.SetSelectedIndex(0)
	}
	d.refresh()
	return d
}

// newPromptFields makes the first prompt's fields. They check what
// workspace_create checks (workspace.CheckFirstPrompt), so that a prompt
// over the size limit is refused here as it is typed, not after Create.
func (d *createDialog) newPromptFields() {
	d.prompt = newField(func(text string) error {
		if strings.TrimSpace(text) == "" {
			return nil // no prompt: the agent waits for the user, as before
		}
		return userError(workspace.CheckFirstPrompt(workspace.FirstPrompt{Prompt: text}))
	})
	d.prompt.MultiLine = true
	d.prompt.Wrapping = fyne.TextWrapWord
	d.prompt.SetMinRowsVisible(4)
	d.prompt.SetPlaceHolder("Optional: the new agent's first task, sent as soon as it is ready")
	d.prompt.onEdit = func(string) { d.refresh() }
	d.agent = newField(func(name string) error {
		if name == "" {
			return nil
		}
		// A stand-in task: only the agent's name is checked here.
		return userError(workspace.CheckFirstPrompt(workspace.FirstPrompt{Prompt: "task", Agent: name}))
	})
	d.agent.SetPlaceHolder("opencode's default")
	d.agent.onEdit = func(string) { d.refresh() }
	d.agent.OnSubmitted = func(string) { d.submit() }
	// build and plan are opencode's own agents; a project's own are typed.
	var pick *widget.Button
	pick = widget.NewButtonWithIcon("", theme.MenuDropDownIcon(), func() {
		var items []*fyne.MenuItem
		for _, name := range []string{"build", "plan"} {
			items = append(items, fyne.NewMenuItem(name, func() { d.agent.SetText(name) }))
		}
		d.agentMenu = widget.NewPopUpMenu(fyne.NewMenu("", items...), d.win.Canvas())
		d.agentMenu.ShowAtRelativePosition(fyne.NewPos(0, pick.Size().Height), pick)
	})
	d.agent.ActionItem = pick
	if d.u.deps.Agents == nil {
		d.prompt.SetPlaceHolder("No agents run in this session")
	}
}

// firstPrompt is the prompt to queue for the new workspace's agent; nil
// for none.
func (d *createDialog) firstPrompt() *workspace.FirstPrompt {
	if d.u.deps.Agents == nil || strings.TrimSpace(d.prompt.Text) == "" {
		return nil
	}
	return &workspace.FirstPrompt{Prompt: d.prompt.Text, Agent: strings.TrimSpace(d.agent.Text)}
}

// userError is err as the sentence a field shows under it; nil for nil.
func userError(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(UserMessage(err))
}

// selectProject loads what the form needs to know about the project: its
// branches, its default base, and the names already taken.
func (d *createDialog) selectProject(path string) {
	d.projectPath = path
	d.taken = map[string]bool{}
	d.free = map[string]bool{}
	d.loading = true
	d.base.Options = nil
	d.base.ClearSelected()
	d.base.PlaceHolder = "Loading branches…"
	d.base.Refresh()
	say(d.status, "", false)
	d.refresh()
	d.u.background(func(ctx context.Context) {
		wss := d.u.deps.Workspaces
		branches, errB := wss.Branches(ctx, path)
		free, errF := wss.ReusableBranches(ctx, path)
		def, errD := wss.DefaultBase(ctx, path)
		list, errW := wss.Workspaces(path)
		d.u.do(func() {
			if d.projectPath != path {
				return // another project was chosen meanwhile
			}
			d.loading = false
			for _, w := range list {
				d.taken[w.Name] = true
			}
			for _, b := range free {
				d.free[b] = true
			}
			d.base.Options = branches
			d.base.PlaceHolder = "Choose a branch"
			if errD == nil && def != "" {
				d.base.SetSelected(def)
			}
			d.base.Refresh()
			if err := errors.Join(errB, errF, errW); err != nil {
				say(d.status, "Cannot read the project's branches: "+UserMessage(err), true)
			}
			d.name.showReason()
			d.refresh()
		})
	})
}

// validateName is the name entry's validator: the workspace rules, and no
// second workspace of that name in the project.
func (d *createDialog) validateName(name string) error {
	if err := workspace.ValidateName(name); err != nil {
		return errors.New(UserMessage(err))
	}
	if d.taken[name] {
		return fmt.Errorf("the project already has a workspace named %s; choose another name", name)
	}
	return nil
}

// refresh enables Create when it can work.
func (d *createDialog) refresh() {
	reused := d.reusesBranch()
	if reused {
		d.reuse.SetText(fmt.Sprintf("Branch %s exists: the workspace reuses it as it is, with its metadata and recorded base. “Start from” does not apply to it.", d.name.Text))
		d.reuse.Show()
	} else {
		// Hidden, not only empty: an empty label still takes a row.
		d.reuse.SetText("")
		d.reuse.Hide()
	}
	ready := d.validateName(d.name.Text) == nil && d.projectPath != "" && !d.loading && !d.busy &&
		d.prompt.Validate() == nil && d.agent.Validate() == nil
	setEnabled(d.create, ready)
	setEnabled(d.prompt, !d.busy && d.u.deps.Agents != nil)
	setEnabled(d.agent, !d.busy && d.u.deps.Agents != nil)
	setEnabled(d.project, !d.busy)
	// Not off while the branches load: a disabled field leaves the Tab
	// order, so a user typing name, Tab, Tab, prompt before the list came
	// would type the prompt into the agent field.
	setEnabled(d.base, !d.busy && !reused)
	setEnabled(d.name, !d.busy)
	fitHeight(d.win)
}

// reusesBranch reports whether the name typed is that of a branch checked
// out nowhere (and so no workspace's): Create reuses it.
func (d *createDialog) reusesBranch() bool {
	return d.free[d.name.Text] && !d.taken[d.name.Text]
}

// submit creates the workspace. The window closes when it is there; the
// tray shows it as soon as the manager reports it.
func (d *createDialog) submit() {
	if d.create.Disabled() {
		return
	}
	opts := workspace.CreateOptions{ProjectPath: d.projectPath, Name: d.name.Text, Base: d.base.Selected}
	if d.reusesBranch() {
		// "Start from" is off for a reused branch: it would not apply.
		opts.Base = ""
	}
	first := d.firstPrompt()
	d.busy = true
	say(d.status, "Creating "+opts.Name+"…", false)
	d.refresh()
	d.u.background(func(ctx context.Context) {
		ws, err := d.u.deps.Workspaces.Create(ctx, opts)
		var errPrompt error
		if err == nil && first != nil {
			_, errPrompt = d.u.deps.Agents.QueuePrompt(ws.Path, *first)
		}
		d.u.do(func() {
			d.busy = false
			if err != nil {
				say(d.status, "Could not create the workspace: "+UserMessage(err), true)
				d.refresh()
				return
			}
			d.created = &ws
			if errPrompt != nil {
				// The workspace exists: keep the window, with the prompt
				// still in it to copy, and say why it was not kept.
				say(d.status, "Created "+ws.Name+", but its first prompt was not kept: "+UserMessage(errPrompt), true)
				d.u.log.Warn("first prompt not queued", slog.String("workspace", ws.Path), slog.Any("err", errPrompt))
				d.setup.follow(ws)
				d.doneCreating()
				return
			}
			if d.setup.follow(ws) {
				say(d.status, "Created "+ws.Name+".", false)
				d.doneCreating()
				return
			}
			d.win.Close()
		})
	})
}

// doneCreating leaves the window open on a created workspace: Create is
// gone and Cancel, which cancels nothing now, is Close.
func (d *createDialog) doneCreating() {
	d.cancel.SetText("Close")
	d.create.Hide()
}
