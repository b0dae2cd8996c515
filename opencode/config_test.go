package opencode

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
)

// designConfig is docs/DESIGN.md's OpenCode config, as data.
var designConfig = map[string]any{
	"$schema": "https://opencode.ai/config.json",
	"mcp": map[string]any{
		"codehydra": map[string]any{
			"type": "remote",
			"url":  "http://127.0.0.1:{env:CODEHYDRA_MCP_PORT}/mcp",
			"headers": map[string]any{
				"X-Workspace-Path": "{env:CODEHYDRA_WORKSPACE_PATH}",
				"Authorization":    "Bearer {env:CODEHYDRA_MCP_TOKEN}",
			},
			"enabled": true,
		},
	},
}

func TestWriteConfigWritesDesignJSONPrivately(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "codehydra-mcp.json")
	if err := WriteConfig(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("config is not JSON: %v", err)
	}
	if !reflect.DeepEqual(got, designConfig) {
		t.Errorf("config = %v, want %v", got, designConfig)
	}
	if string(b) != string(ConfigJSON()) {
		t.Errorf("file differs from ConfigJSON()")
	}
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
		}
	}
}

func TestWriteConfigReplacesAnOldFileAndLeavesNoTempFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "codehydra-mcp.json")
	if err := os.WriteFile(path, []byte(`{"old":true, "much longer content than the new file has ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ... ..."}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteConfig(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != string(ConfigJSON()) {
		t.Errorf("old content not replaced: %s", b)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("folder holds %d entries, want only the config", len(entries))
	}
}
