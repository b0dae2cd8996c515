package mcpimport

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"codehydra/internal/settings"
)

// testdataOptions reads testdata/home as the home folder and
// testdata/project as CodeHydra's one project.
func testdataOptions(t *testing.T, home string) Options {
	t.Helper()
	abs, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": filepath.Join(abs, home)}
	return Options{GOOS: "linux", Getenv: func(k string) string { return env[k] }, Projects: []string{filepath.Join(abs, "project")}}
}

func TestScanReadsEveryClientsServersInCodeHydrasShape(t *testing.T) {
	o := testdataOptions(t, "home")
	home := o.Getenv("HOME")
	found, errs := Scan(o)
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	ws := settings.ScopeWorkspace
	for i, c := range []struct {
		client, file, where, name string
		server                    settings.MCPServer
		needs                     []string
		note, problem             string
	}{
		{client: ClaudeDesktop, file: "home/.config/Claude/claude_desktop_config.json", name: "filesystem",
			server: settings.MCPServer{Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/home/me/Desktop"}}},
		{client: ClaudeDesktop, file: "home/.config/Claude/claude_desktop_config.json", name: "github",
			server: settings.MCPServer{Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-github"}, Env: map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_desktopSecret123"}}},
		// Claude Desktop fills in no variables: ${DATABASE_URL} is text.
		{client: ClaudeDesktop, file: "home/.config/Claude/claude_desktop_config.json", name: "my db", note: "cwd",
			server: settings.MCPServer{Command: "uvx", Args: []string{"mcp-server-postgres", "${DATABASE_URL}"}, Env: map[string]string{"PGHOST": "localhost"}}},
		{client: ClaudeCode, file: "home/.claude.json", name: "context7",
			server: settings.MCPServer{Command: "npx", Args: []string{"-y", "@upstash/context7-mcp"}}},
		{client: ClaudeCode, file: "home/.claude.json", name: "legacy", problem: "SSE"},
		{client: ClaudeCode, file: "home/.claude.json", name: "sentry",
			server: settings.MCPServer{URL: "https://mcp.sentry.dev/mcp", Headers: map[string]string{"Authorization": "Bearer sntrys_codeSecret"}}},
		{client: ClaudeCode, file: "home/.claude.json", where: "project /home/me/app", name: "postgres", note: "default of ${DATABASE_URL:-…} is not kept",
			server: settings.MCPServer{Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-postgres", "{env:DATABASE_URL}"}}},
		{client: Opencode, file: "home/.config/opencode/opencode.jsonc", name: "docs", needs: []string{"OPENAI_KEY"},
			server: settings.MCPServer{Command: "docs-mcp", Args: []string{"--index", "https://docs.example.com//latest"}, Env: map[string]string{"OPENAI_API_KEY": "{env:OPENAI_KEY}", "LOG_LEVEL": "info"}}},
		{client: Opencode, file: "home/.config/opencode/opencode.jsonc", name: "everything",
			server: settings.MCPServer{Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-everything"}}},
		{client: Opencode, file: "home/.config/opencode/opencode.jsonc", name: "jira", note: "switched off",
			server: settings.MCPServer{URL: "https://jira.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer {env:JIRA_TOKEN}"}, Enabled: new(false)}},
		{client: VSCode, file: "home/.config/Code/User/mcp.json", name: "fetch",
			server: settings.MCPServer{Command: "uvx", Args: []string{"mcp-server-fetch"}}},
		{client: VSCode, file: "home/.config/Code/User/mcp.json", name: "github", needs: []string{"GITHUB_TOKEN"},
			server: settings.MCPServer{URL: "https://api.githubcopilot.com/mcp/", Headers: map[string]string{"Authorization": "Bearer {env:GITHUB_TOKEN}"}}},
		{client: VSCode, file: "home/.config/Code/User/mcp.json", name: "old", problem: "SSE"},
		{client: VSCode, file: "home/.config/Code/User/mcp.json", name: "playwright",
			server: settings.MCPServer{Command: "npx", Args: []string{"@playwright/mcp@latest", "--user-data-dir", home + "/.pw"}, Env: map[string]string{"PW_PORT": "9222"}}},
		{client: ClaudeCode, file: "project/.mcp.json", name: "api-server",
			server: settings.MCPServer{URL: "{env:API_BASE_URL}/mcp", Headers: map[string]string{"Authorization": "Bearer {env:API_KEY}"}}, note: "default of ${API_BASE_URL:-…}"},
		{client: ClaudeCode, file: "project/.mcp.json", name: "local-tool",
			server: settings.MCPServer{Command: "./bin/tool", Args: []string{"--stdio"}}},
		{client: ClaudeCode, file: "project/.mcp.json", name: "tracker",
			server: settings.MCPServer{URL: "https://tracker.example.com/mcp", Headers: map[string]string{"X-API-Key": "{env:TRACKER_KEY}"}}},
		{client: Opencode, file: "project/opencode.json", name: "sentry", note: "OAuth",
			server: settings.MCPServer{URL: "https://mcp.sentry.dev/mcp"}},
		{client: VSCode, file: "project/.vscode/mcp.json", name: "filesystem", note: "envFile",
			server: settings.MCPServer{Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "{workspace.path}"}, Env: map[string]string{"FS_TOKEN": "{env:FS_TOKEN}"}, Scope: ws}},
	} {
		if i >= len(found) {
			t.Fatalf("found %d servers, want at least %d", len(found), i+1)
		}
		f := found[i]
		id := c.client + " " + c.file + " " + c.name
		if f.Client != c.client || !strings.HasSuffix(f.Source, filepath.FromSlash(c.file)) || f.Where != c.where || f.Name != c.name {
			t.Errorf("server %d is %s %s %q %s, want %s (%q)", i, f.Client, f.Source, f.Where, f.Name, id, c.where)
			continue
		}
		if c.problem != "" {
			if !strings.Contains(f.Problem, c.problem) {
				t.Errorf("%s: problem %q, want it to say %q", id, f.Problem, c.problem)
			}
			continue
		}
		if f.Problem != "" || !f.Server.Equal(c.server) {
			t.Errorf("%s: got %+v (problem %q), want %+v", id, f.Server, f.Problem, c.server)
		}
		var needs []string
		for _, n := range f.Needs {
			needs = append(needs, n.Var)
		}
		if !slices.Equal(needs, c.needs) {
			t.Errorf("%s: needs %v, want %v", id, f.Needs, c.needs)
		}
		if notes := strings.Join(f.Notes, "\n"); c.note == "" && notes != "" || !strings.Contains(notes, c.note) {
			t.Errorf("%s: notes %q, want one saying %q", id, notes, c.note)
		}
	}
	if len(found) != 19 {
		t.Errorf("found %d servers, want 19", len(found))
	}
}

func TestScanSaysWhatAnInputWasAndWhereOpencodeReadAFile(t *testing.T) {
	found, _ := Scan(testdataOptions(t, "home"))
	want := map[string]string{
		"GITHUB_TOKEN": `VS Code asks for input "github-token" (GitHub Personal Access Token)`,
		"OPENAI_KEY":   "opencode reads it from the file ~/.secrets/openai-key.txt",
	}
	for _, f := range found {
		for _, n := range f.Needs {
			if want[n.Var] != n.What {
				t.Errorf("%s %s needs %s: %q, want %q", f.Client, f.Name, n.Var, n.What, want[n.Var])
			}
			delete(want, n.Var)
		}
	}
	if len(want) > 0 {
		t.Errorf("not found: %v", want)
	}
}

func TestScanReportsFilesItCannotReadAndSkipsMissingOnes(t *testing.T) {
	o := testdataOptions(t, "broken")
	o.Projects = []string{t.TempDir()}
	found, errs := Scan(o)
	if len(found) != 0 || len(errs) != 2 {
		t.Fatalf("found %v, errors %v; want no server and two errors", found, errs)
	}
	for i, want := range []string{"claude_desktop_config.json: not a JSON object", ".claude.json: its servers are not an object"} {
		if !strings.Contains(errs[i].Error(), want) {
			t.Errorf("error %d: %q, want it to say %q", i, errs[i], want)
		}
	}
}

func TestScanSkipsAFileItCannotOpen(t *testing.T) {
	home := t.TempDir()
	p := filepath.Join(home, ".claude.json")
	if err := os.WriteFile(p, []byte(`{"mcpServers":{"a":{"command":"x"}}}`), 0o000); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(p); err == nil {
		t.Skip("running as a user who reads any file")
	}
	found, errs := Scan(Options{GOOS: "linux", Getenv: func(k string) string { return map[string]string{"HOME": home}[k] }})
	if len(found) != 0 || len(errs) != 1 || errs[0].Path != p {
		t.Errorf("found %v, errors %v; want the file's error", found, errs)
	}
}

func TestSourcesAreEachClientsFilesOnEachSystem(t *testing.T) {
	for _, c := range []struct {
		goos string
		env  map[string]string
		want []string
	}{
		{"linux", map[string]string{"HOME": "/h", "XDG_CONFIG_HOME": "/x"}, []string{
			"/x/Claude/claude_desktop_config.json", "/h/.claude.json",
			"/x/opencode/opencode.json", "/x/opencode/opencode.jsonc", "/x/opencode/config.json",
			"/x/Code/User/mcp.json",
			"/p/.mcp.json", "/p/opencode.json", "/p/opencode.jsonc", "/p/.vscode/mcp.json"}},
		{"darwin", map[string]string{"HOME": "/Users/me"}, []string{
			"/Users/me/Library/Application Support/Claude/claude_desktop_config.json", "/Users/me/.claude.json",
			"/Users/me/.config/opencode/opencode.json", "/Users/me/.config/opencode/opencode.jsonc", "/Users/me/.config/opencode/config.json",
			"/Users/me/Library/Application Support/Code/User/mcp.json",
			"/p/.mcp.json", "/p/opencode.json", "/p/opencode.jsonc", "/p/.vscode/mcp.json"}},
		{"windows", map[string]string{"USERPROFILE": "/u", "APPDATA": "/u/AppData/Roaming"}, []string{
			"/u/AppData/Roaming/Claude/claude_desktop_config.json", "/u/.claude.json",
			"/u/.config/opencode/opencode.json", "/u/.config/opencode/opencode.jsonc", "/u/.config/opencode/config.json",
			"/u/AppData/Roaming/Code/User/mcp.json",
			"/p/.mcp.json", "/p/opencode.json", "/p/opencode.jsonc", "/p/.vscode/mcp.json"}},
	} {
		o := Options{GOOS: c.goos, Getenv: func(k string) string { return c.env[k] }, Projects: []string{"/p"}}
		var want []string
		for _, p := range c.want {
			want = append(want, filepath.FromSlash(p))
		}
		if got := o.Sources(); !slices.Equal(got, want) {
			t.Errorf("%s: sources\n%v\nwant\n%v", c.goos, got, want)
		}
	}
}

func TestJSONCKeepsStringsAndDropsCommentsAndTrailingCommas(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"a": "http://x//y", // comment
"b": [1, 2,],}`, `{"a":"http://x//y","b":[1,2]}`},
		{`{/* a "quoted" comment */ "a": "say \"/*\"" ,}`, `{"a":"say \"/*\""}`},
		{`{"a": "\\", "b": "c,}"}`, `{"a":"\\","b":"c,}"}`},
	} {
		var v any
		if err := json.Unmarshal(jsoncToJSON([]byte(c.in)), &v); err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		got, _ := json.Marshal(v)
		var w any
		_ = json.Unmarshal([]byte(c.want), &w)
		want, _ := json.Marshal(w)
		if string(got) != string(want) {
			t.Errorf("%q: got %s, want %s", c.in, got, want)
		}
	}
}
