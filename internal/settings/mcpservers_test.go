package settings

import (
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
		{"stdio absolute, workspace scope", "fs-2_a", MCPServer{Command: "/usr/bin/x", Scope: ScopeWorkspace, Confine: true}, ""},
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
