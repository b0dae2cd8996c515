package window

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/widget"

	"codehydra/internal/sandbox"
	"codehydra/internal/settings"
)

// SandboxSupport says what this system can do to confine agents, and
// when a change of the sandbox mode applies, for the Settings window.
func SandboxSupport(st sandbox.Status) string {
	what := "This system confines agents with Landlock ABI " + strconv.Itoa(st.ABI)
	if st.UnixSocketFilter {
		what += ", and a seccomp filter that keeps them from unix sockets"
	}
	what += "."
	if st.Gaps != "" {
		what += " Not restricted: " + strings.TrimPrefix(st.Gaps, "not restricted: ") + "."
	}
	if !st.Enforced {
		what = "This system cannot confine agents (" + strings.TrimPrefix(st.Reason, "not confined: ") + ")."
	}
	return what + " auto confines where it can; required does not start what it cannot confine; off confines nothing. " +
		"A change applies to agents, tasks and setups started after it (Restart agent applies it to a running one)."
}

// sandboxStatus is what the sandbox enforces with settings s.
func sandboxStatus(s settings.Sandbox) sandbox.Status {
	st := sandbox.Probe()
	if s.UnixSockets {
		st = st.WithUnixSockets()
	}
	return st
}

// The choices of a port setting.
const (
	portDynamic = "Any free port"
	portFixed   = "Fixed port"
)

// settingsWindow edits the settings (General tab), workspace metadata
// (Metadata tab), projects' setup (Projects tab) and the user's MCP servers
// (MCP servers tab). It shows the saved settings each time it opens.
type settingsWindow struct {
	u   *UI
	win fyne.Window

	mcpMode       *widget.RadioGroup
	mcpPort       *field
	mcpInUse      *widget.Label
	ocMode        *widget.RadioGroup
	ocPort        *field
	ocBin         *field
	ocFound       *widget.Label
	worktreeRoot  *field
	editorCmd     *field
	terminalCmd   *field
	notifications *widget.Check
	preventSleep  *widget.Check
	ratePerSecond *field
	rateBurst     *field
	sandboxMode   *widget.RadioGroup
	sandboxInfo   *widget.Label
	rotate        *widget.Button
	rotateStatus  *widget.Label
	save          *widget.Button
	cancel        *widget.Button
	status        *widget.Label
	restartNote   *widget.Label
	restartNow    *widget.Button

	meta    *metadataEditor
	servers *mcpServersEditor
	// loaded is what the form was filled from, to tell what a save changed.
	loaded settings.Settings
}

// openSettings opens the settings window, or brings the open one forward
// (and returns nil).
func (u *UI) openSettings() *settingsWindow {
	var w *settingsWindow
	u.window(Spec{Kind: KindSettings}, func() (fyne.Window, func()) {
		w = u.newSettingsWindow()
		return w.win, func() { w.meta.stop(); w.servers.stop() }
	})
	return w
}

