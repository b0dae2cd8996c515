package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"codehydra/app"
	"codehydra/internal/testenv"
)

// Where the MCP servers tab is in the settings window, from its top left
// (the fourth tab, after Projects).
const mcpServersTabX, mcpServersTabY = 290, 20

// TestGUISettingsMCPServersTabListsTheConfiguredServers runs the real
// binary under the real xfce4-panel with a real server-everything marked to
// start at launch and a server whose program does not exist; it opens
// Settings from the tray over D-Bus, switches to the MCP servers tab and
// takes a screenshot of the list for a person to look at.
func TestGUISettingsMCPServersTabListsTheConfiguredServers(t *testing.T) {
	bin, repo := guiSetup(t)
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	mark := "GWUI_E2E_SERVER=" + filepath.Base(t.TempDir())
	set, err := json.Marshal(map[string]any{
		"opencodeBin": "/nonexistent/opencode",
		"mcpServers": map[string]any{
			"everything": map[string]any{"command": every, "env": map[string]string{"GWUI_E2E_SERVER": mark[len("GWUI_E2E_SERVER="):]}, "startAtLaunch": true},
			"broken":     map[string]any{"command": "/nonexistent/mcp-server", "scope": "workspace", "startAtLaunch": true},
			// confine cannot hold on a shared server: listed, not started,
			// with the reason.
			"sharedfs": map[string]any{"command": every, "confine": true, "startAtLaunch": true},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	testenv.WriteSettings(t, string(set))
	d := startGUIDesktop(t)
	conn := startGUIPanel(t, d)
	a := startGUIApp(t, bin, d, "--project", repo)
	tray := a.tray(conn)
	shots := guiShotDir(t)

	guiWaitUntil(t, 60*time.Second, "server-everything to start at launch", a.exited, func() (bool, string) {
		return testenv.ProcessesWith(t, mark) > 0, ""
	})
	guiWaitUntil(t, 60*time.Second, "the tray menu", a.exited, func() (bool, string) {
		menu, err := tray.layout()
		if err != nil {
			return false, err.Error()
		}
		return menu.find(app.LabelSettings) != nil, menu.String()
	})
	tray.click(t, app.LabelSettings)
	win := d.waitWindow(t, "CodeHydra settings", a.exited)
	general := filepath.Join(shots, "settings-general.png")
	before := guiShot(t, d, general, win, a.exited)
	// The tab has nothing to tell over D-Bus: the window's pixels do.
	d.xdotool(t, "mousemove", "--sync", fmt.Sprint(win.rect.Min.X+mcpServersTabX), fmt.Sprint(win.rect.Min.Y+mcpServersTabY), "click", "1")
	path := filepath.Join(shots, "settings-mcp-servers.png")
	tab := guiShotChanged(t, d, path, win, a.exited, before)
	t.Logf("screenshot of Settings → MCP servers: %s", path)

	// Add server… (at the bottom right) shows the form.
	d.xdotool(t, "mousemove", "--sync", fmt.Sprint(win.rect.Max.X-50), fmt.Sprint(win.rect.Max.Y-22), "click", "1")
	form := filepath.Join(shots, "settings-mcp-server-form.png")
	guiShotChanged(t, d, form, win, a.exited, tab)
	t.Logf("screenshot of the new server form: %s", form)
	tray.click(t, app.LabelQuit)
	guiWaitExit(t, a.exited, "Quit")
	if n := testenv.ProcessesWith(t, mark); n != 0 {
		t.Errorf("%d processes of server-everything are left after Quit", n)
	}
}
