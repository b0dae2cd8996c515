package window

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"codehydra/app/internal/uitest"
	"codehydra/internal/testenv"
	"codehydra/workspace"
)

func TestSettingsShowAFieldsReasonNextToItAsItIsTyped(t *testing.T) {
	h := newHarness(t, Deps{Workspaces: uitest.NewWorkspaces()})
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
	f := uitest.NewWorkspaces()
	ws := f.AddWorkspace("proj", "feat")
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
	f := uitest.NewWorkspaces()
	ws := f.AddWorkspace("proj", "feat")
	keep := "keep me"
	if err := f.SetMetadata(context.Background(), ws.Path, "note", &keep); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Deps{Workspaces: f})
	e := h.u.openSettings().meta
	e.selectWorkspace(ws.Path)
	h.waitFor("the rows", func() bool { _, ok := e.rowOf["note"]; return ok })

	test.Tap(e.rowOf["note"].del)
	q := h.app.AskedQuestion("Delete note?")
	if q == nil {
		t.Fatal("Delete removed the key without asking")
	}
	if !strings.Contains(q.Message.Text, "note") {
		t.Errorf("the question does not name the key: %q", q.Message.Text)
	}
	test.Tap(q.Cancel)
	h.drain()
	if h.app.AskedQuestion("Delete note?") != nil {
		t.Error("Cancel left the question open")
	}
	md, _ := f.Metadata(context.Background(), ws.Path)
	if v := md["note"]; v != keep {
		t.Fatalf("Cancel deleted the key (now %q)", v)
	}

	test.Tap(e.rowOf["note"].del)
	test.Tap(h.app.AskedQuestion("Delete note?").OK)
	h.waitFor("the key gone", func() bool { _, ok := e.rowOf["note"]; return !ok })
}

func TestEveryDialogHasCancelAndClosesOnEscape(t *testing.T) {
	f := uitest.NewWorkspaces()
	ws := f.AddWorkspace("proj", "feat")
	tests := []struct {
		title string
		open  func(u *UI) fyne.Focusable // the entry to focus, if any
	}{
		{"New workspace", func(u *UI) fyne.Focusable { return u.openCreate("").name }},
		{"Add project", func(u *UI) fyne.Focusable { return u.openAddProject().path }},
		{"Delete workspace", func(u *UI) fyne.Focusable { u.openDelete(ws); return nil }},
		{"CodeHydra settings", func(u *UI) fyne.Focusable { return u.openSettings().ocBin }},
		{"CodeHydra settings", func(u *UI) fyne.Focusable { return u.openSettings().meta.value }},
		{"CodeHydra: Quit?", func(u *UI) fyne.Focusable { u.confirm("Quit?", "a is working.", "Quit anyway", func() {}); return nil }},
	}
	for _, tt := range tests {
		for _, how := range []string{"Cancel", "Escape"} {
			h := newHarness(t, Deps{Workspaces: f})
			focus := tt.open(h.u)
			h.drain()
			w := h.app.Window(tt.title)
			if w == nil {
				t.Fatalf("%s did not open", tt.title)
			}
			cancel := uitest.FindButton(w.Content(), "Cancel")
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
				uitest.PressEscape(w)
			}
			if h.windowOpen(tt.title) {
				t.Errorf("%s (focus on %T) stays open after %s", tt.title, focus, how)
			}
		}
	}
}

func TestAnErrorWindowClosesOnEscape(t *testing.T) {
	h := newHarness(t, Deps{Workspaces: uitest.NewWorkspaces()})
	h.u.ShowError("Open agent", errors.New("no browser"))
	w := h.app.Window("CodeHydra: Open agent")
	if w == nil || uitest.FindButton(w.Content(), "Close") == nil {
		t.Fatal("no error window with Close")
	}
	uitest.PressEscape(w)
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

// Quit's half of this is app's TestQuitActsAtOnceWhenNoAgentIsBusy.
func TestRestartNowActsAtOnceWhenNoAgentIsBusy(t *testing.T) {
	f, _, agents := uitest.OneWorkspace(uitest.AgentIdle)
	restarts := 0
	h := newHarness(t, Deps{Workspaces: f, Agents: agents, Restart: func() { restarts++ }})
	w := h.u.openSettings()
	test.Tap(w.restartNow)
	if h.app.Quits() != 1 || restarts != 1 || len(h.u.windows) != 1 {
		t.Errorf("with idle agents: %d quits, %d restarts, windows %v; want 1, 1 and no question", h.app.Quits(), restarts, h.u.windows)
	}
}

func TestRestartNowAndRotateTokenNameTheBusyAgents(t *testing.T) {
	f, _, agents := uitest.OneWorkspace(uitest.AgentBusy)
	restarts := 0
	h := newHarness(t, Deps{Workspaces: f, Agents: agents, Restart: func() { restarts++ }, RotateToken: func() error { return nil }})
	// The tray names feat busy (app's TestTrayTellsTheWindowsWhichAgentsAreBusy).
	h.tray.setBusy("feat")
	w := h.u.openSettings()

	test.Tap(w.restartNow)
	q := h.app.AskedQuestion("Restart?")
	if q == nil || !strings.HasPrefix(q.Message.Text, "feat is working. Restart anyway?") {
		t.Fatalf("Restart now did not ask, naming feat: %+v", q)
	}
	uitest.PressEscape(q.Win)
	if restarts != 0 || h.app.Quits() != 0 {
		t.Fatalf("Escape restarted (%d) or quit (%d)", restarts, h.app.Quits())
	}
	test.Tap(w.restartNow)
	test.Tap(h.app.AskedQuestion("Restart?").OK)
	if restarts != 1 || h.app.Quits() != 1 {
		t.Errorf("Restart anyway: %d restarts, %d quits", restarts, h.app.Quits())
	}

	test.Tap(w.rotate)
	if q := h.app.AskedQuestion("Rotate the access token?"); q == nil || !strings.Contains(q.Message.Text, "feat is working.") {
		t.Errorf("Rotate token does not name the busy agent: %+v", q)
	}
}

func TestDeleteWarningNamesTheChangedAndUntrackedFiles(t *testing.T) {
	repo := testenv.GitRepo(t, "repo")
	m := uitest.RealManager(t, repo)
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
	f := uitest.NewWorkspaces()
	ws := f.AddWorkspace("proj", "feat")
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
