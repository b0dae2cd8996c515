//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"codehydra/app"
	"codehydra/internal/paths"
	"codehydra/internal/testenv"
	"codehydra/opencode"
)

// TestGUITrayShowsStartingIdleAndARetryingAgent runs the built app with
// the real opencode under Xvfb and xfce4-panel, a real StatusNotifier
// host, and reads the tray menu over D-Bus as the panel does. Each agent
// shows "starting" until it is ready, then "idle", also the agent of a
// workspace made while the app runs. An agent whose model cannot be
// reached (its provider points at a closed port) shows "retrying", not
// "busy", with opencode's reason and attempt as the first line of its
// submenu and in the tooltip's counts.
func TestGUITrayShowsStartingIdleAndARetryingAgent(t *testing.T) {
	bin, repo := guiSetupWithOpencode(t)
	d := startGUIDesktop(t)
	startGUIPanel(t, d)
	// The agents' model: a provider on a port where nothing listens.
	dead := fmt.Sprintf("http://127.0.0.1:%d/v1", testenv.FreePort(t))
	d.env = append(d.env, opencodeModelEnv(t, dead, nil, nil)...)
	// If the test ends before Quit, the app is killed, which leaves
	// its agents (process groups of their own) running: stop them too.
	t.Cleanup(func() { killAgents(t) })
	a := startGUIApp(t, bin, d, "--project", repo)
	conn, err := dbus.Connect(d.busAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tray := a.tray(conn)

	// (a) The agent found at launch starts, then is idle.
	waitPhases(t, tray, a, "feature-x", app.PhaseStarting, app.PhaseIdle)

	// (b) So does the agent of a workspace made while the app runs.
	create := exec.Command(bin, "workspace", "create", "fresh", "--project", repo)
	create.Env = d.env
	if out, err := create.CombinedOutput(); err != nil {
		t.Fatalf("workspace create: %v\n%s", err, out)
	}
	waitPhases(t, tray, a, "fresh", app.PhaseStarting, app.PhaseIdle)

	// (c) A turn of feature-x's agent cannot reach the model.
	promptAgent(t, agentRecord(t, worktreeOf(t, repo, "feature-x")), "Say hello")
	// opencode reports the session busy again during each new attempt, so
	// the state goes retrying → busy → retrying; wait for a moment when the
	// menu and the tooltip both tell it.
	var entry *trayItem
	var tip string
	guiWaitUntil(t, 90*time.Second, "feature-x to show retrying, in the menu and the tooltip", a.exited, func() (bool, string) {
		menu, err := tray.layout()
		if err != nil {
			return false, err.Error()
		}
		entry = trayWorkspace(menu, "feature-x")
		if entry == nil || !strings.HasSuffix(entry.label, "("+string(app.PhaseRetrying)+")") {
			return false, menu.String()
		}
		tip = trayTooltip(t, tray)
		return strings.Contains(tip, "1 retrying") && !strings.Contains(tip, "busy"), "tooltip " + tip
	})
	if want := app.PhaseRetrying.Mark() + " feature-x (retrying)"; entry.label != want {
		t.Errorf("feature-x's entry is %q, want %q", entry.label, want)
	}
	if first := entry.children[0].label; !strings.HasPrefix(first, "⚠ retrying (attempt ") || !strings.Contains(first, "onnect") {
		t.Errorf("feature-x's submenu starts with %q, want opencode's reason and attempt", first)
	}
	shotTrayMenu(t, d, filepath.Join(guiShotDir(t), "retrying-menu.png"), 2)

	// Quit stops the agents, the retrying one too. Between two attempts
	// opencode reports the session busy, and Quit then asks first: the
	// test answers "Quit anyway" (Tab past Cancel, Space).
	tray.click(t, app.LabelQuit)
	testenv.Poll(30*time.Second, 200*time.Millisecond, func() bool {
		select {
		case err := <-a.exited:
			a.exited <- err
			return true
		default:
		}
		if w, err := d.findWindow("CodeHydra: Quit?"); err == nil {
			_, _ = d.run("xdotool", "windowfocus", "--sync", w.id)
			_, _ = d.run("xdotool", "key", "Tab", "Tab", "space")
		}
		return false
	})
	guiWaitExit(t, a.exited, "Quit")
	if recs := agentRecords(t); len(recs) != 0 {
		t.Errorf("agents still recorded after Quit: %+v", recs)
	}
}

// agentRecords are the records of the agents that run (or ran, if the
// app was killed).
func agentRecords(t *testing.T) []opencode.AgentRecord {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(paths.AgentsDir(), "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var recs []opencode.AgentRecord
	for _, f := range files {
		var rec opencode.AgentRecord
		if b, err := os.ReadFile(f); err == nil && json.Unmarshal(b, &rec) == nil {
			recs = append(recs, rec)
		}
	}
	return recs
}

// killAgents kills the process groups of the agents the app left.
func killAgents(t *testing.T) {
	for _, rec := range agentRecords(t) {
		if rec.PID > 0 {
			_ = syscall.Kill(-rec.PID, syscall.SIGKILL)
		}
	}
}

// waitPhases follows the named workspace's entry in the tray menu until it
// showed each of phases in turn (other phases may come in between, e.g.
// "no agent" before its agent is started).
func waitPhases(t *testing.T, tray *trayMenu, a *guiApp, name string, phases ...app.Phase) {
	t.Helper()
	var seen []string
	next := 0
	guiWaitUntil(t, 90*time.Second, fmt.Sprintf("%s to show %q in turn", name, phases), a.exited, func() (bool, string) {
		menu, err := tray.layout()
		if err != nil {
			return false, err.Error()
		}
		it := trayWorkspace(menu, name)
		if it == nil {
			return false, menu.String()
		}
		if len(seen) == 0 || seen[len(seen)-1] != it.label {
			seen = append(seen, it.label)
		}
		if strings.HasSuffix(it.label, "("+string(phases[next])+")") {
			next++
		}
		return next == len(phases), fmt.Sprintf("seen %q", seen)
	})
	t.Logf("%s showed %q", name, seen)
}

// worktreeOf is the path of the worktree of branch in repo.
func worktreeOf(t *testing.T, repo, branch string) string {
	t.Helper()
	var path string
	for _, line := range strings.Split(testenv.Git(t, repo, "worktree", "list", "--porcelain"), "\n") {
		if p, ok := strings.CutPrefix(line, "worktree "); ok {
			path = p
		}
		if line == "branch refs/heads/"+branch {
			return path
		}
	}
	t.Fatalf("no worktree of %s in %s", branch, repo)
	return ""
}

// promptAgent starts a turn in a new session of the agent's opencode, with
// the password from the agent's own environment.
func promptAgent(t *testing.T, rec opencode.AgentRecord, text string) {
	t.Helper()
	if rec.Port == 0 {
		t.Fatal("the agent has no port in its record")
	}
	password := environOf(t, rec.PID)["OPENCODE_SERVER_PASSWORD"]
	post := func(path string, body any, out any) {
		t.Helper()
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:"+strconv.Itoa(rec.Port)+path, bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.SetBasicAuth("opencode", password)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("POST %s: %s", path, resp.Status)
		}
		if out != nil {
			if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
				t.Fatalf("POST %s: %v", path, err)
			}
		}
	}
	var session struct {
		ID string `json:"id"`
	}
	post("/session", map[string]any{}, &session)
	post("/session/"+session.ID+"/prompt_async", map[string]any{"parts": []any{map[string]any{"type": "text", "text": text}}}, nil)
}

