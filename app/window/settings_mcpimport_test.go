package window

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"codehydra/app/internal/uitest"
	"codehydra/internal/mcpimport"
	"codehydra/internal/settings"
)

// writeFile writes text to path, making its folder.
func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// tickOf is the check of the found server named name from client.
func tickOf(t *testing.T, im *mcpImport, client, name string) int {
	t.Helper()
	for i, f := range im.found {
		if f.Client == client && f.Name == name {
			return i
		}
	}
	t.Fatalf("%s's %s is not listed; found %v", client, name, im.found)
	return -1
}

func TestMCPServersTabImportsTickedServersWithoutTheirSecretsUnlessAsked(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	getenv := func(k string) string { return map[string]string{"HOME": home}[k] }
	sources := mcpimport.Options{Getenv: getenv}.Sources()
	writeFile(t, sources[0], `{"mcpServers": {
		"github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"], "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_desktopSecret123"}},
		"notes": {"command": "notes-mcp", "env": {"NOTES_TOKEN": "notesSecret456"}}}}`)
	writeFile(t, sources[1], `{"mcpServers": {"bad": {"command": "./bin/tool"}}}`)
	writeFile(t, filepath.Join(project, ".vscode", "mcp.json"), `{
		// the project's tracker
		"inputs": [{"type": "promptString", "id": "tracker-key", "description": "Tracker API key", "password": true}],
		"servers": {"tracker": {"type": "http", "url": "https://tracker.example.com/mcp", "headers": {"X-API-Key": "${input:tracker-key}"}}},
	}`)
	store, file := newStore(t)
	if err := store.Update(func(s *settings.Settings) {
		s.MCPServers = map[string]settings.MCPServer{"github": {Command: "gh-mcp"}}
	}); err != nil {
		t.Fatal(err)
	}
	ws := uitest.NewWorkspaces()
	if _, err := ws.AddProject(context.Background(), project); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Deps{Workspaces: ws, Settings: store, Getenv: getenv})
	h.app.Settings().SetTheme(theme.DefaultTheme())
	w := h.u.openSettings()
	w.win.Content().(*container.AppTabs).SelectIndex(3)
	e := w.servers
	im := e.imp

	test.Tap(e.importButton)
	if !im.content.Visible() || e.list.Visible() {
		t.Fatal("Import… does not show the servers found")
	}
	if len(im.found) != 4 {
		t.Fatalf("listed %v, want 4 servers", im.found)
	}
	bad := im.ticks[tickOf(t, im, mcpimport.ClaudeCode, "bad")]
	test.Tap(bad)
	if !bad.Disabled() || bad.Checked {
		t.Error("a server the settings refuse can be ticked")
	}
	if txt := strings.Join(visibleTexts(im.content), "\n"); !strings.Contains(txt, `Cannot be added: "./bin/tool" is a relative path`) || !strings.Contains(txt, "Claude Desktop · "+filepath.Join("~", strings.TrimPrefix(sources[0], home+string(filepath.Separator)))) ||
		!strings.Contains(txt, "program: npx -y @modelcontextprotocol/server-github") || !strings.Contains(txt, `needs TRACKER_KEY: VS Code asks for input "tracker-key" (Tracker API key)`) {
		t.Errorf("the list does not show the reason, the source, the command and the needed value:\n%s", txt)
	}

	test.Tap(im.ticks[tickOf(t, im, mcpimport.ClaudeDesktop, "github")])
	test.Tap(im.ticks[tickOf(t, im, mcpimport.VSCode, "tracker")])
	if want := "GITHUB_PERSONAL_ACCESS_TOKEN (github-2), TRACKER_KEY (tracker)"; !strings.Contains(im.vars.Text, want) {
		t.Errorf("before Add the pane says %q, want it to name %s", im.vars.Text, want)
	}
	w.win.Content().Refresh()
	shot(t, w.win, "mcp-import.png")
	test.Tap(im.add)
	w.win.Content().Refresh()
	shot(t, w.win, "mcp-import-added.png")

	got := store.Get().MCPServers
	if gh := got["github-2"]; gh.Env["GITHUB_PERSONAL_ACCESS_TOKEN"] != "{env:GITHUB_PERSONAL_ACCESS_TOKEN}" || gh.Command != "npx" {
		t.Errorf("github came in as %+v, want its token as {env:GITHUB_PERSONAL_ACCESS_TOKEN}", gh)
	}
	if tr := got["tracker"]; tr.Headers["X-API-Key"] != "{env:TRACKER_KEY}" {
		t.Errorf("tracker came in as %+v, want its input as {env:TRACKER_KEY}", tr)
	}
	if !got["github"].Equal(settings.MCPServer{Command: "gh-mcp"}) || len(got) != 3 {
		t.Errorf("after the import the servers are %v", got)
	}
	for _, want := range []string{"Added github-2 (named github-2: github is taken), tracker.", "GITHUB_PERSONAL_ACCESS_TOKEN (github-2)", "TRACKER_KEY (tracker)"} {
		if !strings.Contains(im.status.Text, want) {
			t.Errorf("status %q, want it to say %q", im.status.Text, want)
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "ghp_desktopSecret123") {
		t.Errorf("the settings file holds the token:\n%s", data)
	}

	// The same server again is refused; "copy values" copies a token.
	test.Tap(im.back)
	test.Tap(e.importButton)
	test.Tap(im.ticks[tickOf(t, im, mcpimport.ClaudeDesktop, "github")])
	test.Tap(im.ticks[tickOf(t, im, mcpimport.ClaudeDesktop, "notes")])
	test.Tap(im.copyValues)
	test.Tap(im.add)
	if !strings.Contains(im.status.Text, "Not added: github (Claude Desktop): the same server is configured already, as github-2") {
		t.Errorf("status %q, want the duplicate refused", im.status.Text)
	}
	if n := store.Get().MCPServers["notes"]; n.Env["NOTES_TOKEN"] != "notesSecret456" {
		t.Errorf("with copy values, notes came in as %+v", n)
	}

	test.Tap(im.back)
	if im.content.Visible() || !e.list.Visible() || !slices.Equal(e.shown, []string{"github", "github-2", "notes", "tracker"}) {
		t.Errorf("Back: pane visible %v, rows %v", im.content.Visible(), e.shown)
	}
	h.drain()
}

