package mcpimport

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"codehydra/internal/settings"
)

// pick is the server of testdata/home or testdata/project that client
// calls name, read from file.
func pick(t *testing.T, client, file, name string) Found {
	t.Helper()
	found, _ := Scan(testdataOptions(t, "home"))
	for _, f := range found {
		if f.Client == client && f.Name == name && strings.HasSuffix(f.Source, file) {
			return f
		}
	}
	t.Fatalf("no server %s of %s in %s", name, client, file)
	return Found{}
}

func TestPlanReplacesValuesWrittenOutWithVariablesUnlessAskedToCopy(t *testing.T) {
	github := pick(t, ClaudeDesktop, "claude_desktop_config.json", "github")
	sentry := pick(t, ClaudeCode, ".claude.json", "sentry")
	docs := pick(t, Opencode, "opencode.jsonc", "docs")
	jira := pick(t, Opencode, "opencode.jsonc", "jira")
	for _, c := range []struct {
		copyValues bool
		env        map[string]map[string]string
		headers    map[string]map[string]string
		vars       map[string][]string
	}{
		{false,
			map[string]map[string]string{"github": {"GITHUB_PERSONAL_ACCESS_TOKEN": "{env:GITHUB_PERSONAL_ACCESS_TOKEN}"}, "docs": {"OPENAI_API_KEY": "{env:OPENAI_KEY}", "LOG_LEVEL": "{env:LOG_LEVEL}"}},
			map[string]map[string]string{"sentry": {"Authorization": "Bearer {env:SENTRY_AUTHORIZATION}"}, "jira": {"Authorization": "Bearer {env:JIRA_TOKEN}"}},
			map[string][]string{"github": {"GITHUB_PERSONAL_ACCESS_TOKEN"}, "sentry": {"SENTRY_AUTHORIZATION"}, "docs": {"LOG_LEVEL", "OPENAI_KEY"}}},
		{true,
			map[string]map[string]string{"github": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_desktopSecret123"}, "docs": {"OPENAI_API_KEY": "{env:OPENAI_KEY}", "LOG_LEVEL": "info"}},
			map[string]map[string]string{"sentry": {"Authorization": "Bearer sntrys_codeSecret"}, "jira": {"Authorization": "Bearer {env:JIRA_TOKEN}"}},
			map[string][]string{"docs": {"OPENAI_KEY"}}},
	} {
		plan := Plan([]Found{github, sentry, docs, jira}, nil, c.copyValues)
		var servers []settings.MCPServer
		for _, ch := range plan {
			servers = append(servers, ch.Server)
		}
		saved, _ := json.Marshal(servers)
		for _, secret := range []string{"ghp_desktopSecret123", "sntrys_codeSecret"} {
			if strings.Contains(string(saved), secret) != c.copyValues {
				t.Errorf("copy values %v: the plan holds %s: %v", c.copyValues, secret, strings.Contains(string(saved), secret))
			}
		}
		for _, ch := range plan {
			if ch.Refused != nil || ch.Name != ch.Found.Name {
				t.Errorf("copy values %v: %s refused (%v) or renamed %q", c.copyValues, ch.Found.Name, ch.Refused, ch.Name)
				continue
			}
			if got, want := ch.Server.Env, c.env[ch.Name]; len(want) > 0 && !maps.Equal(got, want) {
				t.Errorf("copy values %v: %s env %v, want %v", c.copyValues, ch.Name, got, want)
			}
			if got, want := ch.Server.Headers, c.headers[ch.Name]; len(want) > 0 && !maps.Equal(got, want) {
				t.Errorf("copy values %v: %s headers %v, want %v", c.copyValues, ch.Name, got, want)
			}
			if !slices.Equal(ch.Vars, c.vars[ch.Name]) {
				t.Errorf("copy values %v: %s vars %v, want %v", c.copyValues, ch.Name, ch.Vars, c.vars[ch.Name])
			}
		}
		if plan[3].Server.On() {
			t.Errorf("jira, off in opencode, comes in switched on")
		}
	}
}

func TestPlanNamesClashesRefusesDuplicatesAndWhatTheSettingsRefuse(t *testing.T) {
	fetch := pick(t, VSCode, "mcp.json", "fetch")
	existing := map[string]settings.MCPServer{
		"github":     {Command: "gh-mcp"},
		"fetch-copy": fetch.Server.Clone(),
	}
	fs := pick(t, ClaudeDesktop, "claude_desktop_config.json", "filesystem")
	picked := []Found{
		pick(t, VSCode, "mcp.json", "github"),
		fetch,
		fs,
		fs,
		pick(t, ClaudeDesktop, "claude_desktop_config.json", "my db"),
		pick(t, ClaudeCode, ".mcp.json", "local-tool"),
		pick(t, ClaudeCode, ".mcp.json", "api-server"),
		pick(t, ClaudeCode, ".claude.json", "legacy"),
		pick(t, VSCode, "mcp.json", "playwright"),
	}
	plan := Plan(picked, existing, false)
	for i, c := range []struct{ name, renamed, refused string }{
		{name: "github-2", renamed: "github is taken"},
		{refused: "configured already, as fetch-copy"},
		{name: "filesystem"},
		{refused: "configured already, as filesystem"},
		{name: "my-db", renamed: "letters, digits"},
		{refused: "relative path"},
		{refused: `"{env:API_BASE_URL}/mcp" has no host`},
		{refused: "SSE"},
		{name: "playwright"},
	} {
		ch := plan[i]
		switch {
		case c.refused != "":
			if ch.Refused == nil || !strings.Contains(ch.Refused.Error(), c.refused) || ch.Name != "" {
				t.Errorf("%d %s: refused %v, name %q; want it refused saying %q", i, ch.Found.Name, ch.Refused, ch.Name, c.refused)
			}
		case ch.Refused != nil || ch.Name != c.name || !strings.Contains(ch.Renamed, c.renamed) || c.renamed == "" && ch.Renamed != "":
			t.Errorf("%d %s: name %q (%q), refused %v; want %q (%q)", i, ch.Found.Name, ch.Name, ch.Renamed, ch.Refused, c.name, c.renamed)
		case len(ch.Server.Check(ch.Name)) > 0:
			t.Errorf("%d: %s does not pass the settings' checks: %v", i, ch.Name, ch.Server.Check(ch.Name))
		}
	}
	if got := plan[0].Vars; !slices.Equal(got, []string{"GITHUB_TOKEN"}) {
		t.Errorf("github from VS Code needs %v, want its input as GITHUB_TOKEN", got)
	}
	if got := plan[8].Vars; !slices.Equal(got, []string{"PW_PORT"}) {
		t.Errorf("playwright needs %v, want PW_PORT (its number written out)", got)
	}
}

func TestPlanSuffixKeepsALongNameValid(t *testing.T) {
	long := strings.Repeat("a", 31) + "b"
	existing := map[string]settings.MCPServer{long: {Command: "one"}, long[:30] + "-2": {Command: "two"}}
	plan := Plan([]Found{{Name: long, Server: settings.MCPServer{Command: "three"}}}, existing, false)
	if ch := plan[0]; ch.Refused != nil || ch.Name != long[:30]+"-3" {
		t.Errorf("got %q (refused %v), want %q", ch.Name, ch.Refused, long[:30]+"-3")
	}
}

func TestSafeNameMakesAValidServerName(t *testing.T) {
	for in, want := range map[string]string{
		"github":                       "github",
		"my db":                        "my-db",
		"@scope/server.name":           "scope-server-name",
		"a__b___c":                     "a_b_c",
		"tail_":                        "tail",
		"__":                           "server",
		"":                             "server",
		strings.Repeat("x", 40):        strings.Repeat("x", 32),
		strings.Repeat("y", 31) + "_z": strings.Repeat("y", 31),
	} {
		got := SafeName(in)
		if got != want {
			t.Errorf("SafeName(%q) = %q, want %q", in, got, want)
		}
		if err := settings.CheckMCPServerName(got); err != nil {
			t.Errorf("SafeName(%q) = %q, which settings refuse: %v", in, got, err)
		}
	}
}

func TestPlanRefusesAServerImportedBeforeWithOrWithoutItsValues(t *testing.T) {
	github := pick(t, ClaudeDesktop, "claude_desktop_config.json", "github")
	for _, copied := range []bool{false, true} {
		before, _ := github.Convert(copied)
		for _, copyNow := range []bool{false, true} {
			plan := Plan([]Found{github}, map[string]settings.MCPServer{"gh": before}, copyNow)
			if err := plan[0].Refused; err == nil || !strings.Contains(err.Error(), "configured already, as gh") {
				t.Errorf("imported before with copy values %v, again with %v: refused %v", copied, copyNow, err)
			}
		}
	}
}
