package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"codehydra/app"
	"codehydra/internal/paths"
	"codehydra/internal/testenv"
)

// The secrets written out in the other clients' files of
// TestGUIImportAddsTheTickedServersWithReferencesAndNoCopiedSecret.
const (
	importDesktopSecret = "ghp_e2eDesktopSecret123"
	importCodeSecret    = "sntrys_e2eCodeSecret456"
)

// TestGUIImportAddsTheTickedServersWithReferencesAndNoCopiedSecret runs the
// real binary under the real xfce4-panel with a home folder holding the
// MCP servers of Claude Desktop, Claude Code (~/.claude.json and the
// project's .mcp.json), opencode and VS Code. Settings › MCP servers ›
// Import… lists them; the test ticks four from the keyboard, leaves "copy
// values" off and adds them: the settings file then has those four, with
// {env:} references where the files had references or secrets, and
// neither secret. Screenshots of each step are for a person to look at.
func TestGUIImportAddsTheTickedServersWithReferencesAndNoCopiedSecret(t *testing.T) {
	bin, repo := guiSetup(t)
	config := os.Getenv("XDG_CONFIG_HOME")
	testenv.WriteFile(t, filepath.Join(config, "Claude", "claude_desktop_config.json"), `{"mcpServers": {
  "github": {"command": "/nonexistent/server-github", "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "`+importDesktopSecret+`"}}}}`)
	testenv.WriteFile(t, filepath.Join(os.Getenv("HOME"), ".claude.json"), `{"numStartups": 3, "mcpServers": {
  "legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
  "sentry": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer `+importCodeSecret+`"}}}}`)
	testenv.WriteFile(t, filepath.Join(config, "opencode", "opencode.json"), `{"mcp": {
  "docs": {"type": "local", "command": ["/nonexistent/docs-mcp", "--stdio"], "environment": {"OPENAI_API_KEY": "{env:OPENAI_KEY}"}}}}`)
	testenv.WriteFile(t, filepath.Join(config, "Code", "User", "mcp.json"), `{
  "inputs": [{"type": "promptString", "id": "fetch-key", "description": "Fetch key", "password": true}],
  "servers": {"fetch": {"type": "stdio", "command": "/nonexistent/uvx", "args": ["mcp-server-fetch"], "env": {"FETCH_API_KEY": "${input:fetch-key}"}}}}`)
	testenv.WriteFile(t, filepath.Join(repo, ".mcp.json"), `{"mcpServers": {
  "tracker": {"type": "http", "url": "http://127.0.0.1:9/tracker", "headers": {"X-API-Key": "${TRACKER_KEY}"}}}}`)

	d := startGUIDesktop(t)
	conn := startGUIPanel(t, d)
	a := startGUIApp(t, bin, d, "--project", repo)
	tray := a.tray(conn)
	shots := guiShotDir(t)
	guiWaitUntil(t, 60*time.Second, "the tray menu", a.exited, func() (bool, string) {
		menu, err := tray.layout()
		if err != nil {
			return false, err.Error()
		}
		return menu.find(app.LabelQuit) != nil, menu.String()
	})
	tray.click(t, app.LabelSettings)
	win := d.waitWindow(t, "CodeHydra settings", a.exited)
	general := guiShot(t, d, filepath.Join(shots, "settings-general.png"), win, a.exited)
	d.click(t, win, mcpServersTabX, mcpServersTabY)
	tab := guiShotChanged(t, d, filepath.Join(shots, "settings-mcp-servers.png"), win, a.exited, general)
	d.click(t, win, win.rect.Dx()-150, win.rect.Dy()-23) // Import…, left of Add server…
	listed := guiShotChanged(t, d, filepath.Join(shots, "import-listed.png"), win, a.exited, tab)

	// Tab goes from tick to tick in the order the files are read (Claude
	// Desktop, ~/.claude.json, opencode, VS Code, then the project's
	// files), past legacy, which cannot be added (SSE): github, sentry,
	// docs, fetch, tracker; then "copy values", Back and Add.
	d.xdotool(t, "windowfocus", "--sync", win.id)
	d.xdotool(t, "key", "Tab", "space", "Tab", "space", "Tab", "Tab", "space", "Tab", "space")
	// The focus, on the last tick, brought the end of the list into sight.
	ticked := guiShotChanged(t, d, filepath.Join(shots, "import-ticked.png"), win, a.exited, listed)
	d.xdotool(t, "key", "Tab", "Tab", "Tab", "space")
	var set struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
	}
	var data []byte
	guiWaitUntil(t, 20*time.Second, "the ticked servers in the settings file", a.exited, func() (bool, string) {
		var err error
		if data, err = os.ReadFile(paths.SettingsFile()); err != nil {
			return false, err.Error()
		}
		set.MCPServers = nil
		return json.Unmarshal(data, &set) == nil && len(set.MCPServers) > 0, string(data)
	})
	guiShotChanged(t, d, filepath.Join(shots, "import-added.png"), win, a.exited, ticked)

	want := map[string]any{
		"github": map[string]any{"command": "/nonexistent/server-github",
			"env": map[string]any{"GITHUB_PERSONAL_ACCESS_TOKEN": "{env:GITHUB_PERSONAL_ACCESS_TOKEN}"}},
		"sentry": map[string]any{"url": "http://127.0.0.1:9/mcp",
			"headers": map[string]any{"Authorization": "Bearer {env:SENTRY_AUTHORIZATION}"}},
		"fetch": map[string]any{"command": "/nonexistent/uvx", "args": []any{"mcp-server-fetch"},
			"env": map[string]any{"FETCH_API_KEY": "{env:FETCH_KEY}"}},
		"tracker": map[string]any{"url": "http://127.0.0.1:9/tracker",
			"headers": map[string]any{"X-API-Key": "{env:TRACKER_KEY}"}},
	}
	got := map[string]any{}
	for name, raw := range set.MCPServers {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		got[name] = v
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the settings' mcpServers are\n%v\nwant the four ticked ones\n%v", got, want)
	}
	for _, secret := range []string{importDesktopSecret, importCodeSecret} {
		if strings.Contains(string(data), secret) {
			t.Errorf("the settings file holds the secret %s, with copy values off:\n%s", secret, data)
		}
	}

	// Back (before Add, which has the focus) shows the list, with the
	// added servers.
	d.xdotool(t, "key", "shift+Tab", "space")
	guiShotChanged(t, d, filepath.Join(shots, "import-back.png"), win, a.exited, tab)
	tray.click(t, app.LabelQuit)
	guiWaitExit(t, a.exited, "Quit")
}
