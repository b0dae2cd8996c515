package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"codehydra/app"
	"codehydra/internal/testenv"
	"codehydra/opencode"
)

// TestGUIQuitWithABusyAgentAsksAndEscapeOrCancelKeepTheAppRunning runs the
// real binary on a test desktop with the fake opencode as the agent of
// feature-x, makes that agent busy, and checks that Quit asks first; that
// Escape and Cancel close the question and leave the app running; that the
// delete dialog names the changed files and closes on Escape; and that
// Quit acts at once once the agent is idle.
func TestGUIQuitWithABusyAgentAsksAndEscapeOrCancelKeepTheAppRunning(t *testing.T) {
	bin, repo := guiSetup(t)
	fake := fakeOpencode(t)
	testenv.WriteSettings(t, fmt.Sprintf(`{"opencodeBin": %q}`, fake))
	d := startGUIDesktop(t)
	conn := startGUIPanel(t, d)
	a := startGUIApp(t, bin, d, "--project", repo)
	tray := a.tray(conn)
	shots := guiShotDir(t)

	wsPath := guiWorktree(t, repo, "feature-x")
	var rec opencode.AgentRecord
	guiWaitUntil(t, 60*time.Second, "feature-x's agent to listen", a.exited, func() (bool, string) {
		rec = agentRecord(t, wsPath)
		return rec.Port != 0, fmt.Sprintf("%+v", rec)
	})
	emitStatus := func(typ string) {
		b, _ := json.Marshal(map[string]any{"type": "session.status", "properties": map[string]any{
			"sessionID": "ses_e2e", "status": map[string]any{"type": typ}}})
		resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/fake/emit", rec.Port), "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	waitPhase := func(phase app.Phase) *trayItem {
		var it *trayItem
		guiWaitUntil(t, 30*time.Second, "feature-x to show "+string(phase), a.exited, func() (bool, string) {
			menu, err := tray.layout()
			if err != nil {
				return false, err.Error()
			}
			// The menu is rebuilt item by item over D-Bus: wait for the
			// submenu's last item too, not just the relabelled entry.
			it = trayWorkspace(menu, "feature-x")
			return it != nil && strings.HasSuffix(it.label, "("+string(phase)+")") && it.find(app.LabelDelete) != nil, menu.String()
		})
		return it
	}
	emitStatus("busy")
	ws := waitPhase(app.PhaseBusy)

	// Quit asks, naming the busy agent; Escape closes the question.
	tray.click(t, app.LabelQuit)
	q := d.waitWindow(t, "CodeHydra: Quit?", a.exited)
	guiShot(t, d, filepath.Join(shots, "busy-quit.png"), q, a.exited)
	d.xdotool(t, "windowfocus", "--sync", q.id)
	d.xdotool(t, "key", "Escape")
	guiWaitUntil(t, 10*time.Second, "Escape to close the question", a.exited, func() (bool, string) {
		return !d.hasWindow("CodeHydra: Quit?"), ""
	})

	// Cancel (the first button: Tab to it, Space presses it) too.
	tray.click(t, app.LabelQuit)
	q = d.waitWindow(t, "CodeHydra: Quit?", a.exited)
	d.xdotool(t, "windowfocus", "--sync", q.id)
	d.xdotool(t, "key", "Tab", "space")
	guiWaitUntil(t, 10*time.Second, "Cancel to close the question", a.exited, func() (bool, string) {
		return !d.hasWindow("CodeHydra: Quit?"), ""
	})
	if _, err := tray.layout(); err != nil {
		t.Fatalf("the app does not answer after Cancel: %v", err)
	}

	// The delete dialog names the changed and untracked files; Escape
	// closes it and deletes nothing.
	testenv.WriteFile(t, filepath.Join(wsPath, "README.md"), "changed\n")
	testenv.WriteFile(t, filepath.Join(wsPath, "notes.txt"), "mine\n")
	del := ws.find(app.LabelDelete)
	if del == nil {
		t.Fatalf("no %s under feature-x", app.LabelDelete)
	}
	if call := tray.conn.Object(tray.name, dbusmenuPath).Call(dbusmenuIface+".Event", 0, del.id, "clicked", dbus.MakeVariant(int32(0)), uint32(0)); call.Err != nil {
		t.Fatal(call.Err)
	}
	dw := d.waitWindow(t, "Delete workspace", a.exited)
	guiShot(t, d, filepath.Join(shots, "delete-warning.png"), dw, a.exited)
	d.xdotool(t, "windowfocus", "--sync", dw.id)
	d.xdotool(t, "key", "Escape")
	guiWaitUntil(t, 10*time.Second, "Escape to close the delete dialog", a.exited, func() (bool, string) {
		return !d.hasWindow("Delete workspace"), ""
	})
	if !testenv.Exists(wsPath) {
		t.Fatal("Escape deleted the workspace")
	}

	// Settings says why a field is wrong right under it as it is typed,
	// and closes on Escape with the focus in that field.
	tray.click(t, app.LabelSettings)
	sw := d.waitWindow(t, "CodeHydra settings", a.exited)
	d.xdotool(t, "windowfocus", "--sync", sw.id)
	// The OpenCode binary field is the fifth stop: the two port choices
	// have two radio buttons each, and their port entries are off.
	d.xdotool(t, "key", "Tab", "Tab", "Tab", "Tab", "Tab")
	d.xdotool(t, "key", "ctrl+a")
	d.xdotool(t, "type", "--delay", "20", "relative/opencode")
	guiShot(t, d, filepath.Join(shots, "settings-reason.png"), sw, a.exited)
	d.xdotool(t, "key", "Escape")
	guiWaitUntil(t, 10*time.Second, "Escape to close Settings", a.exited, func() (bool, string) {
		return !d.hasWindow("CodeHydra settings"), ""
	})

	// With the agent idle, Quit quits at once.
	emitStatus("idle")
	waitPhase(app.PhaseIdle)
	tray.click(t, app.LabelQuit)
	guiWaitExit(t, a.exited, "Quit")
}

// guiShot waits until win is drawn in a screenshot at path.
func guiShot(t *testing.T, d *guiDesktop, path string, win guiWindow, exited chan error) shotStats {
	t.Helper()
	var st shotStats
	guiWaitUntil(t, 20*time.Second, "a drawn "+filepath.Base(path), exited, func() (bool, string) {
		var err error
		if st, err = d.screenshot(path, win.rect); err != nil {
			return false, err.Error()
		}
		return st.drawn(), st.String()
	})
	return st
}

// guiShotChanged takes a screenshot of win into path once what it shows
// differs from from (a shot taken before a click) and two shots in a row
// agree: the click's effect, drawn. A click that changes nothing fails
// the test. A blinking text caret is neither a change nor a disagreement
// (see shotStats.differs): with the caret counted, a click that changed
// nothing passed whenever the caret's phase differed from from's, and a
// window with a focused entry could go on disagreeing with itself until
// the time ran out (shots taken half a second apart, as under load, see
// the caret lit and faded by turns).
func guiShotChanged(t *testing.T, d *guiDesktop, path string, win guiWindow, exited chan error, from shotStats) shotStats {
	t.Helper()
	var st, last shotStats
	guiWaitUntil(t, 20*time.Second, "a change in "+filepath.Base(path), exited, func() (bool, string) {
		last = st
		var err error
		if st, err = d.screenshot(path, win.rect); err != nil {
			return false, err.Error()
		}
		return st.drawn() && st.differs(from) && !st.differs(last), st.String()
	})
	return st
}

// guiWorktree is the path of repo's worktree named name, as git lists it.
func guiWorktree(t *testing.T, repo, name string) string {
	t.Helper()
	for _, line := range strings.Split(testenv.Git(t, repo, "worktree", "list", "--porcelain"), "\n") {
		if p, ok := strings.CutPrefix(line, "worktree "); ok && filepath.Base(p) == name {
			return p
		}
	}
	t.Fatalf("no worktree %s in %s", name, repo)
	return ""
}
