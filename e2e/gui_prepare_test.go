package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"codehydra/app"
	"codehydra/internal/testenv"
)

// TestGUITrayStartsTheAgentOfAFailedSetupAnyway runs the built binary
// under Xvfb with the real xfce4-panel, on a project whose setup fails. A
// workspace made in the New workspace window stays; the window stays open
// (it says why, with Retry setup and Start agent anyway), and so does the
// tray: the workspace's submenu leads with the setup's reason and its last
// output, then the two items. "Start agent anyway" in the tray starts the
// agent (the fake opencode), which then goes idle, and the window, whose
// question is answered, closes. The screenshots (the window, the tray
// submenu, Settings → Projects) are for a person to look at.
func TestGUITrayStartsTheAgentOfAFailedSetupAnyway(t *testing.T) {
	bin, repo := guiSetup(t)
	fake := fakeOpencode(t)
	writeSetupSettings(t, fake, repo, `sh -c "echo npm ERR! Missing script: ci; exit 3"`)
	d := startGUIDesktop(t)
	conn := startGUIPanel(t, d)
	t.Cleanup(func() { killAgents(t) })
	a := startGUIApp(t, bin, d, "--project", repo)
	tray := a.tray(conn)
	shots := guiShotDir(t)
	guiWaitUntil(t, 60*time.Second, "the tray menu to show the project", a.exited, func() (bool, string) {
		menu, err := tray.layout()
		return err == nil && menu.find(filepath.Base(repo)) != nil, menu.String()
	})

	// "broken" sorts before feature-x: it is the menu's second enabled
	// item, after the project.
	tray.click(t, app.LabelNewWorkspace)
	dialog := d.waitWindow(t, "New workspace", a.exited)
	d.xdotool(t, "windowfocus", "--sync", dialog.id)
	d.xdotool(t, "type", "--delay", "20", "broken")
	guiWaitUntil(t, 30*time.Second, "the New workspace window to create broken", a.exited, func() (bool, string) {
		list := testenv.Git(t, repo, "worktree", "list", "--porcelain") + "\n"
		if strings.Contains(list, "branch refs/heads/broken\n") {
			return true, ""
		}
		d.xdotool(t, "windowfocus", "--sync", dialog.id)
		d.xdotool(t, "key", "Return")
		return false, list
	})

	var entry *trayItem
	guiWaitUntil(t, 30*time.Second, "the tray to offer the failed setup's choices", a.exited, func() (bool, string) {
		menu, err := tray.layout()
		if err != nil {
			return false, err.Error()
		}
		entry = trayWorkspace(menu, "broken")
		return entry != nil && entry.find(app.LabelStartAnyway) != nil, menu.String()
	})
	if want := app.PhaseFailed.Mark() + " broken (failed)"; entry.label != want {
		t.Errorf("the entry is %q, want %q", entry.label, want)
	}
	if got := entry.children[0].label; got != `⚠ setup "sh -c 'echo npm ERR! Missing script: ci; exit 3'" failed with exit code 3` {
		t.Errorf("the submenu starts with %q, want the setup's reason", got)
	}
	if got := entry.children[1].label; got != "    last output: npm ERR! Missing script: ci" {
		t.Errorf("the second line is %q, want the setup's last output", got)
	}
	wantItems(t, entry, app.LabelRetrySetup, app.LabelStartAnyway)

	// The window stays open with the reason and the same two choices.
	win, err := d.findWindow("New workspace")
	if err != nil {
		t.Fatalf("the New workspace window closed although the setup failed: %v", err)
	}
	guiShot(t, d, filepath.Join(shots, "failed-setup-window.png"), win, a.exited)
	// The window would cover the panel's icon, which shotTrayMenu clicks,
	// and the area where the menu opens.
	d.xdotool(t, "windowmove", "--sync", win.id, "860", "400")
	shotTrayMenu(t, d, filepath.Join(shots, "failed-setup-menu.png"), 2)
	// Only the answer below may close the window (an Escape meant for the
	// menu once did, and hid that the answer did not).
	if !d.hasWindow("New workspace") {
		t.Fatal("the New workspace window closed before Start agent anyway was chosen")
	}

	tray.click(t, app.LabelStartAnyway)
	guiWaitUntil(t, 60*time.Second, "the agent of broken to start and go idle", a.exited, func() (bool, string) {
		menu, err := tray.layout()
		if err != nil {
			return false, err.Error()
		}
		entry = trayWorkspace(menu, "broken")
		return entry != nil && strings.HasSuffix(entry.label, "(idle)") && entry.find(app.LabelStartAnyway) == nil, menu.String()
	})
	guiWaitUntil(t, 10*time.Second, "the New workspace window to close", a.exited, func() (bool, string) {
		return !d.hasWindow("New workspace"), ""
	})

	tray.click(t, app.LabelSettings)
	shotProjectsTab(t, d, a, filepath.Join(shots, "settings-projects.png"))
	tray.click(t, app.LabelQuit)
	guiWaitExit(t, a.exited, "Quit")
}

// shotProjectsTab clicks the Projects tab of the open settings window
// (the third, at its top left) and takes a screenshot into path for a
// person to look at.
func shotProjectsTab(t *testing.T, d *guiDesktop, a *guiApp, path string) {
	t.Helper()
	win := d.waitWindow(t, "CodeHydra settings", a.exited)
	before := guiShot(t, d, path, win, a.exited)
	// The tab switch has nothing to tell over D-Bus: the window's pixels do.
	d.xdotool(t, "mousemove", "--sync", fmt.Sprint(win.rect.Min.X+projectsTabX), fmt.Sprint(win.rect.Min.Y+projectsTabY), "click", "1")
	guiShotChanged(t, d, path, win, a.exited, before)
	t.Logf("screenshot of Settings → Projects: %s", path)
}

// Where the Projects tab is in the settings window, from its top left.
const projectsTabX, projectsTabY = 200, 20

// writeSetupSettings writes settings that run the agents with fake and
// give repo a setup: copy .env*, then run setup.
func writeSetupSettings(t *testing.T, fake, repo, setup string) {
	t.Helper()
	set, err := json.Marshal(map[string]any{
		"opencodeBin": fake,
		"projects":    []string{repo},
		"projectSetup": map[string]any{repo: map[string]any{
			"copy":  []string{".env*"},
			"setup": setup,
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	testenv.WriteSettings(t, string(set))
}
