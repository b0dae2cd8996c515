package settings

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestProjectSetupValidation(t *testing.T) {
	abs := filepath.Join(t.TempDir(), "repo")
	tests := []struct {
		name  string
		setup map[string]ProjectSetup
		want  string // "" for valid
	}{
		{"valid", map[string]ProjectSetup{abs: {Copy: []string{".env*", "config/local.json"}, Setup: "npm install", SetupTimeoutSeconds: 600}}, ""},
		{"relative project", map[string]ProjectSetup{"repo": {Setup: "make"}}, "is not an absolute path"},
		{"absolute pattern", map[string]ProjectSetup{abs: {Copy: []string{"/etc/passwd"}}}, "is absolute"},
		{"escaping pattern", map[string]ProjectSetup{abs: {Copy: []string{"../other/.env"}}}, "leaves the project's folder"},
		{"escaping inner pattern", map[string]ProjectSetup{abs: {Copy: []string{"a/../../x"}}}, "leaves the project's folder"},
		{"bad glob", map[string]ProjectSetup{abs: {Copy: []string{"[a"}}}, "not a valid glob"},
		{"empty pattern", map[string]ProjectSetup{abs: {Copy: []string{" "}}}, "is empty"},
		{"relative program", map[string]ProjectSetup{abs: {Setup: "./setup.sh"}}, "starts with a relative path"},
		{"unclosed quote", map[string]ProjectSetup{abs: {Setup: `sh -c "npm ci`}}, "quote is not closed"},
		{"negative timeout", map[string]ProjectSetup{abs: {Setup: "make", SetupTimeoutSeconds: -1}}, "setupTimeoutSeconds is -1"},
		{"valid run and teardown", map[string]ProjectSetup{abs: {Run: "python3 -m http.server", Teardown: `sh -c "docker compose down"`, TeardownTimeoutSeconds: 120}}, ""},
		{"relative run", map[string]ProjectSetup{abs: {Run: "./serve.sh"}}, `.run "./serve.sh" starts with a relative path`},
		{"relative teardown", map[string]ProjectSetup{abs: {Teardown: "bin/down"}}, `.teardown "bin/down" starts with a relative path`},
		{"unclosed teardown quote", map[string]ProjectSetup{abs: {Teardown: `sh -c 'x`}}, "quote is not closed"},
		{"negative teardown timeout", map[string]ProjectSetup{abs: {Teardown: "make down", TeardownTimeoutSeconds: -5}}, "teardownTimeoutSeconds is -5"},
		{"huge teardown timeout", map[string]ProjectSetup{abs: {Teardown: "make down", TeardownTimeoutSeconds: 3601}}, "teardownTimeoutSeconds is 3601"},
		{"huge timeout", map[string]ProjectSetup{abs: {Setup: "make", SetupTimeoutSeconds: 100000}}, "setupTimeoutSeconds is 100000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Default()
			s.ProjectSetup = tt.setup
			err := s.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "projectSetup[") {
				t.Fatalf("Validate() = %v, want an error naming projectSetup and containing %q", err, tt.want)
			}
		})
	}
}

func TestProjectSetupRoundTripsAndIsCloned(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	proj := filepath.Join(t.TempDir(), "repo")
	s := Default()
	s.ProjectSetup = map[string]ProjectSetup{proj: {Copy: []string{".env*"}, Setup: "npm install", SetupTimeoutSeconds: 5}}
	if err := Save(path, s); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ps, ok := got.SetupFor(proj)
	if !ok || ps.Setup != "npm install" || len(ps.Copy) != 1 || ps.Copy[0] != ".env*" || ps.SetupTimeout() != 5*time.Second {
		t.Fatalf("SetupFor after a round trip = %+v, %v", ps, ok)
	}
	c := got.Clone()
	c.ProjectSetup[proj].Copy[0] = "changed"
	if got.ProjectSetup[proj].Copy[0] != ".env*" {
		t.Fatal("Clone shares the copy patterns with the original")
	}
	if d := (ProjectSetup{}).SetupTimeout(); d != DefaultSetupTimeout {
		t.Fatalf("default timeout %v", d)
	}
	if d := (ProjectSetup{}).TeardownTimeout(); d != DefaultTeardownTimeout {
		t.Fatalf("default teardown timeout %v", d)
	}
	if d := (ProjectSetup{TeardownTimeoutSeconds: 7}).TeardownTimeout(); d != 7*time.Second {
		t.Fatalf("teardown timeout %v, want 7s", d)
	}
}

func TestUnmarshalReplacesProjectSetup(t *testing.T) {
	s := Default()
	s.ProjectSetup = map[string]ProjectSetup{"/a": {Setup: "make"}}
	if err := s.UnmarshalJSON([]byte(`{"projectSetup":{"/b":{"setup":"npm ci"}}}`)); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.ProjectSetup["/a"]; ok || s.ProjectSetup["/b"].Setup != "npm ci" {
		t.Fatalf("ProjectSetup = %v, want only /b", s.ProjectSetup)
	}
	if err := s.UnmarshalJSON([]byte(`{"mcpPort":1}`)); err != nil {
		t.Fatal(err)
	}
	if s.ProjectSetup["/b"].Setup != "npm ci" {
		t.Fatalf("a file without the key dropped it: %v", s.ProjectSetup)
	}
}

func TestAProjectsMCPServersKeepNoneApartFromAllAndAreCloned(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	all, some, none := filepath.Join(t.TempDir(), "all"), filepath.Join(t.TempDir(), "some"), filepath.Join(t.TempDir(), "none")
	s := Default()
	s.ProjectSetup = map[string]ProjectSetup{all: {Remote: "origin"}, some: {MCPServers: []string{"fs"}}, none: {MCPServers: []string{}}}
	if err := Save(path, s); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path, server string
		want         bool
	}{{all, "fs", true}, {all, "db", true}, {some, "fs", true}, {some, "db", false}, {none, "fs", false}, {"/elsewhere", "fs", true}} {
		if got := got.ProjectOf(c.path).Offers(c.server); got != c.want {
			t.Errorf("project %s offers %s = %v, want %v", filepath.Base(c.path), c.server, got, c.want)
		}
	}
	c := got.Clone()
	c.ProjectSetup[some].MCPServers[0] = "changed"
	if got.ProjectSetup[some].MCPServers[0] != "fs" {
		t.Fatal("Clone shares a project's mcpServers with the original")
	}
	s.ProjectSetup = map[string]ProjectSetup{some: {MCPServers: []string{" "}}}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "mcpServers: a name is empty") {
		t.Fatalf("an empty server name: %v", err)
	}
}
