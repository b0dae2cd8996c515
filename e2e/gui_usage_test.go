//go:build linux

package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"codehydra/app"
	"codehydra/internal/fakemodel"
)

// TestGUITrayShowsWhatAnAgentCostAndTheDaysTotal runs the built app with
// the real opencode and a scripted model whose answers report 10 input
// and 5 output tokens, priced so that each costs 2 dollars, under Xvfb
// and xfce4-panel. After one turn of feature-x's agent, the first line of
// its submenu says what it used, and the tooltip gives the day's total.
func TestGUITrayShowsWhatAnAgentCostAndTheDaysTotal(t *testing.T) {
	bin, repo := guiSetupWithOpencode(t)
	// Prices in US dollars per million tokens, as opencode takes them.
	modelEnv := startFakeModel(t, &fakemodel.Server{}, map[string]any{"cost": map[string]any{"input": 100_000, "output": 200_000}}, nil)
	d := startGUIDesktop(t)
	startGUIPanel(t, d)
	d.env = append(d.env, modelEnv...)
	t.Cleanup(func() { killAgents(t) })
	a := startGUIApp(t, bin, d, "--project", repo)
	conn, err := dbus.Connect(d.busAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tray := a.tray(conn)
	waitPhases(t, tray, a, "feature-x", app.PhaseStarting, app.PhaseIdle)

	promptAgent(t, agentRecord(t, worktreeOf(t, repo, "feature-x")), "Say hello")
	const line, day = "Used 10 tokens in, 5 out · $2.00", "today 15 tokens, $2.00"
	var first, tip string
	guiWaitUntil(t, 120*time.Second, "feature-x's submenu and the tooltip to tell the turn's usage", a.exited, func() (bool, string) {
		menu, err := tray.layout()
		if err != nil {
			return false, err.Error()
		}
		entry := trayWorkspace(menu, "feature-x")
		if entry == nil || len(entry.children) == 0 {
			return false, menu.String()
		}
		first, tip = entry.children[0].label, trayTooltip(t, tray)
		return first == line && strings.HasSuffix(tip, ", "+day), "first line " + first + ", tooltip " + tip
	})
	shotTrayMenu(t, d, filepath.Join(guiShotDir(t), "usage-menu.png"), 2)
	t.Logf("tooltip: %s", tip)
}