// trayTooltip is the title of the tray item's tooltip.
func trayTooltip(t *testing.T, tray *trayMenu) string {
	t.Helper()
	var tip struct {
		Icon   string
		Pixmap []struct {
			W, H int32
			Data []byte
		}
		Title, Text string
	}
	if err := tray.conn.Object(tray.name, "/StatusNotifierItem").StoreProperty("org.kde.StatusNotifierItem.ToolTip", &tip); err != nil {
		t.Fatalf("read the tooltip: %v", err)
	}
	return tip.Title
}

// shotTrayMenu opens the tray menu as a user does, with a right-click on
// the panel's icon (the only one, at its left end), keys into the submenu
// of its downs-th enabled item (2: the first project's first workspace),
// and takes a screenshot into path for a person to look at. It checks
// nothing: what the menu holds is read over D-Bus.
func shotTrayMenu(t *testing.T, d *guiDesktop, path string, downs int) {
	t.Helper()
	d.xdotool(t, "mousemove", "--sync", "12", "16", "click", "3")
	// The menu drops down below the panel, whose area is otherwise bare.
	below := image.Rect(0, 40, 400, 300)
	var st shotStats
	opened := testenv.Poll(10*time.Second, 200*time.Millisecond, func() bool {
		var err error
		st, err = d.screenshot(path, below)
		return err == nil && st.drawn()
	})
	if !opened {
		t.Logf("no tray menu drawn below the panel after a right-click on its icon (%s)", st)
		return
	}
	// GTK takes the keyboard a moment after the menu shows, and nothing
	// on the screen tells when; keys sent twice would walk past the
	// workspace, so they are sent once, after that moment. The submenu
	// then opens beside the menu, where the screen was bare.
	time.Sleep(time.Second)
	d.xdotool(t, append([]string{"key"}, append(slices.Repeat([]string{"Down"}, downs), "Right")...)...)
	beside := image.Rect(450, 40, 900, 300)
	if !testenv.Poll(10*time.Second, 200*time.Millisecond, func() bool {
		var err error
		st, err = d.screenshot(path, beside)
		return err == nil && st.covered > 0.05
	}) {
		t.Logf("no submenu drawn beside the tray menu (%s)", st)
	}
	t.Logf("screenshot of the open tray menu: %s", path)
	// One Escape closes the submenu, the next the menu; one more would
	// reach the focused window (and close a dialog that answers Escape),
	// so each goes only while the menu is still drawn.
	scratch := filepath.Join(t.TempDir(), "menu.png")
	for range 3 {
		d.xdotool(t, "key", "Escape")
		if testenv.Poll(2*time.Second, 100*time.Millisecond, func() bool {
			var err error
			st, err = d.screenshot(scratch, below)
			return err == nil && !st.drawn()
		}) {
			return
		}
	}
	t.Logf("the tray menu is still drawn after three Escapes (%s)", st)
}
