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

// TestGUITrayMarksAnUnconfinedAgentAndSaysWhy runs the built app with the
// fake opencode under Xvfb and xfce4-panel, with settings sandbox "off",
// and reads the tray over D-Bus as the panel does: the agent's entry says
// "unconfined", its submenu's first line says why, and the tooltip counts
// it. Then the Settings window opens on the sandbox's mode and what this
// system can confine.
func TestGUITrayMarksAnUnconfinedAgentAndSaysWhy(t *testing.T) {
	bin, repo := guiSetup(t)
	fake := fakeOpencode(t)
	testenv.WriteSettings(t, fmt.Sprintf(`{"opencodeBin": %q, "sandbox": "off"}`, fake))
	d := startGUIDesktop(t)
	conn := startGUIPanel(t, d)
	a := startGUIApp(t, bin, d, "--project", repo)
	tray := a.tray(conn)

	want := app.PhaseIdle.Mark() + " feature-x (idle, unconfined)"
	var entry *trayItem
	guiWaitUntil(t, 60*time.Second, "feature-x to show idle and unconfined", a.exited, func() (bool, string) {
		menu, err := tray.layout()
		if err != nil {
			return false, err.Error()
		}
		entry = trayWorkspace(menu, "feature-x")
		return entry != nil && entry.label == want, menu.String()
	})
	if first := entry.children[0]; first.label != "⚠ not confined: the sandbox is off in the settings" || first.enabled {
		t.Errorf("feature-x's submenu starts with %q (enabled %v), want why it is unconfined", first.label, first.enabled)
	}
	// The tooltip is set after the menu: wait for it too.
	guiWaitUntil(t, 10*time.Second, "the tooltip to count the unconfined agent", a.exited, func() (bool, string) {
		tip := trayTooltip(t, tray)
		return strings.Contains(tip, "1 unconfined"), "tooltip " + tip
	})
	shotTrayMenu(t, d, filepath.Join(guiShotDir(t), "unconfined-menu.png"), 2)

	tray.click(t, app.LabelSettings)
	win := d.waitWindow(t, "CodeHydra settings", a.exited)
	shot := filepath.Join(guiShotDir(t), "settings-sandbox.png")
	guiWaitUntil(t, 20*time.Second, "the settings window to be drawn", a.exited, func() (bool, string) {
		st, err := d.screenshot(shot, win.rect)
		if err != nil {
			return false, err.Error()
		}
		return st.drawn(), fmt.Sprintf("%s in %s", st, shot)
	})
}
