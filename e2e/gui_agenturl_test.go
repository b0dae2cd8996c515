package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"codehydra/app"
	"codehydra/internal/paths"
	"codehydra/internal/testenv"
)

// TestGUIOpenAgentWithoutABrowserShowsTheAddress: on a desktop where
// neither $BROWSER nor xdg-open can start a browser, "Open agent in
// browser" shows the agent's address in a small window with a copy button,
// not a raw exec error. The app is the real binary with the fake opencode
// as its agents, run with a PATH that holds git and nothing else.
func TestGUIOpenAgentWithoutABrowserShowsTheAddress(t *testing.T) {
	bin, repo := guiSetup(t)
	fake := fakeOpencode(t)
	testenv.WriteSettings(t, fmt.Sprintf(`{"opencodeBin": %q}`, fake))
	pathDir := t.TempDir()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(git, filepath.Join(pathDir, "git")); err != nil {
		t.Fatal(err)
	}

	d := startGUIDesktop(t)
	var env []string
	for _, kv := range d.env {
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "BROWSER=") {
			env = append(env, kv)
		}
	}
	d.env = append(env, "PATH="+pathDir)
	conn := startGUIPanel(t, d)
	a := startGUIApp(t, bin, d, "--project", repo)
	tray := a.tray(conn)

	guiWaitUntil(t, 60*time.Second, "feature-x's agent to be ready", a.exited, func() (bool, string) {
		menu, err := tray.layout()
		if err != nil {
			return false, err.Error()
		}
		ws := trayWorkspace(menu, "feature-x")
		if ws == nil {
			return false, menu.String()
		}
		open := ws.find(app.LabelOpenAgent)
		return strings.Contains(ws.label, "(idle)") && open != nil && open.enabled, menu.String()
	})
	tray.click(t, app.LabelOpenAgent)

	const title = "CodeHydra: " + app.LabelOpenAgent
	win := d.waitWindow(t, title, a.exited)
	shot := filepath.Join(guiShotDir(t), "open-agent-no-browser.png")
	guiWaitUntil(t, 20*time.Second, "the address window to be drawn", a.exited, func() (bool, string) {
		st, err := d.screenshot(shot, win.rect)
		if err != nil {
			return false, err.Error()
		}
		return st.drawn(), fmt.Sprintf("%s in the window's area of %s", st, shot)
	})

	logText, _ := os.ReadFile(paths.LogFile())
	if !strings.Contains(string(logText), "no browser could be opened") || !strings.Contains(string(logText), "xdg-open") {
		t.Errorf("the log does not say that no browser could be opened:\n%s", logText)
	}
	if regexp.MustCompile(`opencode:[^@\s]+@127\.0\.0\.1`).Match(logText) {
		t.Errorf("the log holds the agent's credential URL:\n%s", logText)
	}
	entries, _ := os.ReadDir(paths.RuntimeDir())
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "open-agent-") {
			t.Errorf("the page of a failed open is left: %s", e.Name())
		}
	}
}