func (u *UI) newSettingsWindow() *settingsWindow {
	w := &settingsWindow{u: u, win: u.app.NewWindow("CodeHydra settings")}

	w.mcpPort, w.mcpMode = portField("MCP port")
	w.mcpInUse = widget.NewLabel("")
	w.ocPort, w.ocMode = portField("OpenCode base port")
	w.ocBin = newField(func(s string) error { _, err := parseBinary(s); return err })
	w.ocBin.SetPlaceHolder("empty: look for opencode on PATH")
	w.ocFound = widget.NewLabel("")
	w.ocFound.Wrapping = fyne.TextWrapWord
	w.worktreeRoot = newField(func(s string) error { _, err := parseWorktreeRoot(s); return err })
	def := u.deps.DefaultWorktreeRoot
	if def == "" {
		def = "the default folder"
	}
	w.worktreeRoot.SetPlaceHolder("empty: " + def)
	w.editorCmd = commandEntry("editorCommand", Editor, newFinder(u.deps.Getenv))
	w.terminalCmd = commandEntry("terminalCommand", Terminal, newFinder(u.deps.Getenv))
	w.notifications = widget.NewCheck("Notify when an agent finishes or needs input", nil)
	w.preventSleep = widget.NewCheck("Keep the computer awake while agents work", nil)
	w.ratePerSecond = newField(func(s string) error { _, err := parseRate(s); return err })
	w.rateBurst = newField(func(s string) error { _, err := parseBurst(s); return err })
	w.sandboxMode = widget.NewRadioGroup([]string{string(sandbox.ModeAuto), string(sandbox.ModeRequired), string(sandbox.ModeOff)}, nil)
	w.sandboxMode.Horizontal = true
	w.sandboxMode.Required = true
	w.sandboxInfo = widget.NewLabel(SandboxSupport(sandbox.Probe()))
	w.sandboxInfo.Wrapping = fyne.TextWrapWord
	w.rotate = widget.NewButton("Rotate token…", w.confirmRotate)
	if u.deps.RotateToken == nil {
		w.rotate.Disable()
	}
	w.rotateStatus = statusLabel()
	w.status = statusLabel()
	w.restartNote = statusLabel()
	// Shown by say once they have something to say: empty, they would
	// leave a blank band above the buttons.
	w.status.Hide()
	w.restartNote.Hide()
	w.restartNow = widget.NewButton("Restart now", func() {
		if u.deps.Restart != nil {
			u.UnlessBusy("Restart", func() {
				u.deps.Restart()
				u.app.Quit()
			})
		}
	})
	w.restartNow.Hide()
	w.save = widget.NewButton("Save", w.submit)
	w.save.Importance = widget.HighImportance
	// Cancel drops what was not saved.
	w.cancel = widget.NewButton("Cancel", w.win.Close)

	general := w.generalTab()

	w.meta = u.newMetadataEditor()
	w.servers = u.newMCPServersEditor(w.win.Close)
	tabs := container.NewAppTabs(
		container.NewTabItem("General", general),
		container.NewTabItem("Metadata", w.meta.content),
		container.NewTabItem("Projects", u.newProjectSetupEditor().content),
		container.NewTabItem("MCP servers", w.servers.content),
	)
	w.win.SetContent(tabs)
	answerEscape(w.win, w.win.Close, w.mcpPort.entry, w.ocPort.entry, w.ocBin.entry, w.worktreeRoot.entry,
		w.editorCmd.entry, w.terminalCmd.entry,
		w.ratePerSecond.entry, w.rateBurst.entry, w.meta.key.entry, w.meta.value.entry)
	w.win.Resize(fyne.NewSize(640, 680))
	w.fill(u.deps.Settings.Get())
	return w
}

// generalTab lays out the General tab: the form in a scroll, with Save
// and what it reports below it.
func (w *settingsWindow) generalTab() fyne.CanvasObject {
	row := func(label string, obj ...fyne.CanvasObject) []fyne.CanvasObject {
		return []fyne.CanvasObject{widget.NewLabel(label), container.NewVBox(obj...)}
	}
	var cells []fyne.CanvasObject
	cells = append(cells, row("MCP server port", w.mcpMode, w.mcpPort.withReason(), w.mcpInUse)...)
	cells = append(cells, row("OpenCode base port", w.ocMode, w.ocPort.withReason())...)
	cells = append(cells, row("OpenCode binary", w.ocBin.withReason(), w.ocFound)...)
	cells = append(cells, row("Worktree root", w.worktreeRoot.withReason())...)
	cells = append(cells, row("Editor command", w.editorCmd.withReason())...)
	cells = append(cells, row("Terminal command", w.terminalCmd.withReason())...)
	cells = append(cells, row("Notifications", w.notifications)...)
	cells = append(cells, row("Sleep", w.preventSleep)...)
	cells = append(cells, row("MCP rate limit", container.NewGridWithColumns(2,
		container.NewBorder(nil, nil, nil, widget.NewLabel("calls per second"), w.ratePerSecond),
		container.NewBorder(nil, nil, nil, widget.NewLabel("burst"), w.rateBurst)),
		w.ratePerSecond.reason, w.rateBurst.reason)...)
	cells = append(cells, row("Sandbox", w.sandboxMode, w.sandboxInfo)...)
	cells = append(cells, row("Access token", w.rotate, w.rotateStatus)...)
	// Save and what it reports stay below the scrolling form, so that they
	// are in view however tall the form grows.
	return container.NewBorder(nil,
		container.NewPadded(container.NewVBox(
			w.status,
			w.restartNote,
			container.NewHBox(layout.NewSpacer(), w.restartNow, w.cancel, w.save),
		)),
		nil, nil,
		container.NewVScroll(container.NewPadded(container.New(layout.NewFormLayout(), cells...))),
	)
}

// portField is a port's entry and its dynamic/fixed choice; the entry is
// only editable, and only checked, for a fixed port.
func portField(what string) (*field, *widget.RadioGroup) {
	var mode *widget.RadioGroup
	f := newField(func(s string) error {
		if mode == nil || mode.Selected != portFixed {
			return nil
		}
		_, err := parsePort(what, s)
		return err
	})
	f.SetPlaceHolder("1 to 65535")
	mode = widget.NewRadioGroup([]string{portDynamic, portFixed}, func(choice string) {
		setEnabled(f, choice == portFixed)
	})
	mode.Horizontal = true
	mode.Required = true
	return f, mode
}

