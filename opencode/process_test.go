package opencode

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"codehydra/internal/testenv"
)

func TestAgentEnvReplacesInheritedCodehydraVariables(t *testing.T) {
	base := []string{
		"PATH=/usr/bin", "HOME=/home/u", "FOO=bar=baz",
		"OPENCODE_CONFIG=/elsewhere.json", "CODEHYDRA_MCP_TOKEN=parent-token", "CODEHYDRA_OTHER=1",
		"OPENCODE_DISABLE_MODELS_FETCH=1", "XCODEHYDRA_KEEP=1",
	}
	cfg := agentConfig{path: "/cfg/codehydra-mcp.json", entry: json.RawMessage(`{"type":"remote"}`)}
	got := agentEnv(base, cfg, "/p/ws/feat%x", 4242, "tok")
	want := []string{
		"PATH=/usr/bin", "HOME=/home/u", "FOO=bar=baz", "OPENCODE_DISABLE_MODELS_FETCH=1", "XCODEHYDRA_KEEP=1",
		"OPENCODE_CONFIG=/cfg/codehydra-mcp.json", `OPENCODE_CONFIG_CONTENT={"mcp":{"codehydra":{"type":"remote"}}}`,
		"CODEHYDRA_WORKSPACE_PATH=/p/ws/feat%x", "CODEHYDRA_MCP_PORT=4242", "CODEHYDRA_MCP_TOKEN=tok",
	}
	if !slices.Equal(got, want) {
		t.Errorf("agentEnv =\n%q\nwant\n%q", got, want)
	}
}

func TestLineWriterSplitsLinesAndCapsLongOnes(t *testing.T) {
	var lines []string
	w := &lineWriter{line: func(l string) { lines = append(lines, l) }}
	for _, chunk := range []string{"first\r\nsec", "ond\n\nthird", "\n", strings.Repeat("x", 3*maxLine), "\nlast"} {
		if n, err := w.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	w.flush()
	want := []string{"first", "second", "", "third", strings.Repeat("x", maxLine), "last"}
	if !slices.Equal(lines, want) {
		t.Errorf("lines = %q, want %q", lines, want)
	}
}

func TestLineRingKeepsTheLastLines(t *testing.T) {
	r := newLineRing(3)
	for _, l := range []string{"1", "2", "3", "4", "5"} {
		r.add(l)
	}
	if got := r.snapshot(); !slices.Equal(got, []string{"3", "4", "5"}) {
		t.Errorf("snapshot = %v", got)
	}
}

func TestConfigContentPutsTheCodehydraEntryOverTheUsersOwn(t *testing.T) {
	// The file's entry, not a copy of CodeHydra's constant: the file is
	// the one source (another port in its URL shows which was used).
	file := strings.Replace(configJSON, "127.0.0.1:{env:CODEHYDRA_MCP_PORT}", "127.0.0.1:{env:CODEHYDRA_MCP_PORT}0", 1)
	path := filepath.Join(t.TempDir(), "codehydra-mcp.json")
	testenv.WriteFile(t, path, file)
	cfg, err := readConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	var ours map[string]any
	if err := json.Unmarshal([]byte(file), &ours); err != nil {
		t.Fatal(err)
	}
	entry := ours["mcp"].(map[string]any)["codehydra"]
	for _, tc := range []struct {
		name, inherited string
		keep            map[string]any // keys of the user's content that must stay
	}{
		{"none", "", nil},
		{"not JSON", "{", nil},
		{"not an object", `[1]`, nil},
		{"the user's own settings", `{"model":"a/b","mcp":{"mine":{"type":"local","command":["x"]}}}`,
			map[string]any{"model": "a/b"}},
		{"a codehydra entry of the user's", `{"mcp":{"codehydra":{"type":"remote","url":"https://elsewhere.example/mcp"}}}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got map[string]any
			if err := json.Unmarshal([]byte(configContent(cfg, tc.inherited)), &got); err != nil {
				t.Fatal(err)
			}
			servers, _ := got["mcp"].(map[string]any)
			if !reflect.DeepEqual(servers["codehydra"], entry) {
				t.Errorf("codehydra entry = %v, want CodeHydra's %v", servers["codehydra"], entry)
			}
			for k, v := range tc.keep {
				if !reflect.DeepEqual(got[k], v) {
					t.Errorf("the user's %s = %v, want %v kept", k, got[k], v)
				}
			}
			if strings.Contains(tc.inherited, `"mine"`) && servers["mine"] == nil {
				t.Error("the user's own MCP server was dropped")
			}
		})
	}
}

func TestAnAgentStartNeedsTheConfigFileWithItsCodehydraEntry(t *testing.T) {
	dir := t.TempDir()
	// The system's own words for a missing file ("no such file or
	// directory" on Unix).
	_, missing := os.Stat(filepath.Join(dir, "missing"))
	for _, tc := range []struct{ name, content, want string }{
		{"no file", "", errors.Unwrap(missing).Error()},
		{"not JSON", "{", "has no codehydra MCP server"},
		{"no codehydra entry", `{"mcp":{"other":{"type":"remote","url":"http://127.0.0.1:1/mcp"}}}`, "has no codehydra MCP server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".json")
			if tc.content != "" {
				testenv.WriteFile(t, path, tc.content)
			}
			if _, err := readConfig(path); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("readConfig = %v; want an error naming %s and saying %q", err, path, tc.want)
			}
		})
	}
}
