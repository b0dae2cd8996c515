//go:build linux

package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"codehydra/app"
	"codehydra/internal/testenv"
)

// TestGUIHibernateAndWakeFromTheTray runs the built app under Xvfb with
// xfce4-panel and the fake opencode as its agents, and clicks, over
// D-Bus as the panel does, *Hibernate* in feature-x's submenu: the
// workspace shows "☾ feature-x (hibernated)", the tooltip counts it, and
// no process of its agent is left. *Wake* brings the agent back to idle.
// Screenshots of the open menu in both states are taken for a person to
// look at.
func TestGUIHibernateAndWakeFromTheTray(t *testing.T) {
	bin, repo := guiSetup(t)
	fake := fakeOpencode(t)
	testenv.WriteSettings(t, fmt.Sprintf(`{"opencodeBin": %q}`, fake))
	var wsPath string
	for line := range strings.SplitSeq(testenv.Git(t, repo, "worktree", "list", "--porcelain"), "\n") {
		if p, ok := strings.CutPrefix(line, "worktree "); ok && strings.HasSuffix(p, "feature-x") {
			wsPath = p
		}
	}
	agentProcs := func() int { return testenv.ProcessesWith(t, "CODEHYDRA_WORKSPACE_PATH="+filepath.ToSlash(wsPath)) }

	d := startGUIDesktop(t)
	conn := startGUIPanel(t, d)
	a := startGUIApp(t, bin, d, "--project", repo)
	tray := a.tray(conn)
	shots := guiShotDir(t)

	waitEntry := func(what, label string) *trayItem {
		t.Helper()
		var entry *trayItem
		guiWaitUntil(t, 60*time.Second, what, a.exited, func() (bool, string) {
			menu, err := tray.layout()
			if err != nil {
				return false, err.Error()
			}
			entry = trayWorkspace(menu, "feature-x")
			return entry != nil && strings.HasPrefix(entry.label, label), menu.String()
		})
		return entry
	}
	entry := waitEntry("feature-x's agent to be idle", app.PhaseIdle.Mark()+" feature-x (idle")
	if it := entry.find(app.LabelHibernate); it == nil || !it.enabled {
		t.Fatalf("no enabled %q in feature-x's submenu", app.LabelHibernate)
	}
	if agentProcs() == 0 {
		t.Fatal("feature-x's agent runs no process before it is hibernated")
	}

	tray.click(t, app.LabelHibernate)
	entry = waitEntry("feature-x to show hibernated", app.PhaseHibernated.Mark()+" feature-x (hibernated")
	if it := entry.find(app.LabelWake); it == nil || !it.enabled {
		t.Errorf("no enabled %q in the hibernated workspace's submenu", app.LabelWake)
	}
	guiWaitUntil(t, 10*time.Second, "the tooltip to count the hibernated workspace", a.exited, func() (bool, string) {
		tip := trayTooltip(t, tray)
		return strings.Contains(tip, "1 hibernated"), "tooltip " + tip
	})
	if n := agentProcs(); n != 0 {
		t.Errorf("%d processes of the hibernated agent are left", n)
	}
	shotTrayMenu(t, d, filepath.Join(shots, "hibernated-menu.png"), 2)

	tray.click(t, app.LabelWake)
	entry = waitEntry("feature-x to be idle again", app.PhaseIdle.Mark()+" feature-x (idle")
	if it := entry.find(app.LabelHibernate); it == nil || !it.enabled {
		t.Errorf("no enabled %q after the wake", app.LabelHibernate)
	}
	if agentProcs() == 0 {
		t.Error("the woken agent runs no process")
	}
	guiWaitUntil(t, 10*time.Second, "the tooltip to count no hibernated workspace", a.exited, func() (bool, string) {
		tip := trayTooltip(t, tray)
		return !strings.Contains(tip, "hibernated"), "tooltip " + tip
	})
	shotTrayMenu(t, d, filepath.Join(shots, "woken-menu.png"), 2)
}
