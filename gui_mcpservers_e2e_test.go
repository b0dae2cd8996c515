package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
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
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	writeSettings(t, string(set))
	d := startGUIDesktop(t)
	conn := startGUIPanel(t, d)
	a := startGUIApp(t, bin, d, "--project", repo)
	tray := &trayMenu{conn: conn, name: fmt.Sprintf("org.kde.StatusNotifierItem-%d-1", a.pid)}
	shots := guiShotDir(t)

	guiWaitUntil(t, 60*time.Second, "server-everything to start at launch", a.exited, func() (bool, string) {
		return processesWith(t, mark) > 0, ""
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
	guiShot(t, d, general, win, a.exited)
	d.xdotool(t, "mousemove", "--sync", fmt.Sprint(win.rect.Min.X+mcpServersTabX), fmt.Sprint(win.rect.Min.Y+mcpServersTabY), "click", "1")
	// The tab has nothing to wait for over D-Bus; a refresh of the states
	// comes every 2 s.
	time.Sleep(3 * time.Second)
	path := filepath.Join(shots, "settings-mcp-servers.png")
	guiShot(t, d, path, win, a.exited)
	before, _ := os.ReadFile(general)
	after, _ := os.ReadFile(path)
	if bytes.Equal(before, after) {
		t.Errorf("the click at the MCP servers tab changed nothing in the window (%s)", path)
	}
	t.Logf("screenshot of Settings → MCP servers: %s", path)

	// Add server… (at the bottom right) shows the form.
	d.xdotool(t, "mousemove", "--sync", fmt.Sprint(win.rect.Max.X-50), fmt.Sprint(win.rect.Max.Y-22), "click", "1")
	time.Sleep(time.Second)
	form := filepath.Join(shots, "settings-mcp-server-form.png")
	guiShot(t, d, form, win, a.exited)
	t.Logf("screenshot of the new server form: %s", form)
	tray.click(t, app.LabelQuit)
	guiWaitExit(t, a.exited, "Quit")
	if n := processesWith(t, mark); n != 0 {
		t.Errorf("%d processes of server-everything are left after Quit", n)
	}
}
