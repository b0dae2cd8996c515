package app

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

var escape = &fyne.KeyEvent{Name: fyne.KeyEscape}

// pressEscape presses Escape in w as the desktop driver does: to the
// focused widget when there is one, else to the canvas.
func pressEscape(w fyne.Window) {
	if f := w.Canvas().Focused(); f != nil {
		f.TypedKey(escape)
		return
	}
	if fn := w.Canvas().OnTypedKey(); fn != nil {
		fn(escape)
	}
}

func TestSettingsShowAFieldsReasonNextToItAsItIsTyped(t *testing.T) {
	h := newHarness(t, Deps{Workspaces: newFake()})
	w := h.u.openSettings()
	for _, f := range []*field{w.mcpPort, w.ocPort, w.ocBin, w.worktreeRoot, w.ratePerSecond, w.rateBurst} {
		if f.reason.Visible() {
			t.Errorf("a saved setting shows a reason: %q", f.reason.Text)
		}
	}

	w.rateBurst.SetText("")
	test.Type(w.rateBurst, "4x")
	if !w.rateBurst.reason.Visible() || !strings.Contains(w.rateBurst.reason.Text, "whole number of 1 or more") {
		t.Errorf("burst 4x: reason %q (shown %v), want why", w.rateBurst.reason.Text, w.rateBurst.reason.Visible())
	}
	if w.status.Text != "" {
		t.Errorf("the reason went to the status line before Save: %q", w.status.Text)
	}
	w.rateBurst.SetText("")
	test.Type(w.rateBurst, "40")
	if w.rateBurst.reason.Visible() {
		t.Errorf("a fixed burst still shows %q", w.rateBurst.reason.Text)
	}

	test.Type(w.worktreeRoot, "relative/dir")
	if !strings.Contains(w.worktreeRoot.reason.Text, "relative path") || !w.worktreeRoot.reason.Visible() {
		t.Errorf("worktree root reason = %q", w.worktreeRoot.reason.Text)
	}

	// A port is only checked while it is fixed.
	w.mcpMode.SetSelected(portFixed)
	test.Type(w.mcpPort, "99999")
	if !strings.Contains(w.mcpPort.reason.Text, "from 1 to 65535") || !w.mcpPort.reason.Visible() {
		t.Errorf("MCP port 99999: reason %q", w.mcpPort.reason.Text)
	}
	w.mcpMode.SetSelected(portDynamic)
	if w.mcpPort.reason.Visible() {
		t.Errorf("a dynamic port still shows %q", w.mcpPort.reason.Text)
	}
}

func TestMetadataEditorShowsReasonsAndLeavesTheEmptiedKeyUnflaggedAfterASet(t *testing.T) {
	f := newFake()
	ws := f.addWorkspace("proj", "feat")
	h := newHarness(t, Deps{Workspaces: f})
	e := h.u.openSettings().meta
	e.selectWorkspace(ws.Path)
	h.waitFor("the rows", func() bool { _, ok := e.rowOf["base"]; return ok })

	test.Type(e.key, "bad key")
	if !e.key.reason.Visible() || e.key.reason.Text == "" {
		t.Error("an invalid key shows no reason next to it")
	}
	e.key.SetText("")
	test.Type(e.key, "note")
	test.Type(e.value, "hello")
	test.Tap(e.set)
	h.waitFor("the save", func() bool { return e.status.Text == "Saved note." })
	if e.key.Text != "" {
		t.Fatalf("the key was not emptied: %q", e.key.Text)
	}
	if err := e.key.Validate(); err != nil || e.key.reason.Visible() {
		t.Errorf("the emptied key is flagged: %v, reason %q", err, e.key.reason.Text)
	}
	if !e.set.Disabled() {
		t.Error("Set is on with an empty key")
	}
}

func TestDeletingAMetadataKeyAsksFirst(t *testing.T) {
	f := newFake()
	ws := f.addWorkspace("proj", "feat")
	f.metadata[ws.Path]["note"] = "keep me"
	h := newHarness(t, Deps{Workspaces: f})
	e := h.u.openSettings().meta
	e.selectWorkspace(ws.Path)
	h.waitFor("the rows", func() bool { _, ok := e.rowOf["note"]; return ok })

	test.Tap(e.rowOf["note"].del)
	q := question(h, "Delete note?")
	if q == nil {
		t.Fatal("Delete removed the key without asking")
	}
	if !strings.Contains(q.message.Text, "note") {
		t.Errorf("the question does not name the key: %q", q.message.Text)
	}
	test.Tap(q.cancel)
	h.drain()
	if question(h, "Delete note?") != nil {
		t.Error("Cancel left the question open")
	}
	f.mu.Lock()
	v := f.metadata[ws.Path]["note"]
	f.mu.Unlock()
	if v != "keep me" {
		t.Fatalf("Cancel deleted the key (now %q)", v)
	}

	test.Tap(e.rowOf["note"].del)
	test.Tap(question(h, "Delete note?").ok)
	h.waitFor("the key gone", func() bool { _, ok := e.rowOf["note"]; return !ok })
}