func TestMCPServersTabImportSaysWhereItLookedWhenItFindsNothing(t *testing.T) {
	home := t.TempDir()
	getenv := func(k string) string { return map[string]string{"HOME": home}[k] }
	writeFile(t, filepath.Join(home, ".claude.json"), `{"mcpServers": `)
	store, _ := newStore(t)
	h := newHarness(t, Deps{Workspaces: uitest.NewWorkspaces(), Settings: store, Getenv: getenv})
	e := h.u.openSettings().servers
	test.Tap(e.importButton)
	if txt := e.imp.head.Text; !strings.Contains(txt, "No MCP server found. Looked in:") || !strings.Contains(txt, "claude_desktop_config.json") ||
		!strings.Contains(txt, "Could not read "+filepath.Join(home, ".claude.json")) {
		t.Errorf("the pane says %q", txt)
	}
	test.Tap(e.imp.add)
	if !strings.Contains(e.imp.status.Text, "Tick the servers") || len(store.Get().MCPServers) != 0 {
		t.Errorf("Add with nothing ticked: %q, servers %v", e.imp.status.Text, store.Get().MCPServers)
	}
}

// visibleTexts are the texts of the visible labels and checks in o.
func visibleTexts(o fyne.CanvasObject) []string {
	var out []string
	for _, c := range test.LaidOutObjects(o) {
		switch w := c.(type) {
		case *widget.Label:
			if w.Visible() {
				out = append(out, w.Text)
			}
		case *widget.Check:
			if w.Visible() {
				out = append(out, w.Text)
			}
		}
	}
	return out
}

// A server that cannot be imported says why, without an empty "program:"
// line; and a tick that gets the keyboard focus below the fold scrolls
// into sight.
func TestMCPServersTabImportShowsNoEmptyProgramAndScrollsToTheFocusedTick(t *testing.T) {
	home := t.TempDir()
	getenv := func(k string) string { return map[string]string{"HOME": home}[k] }
	sources := mcpimport.Options{Getenv: getenv}.Sources()
	servers := `"legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse"}`
	for i := range 8 {
		servers += fmt.Sprintf(`, "s%d": {"command": "/bin/s%d"}`, i, i)
	}
	writeFile(t, sources[1], `{"mcpServers": {`+servers+`}}`)
	store, _ := newStore(t)
	h := newHarness(t, Deps{Workspaces: uitest.NewWorkspaces(), Settings: store, Getenv: getenv})
	w := h.u.openSettings()
	w.win.Content().(*container.AppTabs).SelectIndex(3)
	im := w.servers.imp
	test.Tap(w.servers.importButton)
	txt := strings.Join(visibleTexts(im.content), "\n")
	if !strings.Contains(txt, "SSE") || strings.Contains(txt, "program: \n") || strings.HasSuffix(txt, "program: ") || strings.Contains(txt, "program:\n") {
		t.Errorf("the SSE server's row:\n%s", txt)
	}
	c := w.win.Canvas()
	for range len(im.ticks) - 1 { // the SSE server's tick cannot be focused
		c.FocusNext()
	}
	last := im.rows.Objects[len(im.rows.Objects)-1]
	if c.Focused() != im.ticks[len(im.ticks)-1] {
		t.Fatalf("the focus is on %v, not the last tick", c.Focused())
	}
	if top := last.Position().Y - im.scroll.Offset.Y; im.scroll.Offset.Y == 0 || top+last.Size().Height > im.scroll.Size().Height+1 {
		t.Errorf("the last row (%v tall at %v) is not in sight: the scroll (%v tall) is at %v", last.Size().Height, last.Position().Y, im.scroll.Size().Height, im.scroll.Offset.Y)
	}
}
