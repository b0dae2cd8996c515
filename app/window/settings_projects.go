package window

import (
	"fmt"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/widget"

	"codehydra/internal/settings"
	"codehydra/workspace"
)

// projectSetupEditor is the Settings window's "Projects" tab: per project,
// the files copied into each new worktree and the setup command run there
// before its agent starts, its dev server and its teardown (settings'
// projectSetup). It saves on its own,
// like the Metadata tab.
type projectSetupEditor struct {
	u        *UI
	projects []workspace.Project
	project  *widget.Select
	copy     *widget.Entry
	setup    *widget.Entry
	timeout  *widget.Entry
	run      *widget.Entry
	teardown *widget.Entry
	tdTime   *widget.Entry
	remote   *widget.Entry
	status   *widget.Label
	save     *widget.Button
	content  fyne.CanvasObject
	path     string
}

func (u *UI) newProjectSetupEditor() *projectSetupEditor {
	e := &projectSetupEditor{u: u, projects: u.deps.Workspaces.Projects(), status: statusLabel()}
	e.project = projectSelect(e.projects, e.load)
	e.copy = widget.NewMultiLineEntry()
	e.copy.SetPlaceHolder(".env*\nconfig/local.json")
	e.copy.SetMinRowsVisible(4)
	e.setup = widget.NewEntry()
	e.setup.SetPlaceHolder(`npm install   (no shell; write sh -c "npm ci && make" for one)`)
	e.timeout = widget.NewEntry()
	e.timeout.SetPlaceHolder(strconv.Itoa(int(settings.DefaultSetupTimeout.Seconds())))
	e.run = widget.NewEntry()
	e.run.SetPlaceHolder(`npm run dev   (the dev server, task project:run; gets $PORT)`)
	e.teardown = widget.NewEntry()
	e.teardown.SetPlaceHolder(`docker compose down   (run before a workspace is deleted)`)
	e.tdTime = widget.NewEntry()
	e.tdTime.SetPlaceHolder(strconv.Itoa(int(settings.DefaultTeardownTimeout.Seconds())))
	e.remote = widget.NewEntry()
	e.remote.SetPlaceHolder(settings.DefaultRemote + "   (where its workspaces are pushed for a pull request)")
	e.save = widget.NewButton("Save project setup", e.submit)
	e.save.Importance = widget.HighImportance
	intro := widget.NewLabel("Before the agent of a new workspace starts, CodeHydra copies these untracked files from the project's folder into it and runs the setup command there. They come only from these settings, never from the repository.")
	intro.Wrapping = fyne.TextWrapWord
	form := container.New(layout.NewFormLayout(),
		widget.NewLabel("Project"), e.project,
		widget.NewLabel("Files to copy\n(one pattern a line)"), e.copy,
		widget.NewLabel("Setup command"), e.setup,
		widget.NewLabel("Setup timeout (s)"), e.timeout,
		widget.NewLabel("Dev server command"), e.run,
		widget.NewLabel("Teardown command"), e.teardown,
		widget.NewLabel("Teardown timeout (s)"), e.tdTime,
		widget.NewLabel("Remote"), e.remote,
	)
	e.content = container.NewBorder(intro, container.NewVBox(e.status, container.NewHBox(layout.NewSpacer(), e.save)), nil, nil,
		container.NewVScroll(form))
	if len(e.projects) > 0 {
		e.project.SetSelectedIndex(0)
	} else {
		say(e.status, "There is no project yet: add one with Add project… first.", false)
		e.save.Disable()
	}
	return e
}

// load fills the form with the project's setup.
func (e *projectSetupEditor) load(path string) {
	e.path = path
	ps := e.u.deps.Settings.Get().ProjectSetup[path]
	e.copy.SetText(strings.Join(ps.Copy, "\n"))
	e.setup.SetText(ps.Setup)
	e.timeout.SetText("")
	if ps.SetupTimeoutSeconds != 0 {
		e.timeout.SetText(strconv.Itoa(ps.SetupTimeoutSeconds))
	}
	e.run.SetText(ps.Run)
	e.teardown.SetText(ps.Teardown)
	e.tdTime.SetText("")
	if ps.TeardownTimeoutSeconds != 0 {
		e.tdTime.SetText(strconv.Itoa(ps.TeardownTimeoutSeconds))
	}
	e.remote.SetText(ps.Remote)
	say(e.status, "", false)
}

// read turns the form into a ProjectSetup.
func (e *projectSetupEditor) read() (settings.ProjectSetup, error) {
	var ps settings.ProjectSetup
	for l := range strings.SplitSeq(e.copy.Text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			ps.Copy = append(ps.Copy, l)
		}
	}
	ps.Setup = strings.TrimSpace(e.setup.Text)
	if t := strings.TrimSpace(e.timeout.Text); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 1 {
			return ps, fmt.Errorf("setup timeout: enter a whole number of seconds, e.g. 600, or leave it empty for %d", int(settings.DefaultSetupTimeout.Seconds()))
		}
		ps.SetupTimeoutSeconds = n
	}
	ps.Run = strings.TrimSpace(e.run.Text)
	ps.Teardown = strings.TrimSpace(e.teardown.Text)
	for _, c := range []struct{ name, line string }{{"setup command", ps.Setup}, {"dev server command", ps.Run}, {"teardown command", ps.Teardown}} {
		if err := settings.CheckCommand(c.name, c.line); err != nil {
			return ps, err
		}
	}
	if t := strings.TrimSpace(e.tdTime.Text); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 1 {
			return ps, fmt.Errorf("teardown timeout: enter a whole number of seconds, e.g. 120, or leave it empty for %d", int(settings.DefaultTeardownTimeout.Seconds()))
		}
		ps.TeardownTimeoutSeconds = n
	}
	ps.Remote = strings.TrimSpace(e.remote.Text)
	if err := settings.CheckRemote(ps.Remote); err != nil {
		return ps, err
	}
	return ps, nil
}

// submit saves the project's setup; an empty one removes the entry.
func (e *projectSetupEditor) submit() {
	if e.path == "" {
		return
	}
	ps, err := e.read()
	if err != nil {
		say(e.status, err.Error(), true)
		return
	}
	err = e.u.deps.Settings.Update(func(s *settings.Settings) {
		// The form does not show which MCP servers the project offers.
		ps.MCPServers = s.ProjectSetup[e.path].MCPServers
		if ps.Empty() && ps.Remote == "" && ps.Run == "" && ps.Teardown == "" && ps.MCPServers == nil {
			delete(s.ProjectSetup, e.path)
			return
		}
		if s.ProjectSetup == nil {
			s.ProjectSetup = map[string]settings.ProjectSetup{}
		}
		s.ProjectSetup[e.path] = ps
	})
	if err != nil {
		say(e.status, "Could not save the project setup: "+err.Error(), true)
		return
	}
	say(e.status, "Saved: new workspaces of this project get it.", false)
}