// fill shows s in the form.
func (w *settingsWindow) fill(s settings.Settings) {
	w.loaded = s
	fillPort := func(mode *widget.RadioGroup, e *field, port int) {
		e.SetText("")
		mode.SetSelected(portDynamic)
		if port != 0 {
			e.SetText(strconv.Itoa(port))
			mode.SetSelected(portFixed)
		}
	}
	fillPort(w.mcpMode, w.mcpPort, s.MCPPort)
	fillPort(w.ocMode, w.ocPort, s.OpencodeBasePort)
	w.ocBin.SetText(s.OpencodeBin)
	w.worktreeRoot.SetText(s.WorktreeRoot)
	w.editorCmd.SetText(s.EditorCommand)
	w.terminalCmd.SetText(s.TerminalCommand)
	w.notifications.SetChecked(s.Notifications)
	w.preventSleep.SetChecked(s.PreventSleep)
	w.ratePerSecond.SetText(strconv.FormatFloat(s.RateLimit.PerSecond, 'f', -1, 64))
	w.rateBurst.SetText(strconv.Itoa(s.RateLimit.Burst))
	mode, err := sandbox.ParseMode(s.Sandbox.Mode)
	if err != nil {
		mode = sandbox.ModeAuto
	}
	w.sandboxMode.SetSelected(string(mode))
	w.sandboxInfo.SetText(SandboxSupport(sandboxStatus(s.Sandbox)))

	switch server := w.u.deps.MCP; {
	case server == nil:
		w.mcpInUse.SetText("The MCP server is not running.")
	case s.MCPPort != 0 && server.Port() != s.MCPPort:
		w.mcpInUse.SetText(fmt.Sprintf("In use now: %d (port %d was taken)", server.Port(), s.MCPPort))
	default:
		w.mcpInUse.SetText(fmt.Sprintf("In use now: %d", server.Port()))
	}
	switch agents := w.u.deps.Agents; {
	case agents == nil:
		w.ocFound.SetText("Agents are not run in this session.")
	default:
		if path, ok := agents.FindBinary(); ok {
			w.ocFound.SetText("Found: " + path)
		} else {
			w.ocFound.SetText("Not found: install OpenCode (npm install -g opencode-ai) or enter the path of its binary.")
		}
	}
}

// read puts the form's values into s; the error lists every field that is
// wrong, in words that say how to fix it.
func (w *settingsWindow) read(s *settings.Settings) error {
	var errs []error
	port := func(mode *widget.RadioGroup, e *field, what string) int {
		if mode.Selected != portFixed {
			return 0
		}
		p, err := parsePort(what, e.Text)
		errs = append(errs, err)
		return p
	}
	s.MCPPort = port(w.mcpMode, w.mcpPort, "MCP port")
	s.OpencodeBasePort = port(w.ocMode, w.ocPort, "OpenCode base port")
	var err error
	s.OpencodeBin, err = parseBinary(w.ocBin.Text)
	errs = append(errs, err)
	s.WorktreeRoot, err = parseWorktreeRoot(w.worktreeRoot.Text)
	errs = append(errs, err)
	s.EditorCommand, err = readCommand("editorCommand", w.editorCmd.Text)
	errs = append(errs, err)
	s.TerminalCommand, err = readCommand("terminalCommand", w.terminalCmd.Text)
	errs = append(errs, err)
	s.Notifications = w.notifications.Checked
	s.PreventSleep = w.preventSleep.Checked
	s.RateLimit.PerSecond, err = parseRate(w.ratePerSecond.Text)
	errs = append(errs, err)
	s.RateLimit.Burst, err = parseBurst(w.rateBurst.Text)
	errs = append(errs, err)
	s.Sandbox.Mode = w.sandboxMode.Selected
	return errors.Join(errs...)
}

func parsePort(what, s string) (int, error) {
	p, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || p < 1 || p > 65535 {
		return 0, fmt.Errorf("%s: enter a port from 1 to 65535, or choose %q", what, portDynamic)
	}
	return p, nil
}

