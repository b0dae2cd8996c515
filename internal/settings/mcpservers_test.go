package settings

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestMCPServersValidation(t *testing.T) {
	tests := []struct {
		name   string
		server string
		s      MCPServer
		want   string // "" is valid
	}{
		{"stdio on PATH", "fs", MCPServer{Command: "npx", Args: []string{"-y", "pkg"}}, ""},
		{"stdio absolute, workspace scope", "fs-2_a", MCPServer{Command: abs("/usr/bin/x"), Scope: ScopeWorkspace, Confine: true}, ""},
		{"https anywhere", "gh", MCPServer{URL: "https://api.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer {env:GH_TOKEN}"}}, ""},
		{"http on loopback", "local", MCPServer{URL: "http://127.0.0.1:3001/mcp"}, ""},
		{"http on ::1", "local", MCPServer{URL: "http://[::1]:3001/mcp"}, ""},
		{"http on localhost", "local", MCPServer{URL: "http://localhost:3001/mcp"}, ""},
		{"env in a url's path", "local", MCPServer{URL: "https://h.example/{env:P}"}, ""},
		{"name with __", "a__b", MCPServer{Command: "x"}, `"__"`},
		{"name ending in _", "fs_", MCPServer{Command: "x"}, "ends in _"},
		{"name starting with -", "-a", MCPServer{Command: "x"}, "not valid"},
		{"name with a dot", "a.b", MCPServer{Command: "x"}, "not valid"},
		{"name too long", strings.Repeat("a", 33), MCPServer{Command: "x"}, "longer than"},
		{"neither", "x", MCPServer{}, "neither command nor url"},
		{"both", "x", MCPServer{Command: "x", URL: "https://h/"}, "both command and url"},
		{"relative command", "x", MCPServer{Command: "./bin/server"}, "relative path"},
		{"command with spaces", "x", MCPServer{Command: "npx -y pkg"}, "spaces"},
		{"command from env", "x", MCPServer{Command: "{env:BIN}"}, "names the environment"},
		{"plain http to another host", "x", MCPServer{URL: "http://10.0.0.1/mcp"}, "plain http"},
		{"ftp", "x", MCPServer{URL: "ftp://h/mcp"}, "not http or https"},
		{"no host", "x", MCPServer{URL: "https:///mcp"}, "no host"},
		{"host from env", "x", MCPServer{URL: "https://{env:HOST}/mcp"}, "scheme or host"},
		{"bad scope", "x", MCPServer{Command: "x", Scope: "global"}, "scope"},
		{"headers on a command", "x", MCPServer{Command: "x", Headers: map[string]string{"A": "b"}}, "headers apply"},
		{"env on a url", "x", MCPServer{URL: "https://h/", Env: map[string]string{"A": "b"}}, "command server only"},
		{"bad env name", "x", MCPServer{Command: "x", Env: map[string]string{"A-B": "b"}}, "not a variable name"},
		{"bad env reference", "x", MCPServer{Command: "x", Args: []string{"{env:A B}"}}, "does not name"},
		{"bad header name", "x", MCPServer{URL: "https://h/", Headers: map[string]string{"A:": "b"}}, "not a header name"},
		{"{workspace} in a workspace server's args", "fs", MCPServer{Command: "x", Args: []string{"--root={workspace}"}, Scope: ScopeWorkspace}, ""},
		{"{workspace} in a shared server's args", "fs", MCPServer{Command: "x", Args: []string{"{workspace}"}}, "names the workspace"},
		{"workspace variables in a workspace server", "db", MCPServer{Command: "x", Scope: ScopeWorkspace,
			Args: []string{"--root={workspace.path}"}, Env: map[string]string{"DB_NAME": "{workspace.name}", "B": "{workspace.branch}", "P": "{project.path}"}}, ""},
		{"workspace variables in a remote workspace server", "db", MCPServer{URL: "https://h.example/{workspace.name}", Scope: ScopeWorkspace,
			Headers: map[string]string{"X-Branch": "{workspace.branch}"}}, ""},
		{"an unknown workspace variable", "db", MCPServer{Command: "x", Scope: ScopeWorkspace, Env: map[string]string{"A": "{workspace.folder}"}}, "{workspace.folder} is not a workspace variable"},
		{"an unknown project variable", "db", MCPServer{Command: "x", Scope: ScopeWorkspace, Args: []string{"{project.name}"}}, "{project.name} is not a workspace variable"},
		{"a workspace variable in a shared server's env", "db", MCPServer{Command: "x", Env: map[string]string{"A": "{workspace.name}"}}, "only a server of scope"},
		{"a workspace variable in a shared server's header", "db", MCPServer{URL: "https://h/", Headers: map[string]string{"A": "{project.path}"}}, "only a server of scope"},
		{"a workspace variable in a url's host", "db", MCPServer{URL: "https://{workspace.name}.example/", Scope: ScopeWorkspace}, "scheme or host"},
		{"enabled false", "fs", MCPServer{Command: "x", Enabled: new(false)}, ""},
		{"tool globs", "fs", MCPServer{Command: "x", Tools: ToolRules{Allow: []string{"read_*", "list_?"}, Deny: []string{"*write*"}}}, ""},
		{"a tool glob that is no glob", "fs", MCPServer{Command: "x", Tools: ToolRules{Deny: []string{"[a-"}}}, "tools.deny: \"[a-\" is not a valid glob"},
		{"an empty tool glob", "fs", MCPServer{Command: "x", Tools: ToolRules{Allow: []string{""}}}, "tools.allow: a glob is empty"},
		{"a tool glob with the server's prefix", "fs", MCPServer{Command: "x", Tools: ToolRules{Deny: []string{"fs__write_*"}}}, "the globs match the server's own tool names, e.g. \"write_*\""},
		{"paths of a confined server", "fs", MCPServer{Command: "x", Scope: ScopeWorkspace, Confine: true, Paths: PathRules{Allow: []string{"src/", "docs/*.md"}, Deny: []string{".env", "secrets/"}}}, ""},
		{"paths of a server not confined", "fs", MCPServer{Command: "x", Scope: ScopeWorkspace, Paths: PathRules{Deny: []string{"secrets/"}}}, "paths applies to the path arguments of a confined server only"},
		{"an absolute path rule", "fs", MCPServer{Command: "x", Scope: ScopeWorkspace, Confine: true, Paths: PathRules{Allow: []string{"/etc"}}}, "paths.allow: the pattern \"/etc\" is not relative"},
		{"a path rule that climbs", "fs", MCPServer{Command: "x", Scope: ScopeWorkspace, Confine: true, Paths: PathRules{Deny: []string{"../x"}}}, "paths.deny: the pattern \"../x\" holds . or .."},
		{"a rate limit", "fs", MCPServer{Command: "x", RateLimit: ServerRateLimit{PerMinute: 60}}, ""},
		{"a negative rate limit", "fs", MCPServer{Command: "x", RateLimit: ServerRateLimit{PerMinute: -1}}, "rateLimit.perMinute is -1"},
		// Loaded as written (a file from before keeps working); the
		// gateway does not start it and the window does not save it.
		{"confine on a shared server", "fs", MCPServer{Command: "x", Confine: true}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Default()
			s.MCPServers = map[string]MCPServer{tt.server: tt.s}
			err := s.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "mcpServers") {
				t.Fatalf("Validate() = %v, want an error naming mcpServers and containing %q", err, tt.want)
			}
		})
	}
}

