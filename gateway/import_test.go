//go:build unix

package gateway

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"codehydra/internal/mcpimport"
	"codehydra/internal/settings"
	"codehydra/internal/testenv"
)

// TestAServerImportedFromAProjectsMCPJSONRunsWithoutItsWrittenOutSecret:
// server-everything, as a project's .mcp.json (Claude Code) names it with
// a token written out and a ${VAR} reference, is found, planned without
// copying the token, and runs through the gateway with both filled from
// CodeHydra's environment.
func TestAServerImportedFromAProjectsMCPJSONRunsWithoutItsWrittenOutSecret(t *testing.T) {
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	home, project := t.TempDir(), t.TempDir()
	cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"every": map[string]any{
		"command": every, "env": map[string]string{"API_TOKEN": "sk-written-out-in-the-file", "REGION": "${EVERY_REGION}"}}}})
	if err != nil {
		t.Fatal(err)
	}
	testenv.WriteFile(t, filepath.Join(project, ".mcp.json"), string(cfg))
	found, errs := mcpimport.Scan(mcpimport.Options{GOOS: "linux", Projects: []string{project},
		Getenv: func(k string) string { return map[string]string{"HOME": home}[k] }})
	if len(errs) > 0 || len(found) != 1 || found[0].Problem != "" {
		t.Fatalf("Scan = %+v, %v; want the one server", found, errs)
	}
	choices := mcpimport.Plan(found, nil, false)
	if len(choices) != 1 || choices[0].Refused != nil {
		t.Fatalf("Plan = %+v", choices)
	}
	imported := choices[0].Server
	if env := imported.Env; env["API_TOKEN"] != "{env:API_TOKEN}" || env["REGION"] != "{env:EVERY_REGION}" {
		t.Fatalf("imported env %v, want both as {env:} references", env)
	}

	lookup := map[string]string{"API_TOKEN": "token-from-codehydras-env", "EVERY_REGION": "eu-1"}
	g := New(Options{Servers: map[string]settings.MCPServer{choices[0].Name: imported}, StartTimeout: 20 * time.Second, StopTimeout: time.Second,
		LookupEnv: func(k string) (string, bool) { v, ok := lookup[k]; return v, ok }, Unpinned: true})
	t.Cleanup(func() { _ = g.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	res, err := g.Call(ctx, "", choices[0].Name+"__get-env", nil)
	if err != nil || res.IsError {
		t.Fatalf("get-env of the imported server: %+v, %v", res, err)
	}
	env := text(t, res)
	if !strings.Contains(env, "token-from-codehydras-env") || !strings.Contains(env, "eu-1") || strings.Contains(env, "sk-written-out") {
		t.Fatalf("the imported server's environment %s, want the token and region from CodeHydra's, not the file's", env)
	}
}