func parseBinary(s string) (string, error) {
	s = expandHome(strings.TrimSpace(s))
	if s == "" || !strings.ContainsAny(s, `/\`) {
		return s, nil // a command name is looked up on PATH
	}
	if !filepath.IsAbs(s) {
		return "", fmt.Errorf("OpenCode binary: %s is a relative path; give an absolute path, or leave it empty to look on PATH", s)
	}
	fi, err := os.Stat(s)
	switch {
	case err != nil:
		return "", fmt.Errorf("OpenCode binary: %s does not exist; give the path of the opencode executable, or leave it empty to look on PATH", s)
	case fi.IsDir():
		return "", fmt.Errorf("OpenCode binary: %s is a folder; give the path of the opencode executable inside it", s)
	}
	return s, nil
}

func parseWorktreeRoot(s string) (string, error) {
	s = expandHome(strings.TrimSpace(s))
	if s != "" && !filepath.IsAbs(s) {
		return "", fmt.Errorf("worktree root: %s is a relative path; give an absolute path, or leave it empty for the default", s)
	}
	return s, nil
}

func parseRate(s string) (float64, error) {
	r, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || !(r > 0) || math.IsInf(r, 0) {
		return 0, errors.New("rate limit: enter the calls per second as a number above 0, e.g. 20")
	}
	return r, nil
}

func parseBurst(s string) (int, error) {
	b, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || b < 1 {
		return 0, errors.New("rate limit burst: enter a whole number of 1 or more, e.g. 40")
	}
	return b, nil
}

// submit validates the form and saves it through the store.
func (w *settingsWindow) submit() {
	store := w.u.deps.Settings
	check := store.Get()
	err := w.read(&check)
	if err == nil {
		err = check.Validate()
	}
	if err != nil {
		say(w.status, "Not saved. "+err.Error(), true)
		return
	}
	var saved settings.Settings
	err = store.Update(func(s *settings.Settings) {
		// Read into the store's own copy: the project list may have
		// changed since the window opened.
		_ = w.read(s)
		saved = *s
	})
	if err != nil {
		say(w.status, "Could not save the settings: "+err.Error(), true)
		return
	}
	say(w.status, "Saved.", false)
	if changed := restartNeeded(w.loaded, saved); len(changed) > 0 {
		msg := "The " + strings.Join(changed, ", ") + " take effect after CodeHydra restarts."
		if w.u.deps.Restart == nil {
			msg += " Quit CodeHydra and start it again to apply them."
		}
		say(w.restartNote, msg, false)
		if w.u.deps.Restart != nil {
			w.restartNow.Show()
		}
	}
	w.loaded = saved
}

// restartNeeded names the settings that changed from before to after and
// are only read at startup.
func restartNeeded(before, after settings.Settings) []string {
	var c []string
	if before.MCPPort != after.MCPPort {
		c = append(c, "MCP port")
	}
	if before.OpencodeBasePort != after.OpencodeBasePort {
		c = append(c, "OpenCode base port")
	}
	if before.OpencodeBin != after.OpencodeBin {
		c = append(c, "OpenCode binary")
	}
	if before.WorktreeRoot != after.WorktreeRoot {
		c = append(c, "worktree root")
	}
	if before.RateLimit != after.RateLimit {
		c = append(c, "rate limit")
	}
	if before.PreventSleep != after.PreventSleep {
		c = append(c, "computer awake while agents work")
	}
	if len(c) > 0 {
		c[0] = "changes to the " + c[0]
	}
	return c
}

// RotateTokenNote tells what rotating the token does to agents and clients.
const RotateTokenNote = "A new MCP access token replaces the current one. Every agent is restarted so that it gets the new token. " +
	"Other MCP clients (Claude Code, Claude Desktop, …) stop working until you copy their config again with Copy MCP config."

// confirmRotate asks before rotating, naming the agents whose work the
// restart would stop.
func (w *settingsWindow) confirmRotate() {
	msg := RotateTokenNote
	if busy := BusyWarning(w.u.deps.Tray.BusyAgents()); busy != "" {
		msg += "\n\n" + busy + " Their work in progress stops."
	}
	w.u.confirm("Rotate the access token?", msg, "Rotate token", w.rotateToken)
}

// rotateToken replaces the token, then restarts every agent so that each
// gets the new one.
func (w *settingsWindow) rotateToken() {
	u := w.u
	w.rotate.Disable()
	say(w.rotateStatus, "Rotating…", false)
	u.background(func(context.Context) {
		err := u.deps.RotateToken()
		if err == nil && u.deps.Agents != nil {
			u.deps.Agents.RestartAll()
		}
		u.do(func() {
			w.rotate.Enable()
			switch {
			case err != nil:
				say(w.rotateStatus, "The token was not rotated: "+UserMessage(err), true)
			case u.deps.Agents == nil:
				say(w.rotateStatus, "Token rotated. Copy the MCP config again for other clients.", false)
			default:
				say(w.rotateStatus, "Token rotated and every agent restarted. Copy the MCP config again for other clients.", false)
			}
		})
	})
}