func TestExpandEnvFillsReferencesAndNamesMissingOnes(t *testing.T) {
	env := map[string]string{"TOKEN": "s3cret", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	got, err := ExpandEnv("Bearer {env:TOKEN}{env:EMPTY}/{env:TOKEN}", lookup)
	if err != nil || got != "Bearer s3cret/s3cret" {
		t.Fatalf("ExpandEnv = %q, %v", got, err)
	}
	_, err = ExpandEnv("x {env:NOPE}", lookup)
	if err == nil || !strings.Contains(err.Error(), "NOPE") {
		t.Fatalf("ExpandEnv of a missing variable = %v, want an error naming it", err)
	}
}

func TestMCPServersCloneAndUnmarshalReplace(t *testing.T) {
	s := Default()
	if err := s.UnmarshalJSON([]byte(`{"mcpServers":{"a":{"command":"x","args":["1"],"env":{"K":"v"}}}}`)); err != nil {
		t.Fatal(err)
	}
	c := s.Clone()
	c.MCPServers["a"].Args[0] = "changed"
	c.MCPServers["a"].Env["K"] = "changed"
	if s.MCPServers["a"].Args[0] != "1" || s.MCPServers["a"].Env["K"] != "v" {
		t.Fatal("Clone shares a server's args or env with the original")
	}
	if !s.MCPServers["a"].Equal(s.MCPServers["a"].Clone()) || s.MCPServers["a"].Equal(c.MCPServers["a"]) {
		t.Fatal("Equal does not compare args and env")
	}
	if err := s.UnmarshalJSON([]byte(`{"mcpServers":{"b":{"url":"https://h/"}}}`)); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.MCPServers["a"]; ok || len(s.MCPServers) != 1 {
		t.Fatalf("MCPServers = %v, want only b", s.MCPServers)
	}
	if err := s.UnmarshalJSON([]byte(`{"mcpServers":null}`)); err != nil || s.MCPServers == nil {
		t.Fatalf("null mcpServers = %v, %v; want an empty map", s.MCPServers, err)
	}
}

func TestConfineHoldsOnlyOnAWorkspaceScopedServer(t *testing.T) {
	if err := (MCPServer{Command: "x", Confine: true, Scope: ScopeWorkspace}).ConfineProblem(); err != nil {
		t.Fatalf("confine on a workspace server: %v", err)
	}
	if err := (MCPServer{Command: "x"}).ConfineProblem(); err != nil {
		t.Fatalf("a shared server without confine: %v", err)
	}
	if err := (MCPServer{URL: "https://h/mcp", Scope: ScopeWorkspace, Confine: true}).ConfineProblem(); err == nil || !strings.Contains(err.Error(), "a local server") {
		t.Fatalf("confine on a remote server: %v, want refused", err)
	}
	err := (MCPServer{Command: "x", Confine: true}).ConfineProblem()
	if err == nil || !strings.Contains(err.Error(), `"scope": "workspace"`) {
		t.Fatalf("confine on a shared server: %v, want it to point to scope workspace", err)
	}
}

func TestToolRulesHideByDenyFirstThenByAnAllowListNotMatched(t *testing.T) {
	r := ToolRules{Allow: []string{"read_*", "list_*"}, Deny: []string{"read_secret*"}}
	for tool, want := range map[string]string{
		"read_file":      "",
		"list_directory": "",
		"read_secrets":   `tools.deny rule "read_secret*"`,
		"write_file":     `tools.allow rules ("read_*", "list_*"), none of which it matches`,
	} {
		if got := r.Hides(tool); got != want {
			t.Errorf("Hides(%q) = %q, want %q", tool, got, want)
		}
	}
	if got := (ToolRules{Deny: []string{"write_*"}}).Hides("read_file"); got != "" {
		t.Errorf("an empty allow list hides read_file: %q", got)
	}
	if got := (ToolRules{}).Hides("anything"); got != "" {
		t.Errorf("no rules hide a tool: %q", got)
	}
}

func TestExpandFillsWorkspaceVariablesInOnePass(t *testing.T) {
	env := map[string]string{"TOKEN": "{workspace.name}"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	ws := &WorkspaceVars{Path: "/w/feat", Name: "feat", Branch: "feat", ProjectPath: "/p/{env:TOKEN}"}
	got, err := Expand("{workspace}|{workspace.path}|{workspace.name}|{workspace.branch}|{project.path}|{env:TOKEN}", lookup, ws)
	want := "/w/feat|/w/feat|feat|feat|/p/{env:TOKEN}|{workspace.name}"
	if err != nil || got != want {
		t.Fatalf("Expand = %q, %v; want %q (what a reference gives is not expanded again)", got, err, want)
	}
	if got, err := Expand("db_{workspace.name}_{env:TOKEN}", lookup, nil); err != nil || got != "db_{workspace.name}_{workspace.name}" {
		t.Fatalf("Expand without a workspace = %q, %v; want the workspace variables left as written", got, err)
	}
}

func TestMCPServerPoliciesAreComparedClonedAndRoundTrip(t *testing.T) {
	m := MCPServer{Command: "x", Scope: ScopeWorkspace, Confine: true, Enabled: new(false),
		Tools:     ToolRules{Allow: []string{"read_*"}, Deny: []string{"write_*"}},
		Paths:     PathRules{Allow: []string{"src/"}, Deny: []string{".env"}},
		RateLimit: ServerRateLimit{PerMinute: 30}}
	c := m.Clone()
	if !m.Equal(c) {
		t.Fatal("a clone is not Equal")
	}
	*c.Enabled = true
	c.Tools.Allow[0], c.Tools.Deny[0], c.Paths.Allow[0], c.Paths.Deny[0] = "a", "b", "c/", "d"
	if *m.Enabled || m.Tools.Allow[0] != "read_*" || m.Tools.Deny[0] != "write_*" || m.Paths.Allow[0] != "src/" || m.Paths.Deny[0] != ".env" {
		t.Fatalf("Clone shares the policies with the original: %+v", m)
	}
	for name, change := range map[string]func(*MCPServer){
		"enabled":     func(o *MCPServer) { o.Enabled = nil },
		"tools.allow": func(o *MCPServer) { o.Tools.Allow = nil },
		"tools.deny":  func(o *MCPServer) { o.Tools.Deny = []string{"x"} },
		"paths.allow": func(o *MCPServer) { o.Paths.Allow = nil },
		"paths.deny":  func(o *MCPServer) { o.Paths.Deny = nil },
		"rateLimit":   func(o *MCPServer) { o.RateLimit.PerMinute = 31 },
	} {
		o := m.Clone()
		change(&o)
		if m.Equal(o) {
			t.Errorf("Equal does not see a change of %s", name)
		}
	}
	if !(MCPServer{Command: "x"}).Equal(MCPServer{Command: "x", Enabled: new(true)}) {
		t.Error("enabled true is not the default")
	}

	s := Default()
	s.MCPServers = map[string]MCPServer{"fs": m}
	data, err := s.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"enabled":false`, `"tools":{"allow":["read_*"],"deny":["write_*"]}`, `"paths":{"allow":["src/"],"deny":[".env"]}`, `"rateLimit":{"perMinute":30}`} {
		if !strings.Contains(string(data), key) {
			t.Errorf("saved settings lack %s: %s", key, data)
		}
	}
	back := Default()
	if err := back.UnmarshalJSON(data); err != nil || !back.MCPServers["fs"].Equal(m) {
		t.Fatalf("read back %+v, %v; want %+v", back.MCPServers["fs"], err, m)
	}
	plain, _ := json.Marshal(MCPServer{Command: "x"})
	if string(plain) != `{"command":"x"}` {
		t.Errorf("a server without policies is saved as %s, want no empty keys", plain)
	}
}
