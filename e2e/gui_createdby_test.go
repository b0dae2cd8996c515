//go:build linux

package e2e

import (
	"image"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"codehydra/internal/testenv"
)

// TestGUITrayNamesTheWorkspaceWhoseAgentCreatedAWorkspace runs the built
// app under Xvfb with xfce4-panel and reads the tray menu over D-Bus: a
// workspace whose createdBy metadata names another workspace (what
// workspace_create records when an agent calls it) says "created by
// <that workspace>" as the first line of its submenu; one the user made
// does not.
func TestGUITrayNamesTheWorkspaceWhoseAgentCreatedAWorkspace(t *testing.T) {
	bin, repo := guiSetup(t)
	var creator string
	for _, wt := range strings.Split(testenv.Git(t, repo, "worktree", "list", "--porcelain"), "\n") {
		if p, ok := strings.CutPrefix(wt, "worktree "); ok && strings.HasSuffix(p, "feature-x") {
			creator = p
		}
	}
	child := filepath.Join(t.TempDir(), "child")
	testenv.Git(t, repo, "worktree", "add", "-q", "-b", "child", child)
	testenv.Git(t, repo, "config", "branch.child.codehydra.createdBy", creator)

	d := startGUIDesktop(t)
	conn := startGUIPanel(t, d)
	a := startGUIApp(t, bin, d, "--project", repo)
	tray := a.tray(conn)
	guiWaitUntil(t, 60*time.Second, "the child's submenu to name its creator", a.exited, func() (bool, string) {
		menu, err := tray.layout()
		if err != nil {
			return false, err.Error()
		}
		c, x := trayWorkspace(menu, "child"), trayWorkspace(menu, "feature-x")
		if c == nil || x == nil {
			return false, menu.String()
		}
		return c.children[0].label == "created by feature-x" && !strings.HasPrefix(x.children[0].label, "created by"), menu.String()
	})
	shotChildMenu(t, d, filepath.Join(guiShotDir(t), "created-by.png"))
}

// shotChildMenu opens the tray menu with a right-click on the panel's
// icon, keys into the second entry's submenu (the child's: the project
// comes first) and takes a screenshot for a person to look at.
func shotChildMenu(t *testing.T, d *guiDesktop, path string) {
	t.Helper()
	d.xdotool(t, "mousemove", "--sync", "12", "16", "click", "3")
	var st shotStats
	if !testenv.Poll(10*time.Second, 200*time.Millisecond, func() bool {
		var err error
		st, err = d.screenshot(path, image.Rect(0, 40, 300, 300))
		return err == nil && st.drawn()
	}) {
		t.Logf("no tray menu drawn after a right-click on its icon (%s)", st)
		return
	}
	// GTK takes the keyboard a moment after the menu shows.
	testenv.Poll(10*time.Second, 500*time.Millisecond, func() bool {
		d.xdotool(t, "key", "Escape")
		d.xdotool(t, "mousemove", "--sync", "12", "16", "click", "3")
		time.Sleep(300 * time.Millisecond)
		d.xdotool(t, "key", "Down", "Down", "Right")
		var err error
		st, err = d.screenshot(path, image.Rect(340, 90, 700, 300))
		return err == nil && st.covered > 0.05
	})
	t.Logf("screenshot of the child's submenu: %s", path)
	d.xdotool(t, "key", "Escape", "Escape")
}