func TestEveryDialogHasCancelAndClosesOnEscape(t *testing.T) {
	f := newFake()
	ws := f.addWorkspace("proj", "feat")
	tests := []struct {
		title string
		open  func(u *ui) fyne.Focusable // the entry to focus, if any
	}{
		{"New workspace", func(u *ui) fyne.Focusable { return u.openCreate("").name }},
		{"Add project", func(u *ui) fyne.Focusable { return u.openAddProject().path }},
		{"Delete workspace", func(u *ui) fyne.Focusable { u.openDelete(ws); return nil }},
		{"CodeHydra settings", func(u *ui) fyne.Focusable { return u.openSettings().ocBin }},
		{"CodeHydra settings", func(u *ui) fyne.Focusable { return u.openSettings().meta.value }},
		{"CodeHydra: Quit?", func(u *ui) fyne.Focusable { u.confirm("Quit?", "a is working.", "Quit anyway", func() {}); return nil }},
	}
	for _, tt := range tests {
		for _, how := range []string{"Cancel", "Escape"} {
			h := newHarness(t, Deps{Workspaces: f})
			focus := tt.open(h.u)
			h.drain()
			w := window(h, tt.title)
			if w == nil {
				t.Fatalf("%s did not open", tt.title)
			}
			cancel := findButton(w.Content(), "Cancel")
			if cancel == nil {
				t.Errorf("%s has no Cancel", tt.title)
				continue
			}
			if how == "Cancel" {
				test.Tap(cancel)
			} else {
				if focus != nil {
					w.Canvas().Focus(focus)
				}
				pressEscape(w)
			}
			if h.windowOpen(tt.title) {
				t.Errorf("%s (focus on %T) stays open after %s", tt.title, focus, how)
			}
		}
	}
}

// window is the open window titled title, nil when none is.
func window(h *harness, title string) fyne.Window {
	for _, w := range h.app.Driver().AllWindows() {
		if w.Title() == title {
			return w
		}
	}
	return nil
}

func TestAnErrorWindowClosesOnEscape(t *testing.T) {
	h := newHarness(t, Deps{Workspaces: newFake()})
	h.u.showError("Open agent", errors.New("no browser"))
	w := window(h, "CodeHydra: Open agent")
	if w == nil || findButton(w.Content(), "Close") == nil {
		t.Fatal("no error window with Close")
	}
	pressEscape(w)
	if h.windowOpen("CodeHydra: Open agent") {
		t.Error("Escape did not close the error window")
	}
}

func TestBusyWarningNamesTheAgents(t *testing.T) {
	tests := []struct {
		names []string
		want  string
	}{
		{nil, ""},
		{[]string{"featA"}, "featA is working."},
		{[]string{"featA", "featB"}, "featA and featB are working."},
		{[]string{"a", "b", "c", "d", "e"}, "a, b, c, d and e are working."},
		{[]string{"a", "b", "c", "d", "e", "f", "g"}, "a, b, c, d and 3 others are working."},
	}
	for _, tt := range tests {
		if got := BusyWarning(tt.names); got != tt.want {
			t.Errorf("BusyWarning(%q) = %q, want %q", tt.names, got, tt.want)
		}
	}
}

func TestQuitAsksFirstWhenAgentsAreBusyAndCancelKeepsTheAppRunning(t *testing.T) {
	f := newFake()
	a := f.addWorkspace("proj", "featA")
	b := f.addWorkspace("proj", "featB")
	idle := f.addWorkspace("proj", "featC")
	agents := newFakeAgents()
	agents.set(a.Path, agentBusy)
	agents.set(b.Path, agentInput)
	agents.set(idle.Path, agentIdle)
	h := newHarness(t, Deps{Workspaces: f, Agents: agents})
	h.startTray()
	h.waitFor("the menu", func() bool { return h.view.menu() != nil && find(h.view.menu(), LabelQuit) != nil })

	find(h.view.menu(), LabelQuit).Action()
	q := question(h, "Quit?")
	if q == nil {
		t.Fatal("Quit did not ask though featA and featB are working")
	}
	if want := "featA and featB are working. Quit anyway?"; !strings.HasPrefix(q.message.Text, want) {
		t.Errorf("question = %q, want it to start with %q", q.message.Text, want)
	}
	test.Tap(q.cancel)
	if h.app.quits != 0 || h.windowOpen("CodeHydra: Quit?") {
		t.Fatalf("after Cancel: %d quits, question open %v", h.app.quits, h.windowOpen("CodeHydra: Quit?"))
	}
	find(h.view.menu(), LabelQuit).Action()
	test.Tap(question(h, "Quit?").ok)
	if h.app.quits != 1 {
		t.Errorf("Quit anyway quit %d times", h.app.quits)
	}
}

func TestQuitRestartAndRotateActAtOnceWhenNoAgentIsBusy(t *testing.T) {
	f, _, agents := oneWorkspace(agentIdle)
	restarts := 0
	h := newHarness(t, Deps{Workspaces: f, Agents: agents, Restart: func() { restarts++ }})
	h.startTray()
	h.waitFor("the menu", func() bool { return h.view.menu() != nil && find(h.view.menu(), LabelQuit) != nil })
	find(h.view.menu(), LabelQuit).Action()
	w := h.u.openSettings()
	test.Tap(w.restartNow)
	if h.app.quits != 2 || restarts != 1 || len(h.u.windows) != 1 {
		t.Errorf("with idle agents: %d quits, %d restarts, windows %v; want 2, 1 and no question", h.app.quits, restarts, h.u.windows)
	}
}

func TestRestartNowAndRotateTokenNameTheBusyAgents(t *testing.T) {
	f, _, agents := oneWorkspace(agentBusy)
	restarts := 0
	h := newHarness(t, Deps{Workspaces: f, Agents: agents, Restart: func() { restarts++ }, RotateToken: func() error { return nil }})
	h.startTray()
	h.waitFor("the busy agent", func() bool { return len(busyAgents(h.u.tray.State())) == 1 })
	w := h.u.openSettings()

	test.Tap(w.restartNow)
	q := question(h, "Restart?")
	if q == nil || !strings.HasPrefix(q.message.Text, "feat is working. Restart anyway?") {
		t.Fatalf("Restart now did not ask, naming feat: %+v", q)
	}
	pressEscape(q.win)
	if restarts != 0 || h.app.quits != 0 {
		t.Fatalf("Escape restarted (%d) or quit (%d)", restarts, h.app.quits)
	}
	test.Tap(w.restartNow)
	test.Tap(question(h, "Restart?").ok)
	if restarts != 1 || h.app.quits != 1 {
		t.Errorf("Restart anyway: %d restarts, %d quits", restarts, h.app.quits)
	}

	test.Tap(w.rotate)
	if q := question(h, "Rotate the access token?"); q == nil || !strings.Contains(q.message.Text, "feat is working.") {
		t.Errorf("Rotate token does not name the busy agent: %+v", q)
	}
}

func TestDeleteWarningNamesTheChangedAndUntrackedFiles(t *testing.T) {
	repo := testenv.GitRepo(t, "repo")
	m := realManager(t, repo)
	ws, err := m.Create(context.Background(), workspace.CreateOptions{ProjectPath: repo, Name: "dirty"})
	if err != nil {
		t.Fatal(err)
	}
	testenv.WriteFile(t, filepath.Join(ws.Path, "README.md"), "changed\n")
	for _, n := range []string{"a.txt", "b.txt", "c.txt", "d.txt", "e.txt", "f.txt"} {
		testenv.WriteFile(t, filepath.Join(ws.Path, n), n)
	}
	h := newHarness(t, Deps{Workspaces: m})
	d := h.u.openDelete(ws)
	h.waitFor("the warning", func() bool { return strings.Contains(d.warning.Text, "uncommitted") })
	for _, want := range []string{"README.md (changed)", "a.txt (untracked)", "d.txt (untracked)", "and 2 more files"} {
		if !strings.Contains(d.warning.Text, want) {
			t.Errorf("warning lacks %q:\n%s", want, d.warning.Text)
		}
	}
	if strings.Contains(d.warning.Text, "e.txt") {
		t.Errorf("warning names more than 5 files:\n%s", d.warning.Text)
	}
}

func TestDeleteDialogOpensTheFolderOrSaysWhyItCannot(t *testing.T) {
	f := newFake()
	ws := f.addWorkspace("proj", "feat")
	h := newHarness(t, Deps{Workspaces: f})
	opened := make(chan string, 1)
	real := h.u.openFolder
	h.u.openFolder = func(p string, _ func(error)) error { opened <- p; return nil }
	d := h.u.openDelete(ws)
	test.Tap(d.openFolder)
	if got := <-opened; got != ws.Path {
		t.Errorf("opened %q, want %q", got, ws.Path)
	}

	// Without xdg-open the real opener says so in words.
	t.Setenv("PATH", t.TempDir())
	h.u.openFolder = real
	test.Tap(d.openFolder)
	h.waitFor("the reason", func() bool { return d.status.Text != "" })
	if want := "xdg-open is not installed"; !strings.Contains(d.status.Text, want) || !strings.Contains(d.status.Text, ws.Path) ||
		strings.Contains(d.status.Text, "executable file not found") {
		t.Errorf("status = %q, want %q and the folder, without exec's error", d.status.Text, want)
	}
}
