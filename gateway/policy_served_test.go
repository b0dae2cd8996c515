//go:build unix

package gateway

// The policies enforced by CodeHydra's MCP server in front of the gateway
// (paths, a server's rateLimit) and the gateway's pins, each with a real
// server, called by a real client with a workspace's token (see
// servedAsWorkspace).

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/settings"
	"codehydra/internal/testenv"
)

// servedCall calls tool with args as cs and returns its text, or for an
// error result CodeHydra's error code and message ("" for a server's own
// error result).
func servedCall(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) (out, code string) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	if !res.IsError {
		return text(t, res), ""
	}
	var e struct {
		Error struct{ Code, Message string }
	}
	_ = json.Unmarshal([]byte(text(t, res)), &e)
	return e.Error.Message, e.Error.Code
}

func TestServerFilesystemsPathRulesNarrowAWorkspacesCallsAndRefusalsNeverReachIt(t *testing.T) {
	fs := testenv.RealMCPServer(t, "mcp-server-filesystem")
	g := newGateway(t, map[string]settings.MCPServer{"fs": {Command: fs, Scope: settings.ScopeWorkspace, Confine: true,
		Paths: settings.PathRules{Allow: []string{"src/"}, Deny: []string{"src/secret*"}}}})
	cs, ws := servedAsWorkspace(t, g, "fs__read_text_file")
	testenv.WriteFile(t, filepath.Join(ws, "src", "secret.txt"), "the secret")
	testenv.WriteFile(t, filepath.Join(ws, "notes.txt"), "outside src")

	if got, code := servedCall(t, cs, "fs__read_text_file", map[string]any{"path": filepath.Join(ws, "src", "a.txt")}); code != "" || got != "a\n" {
		t.Fatalf("read of src/a.txt = %q (error %q), want its content", got, code)
	}
	for path, says := range map[string]string{
		filepath.Join(ws, "src", "secret.txt"): `its paths.deny rule "src/secret*"`,
		filepath.Join(ws, "notes.txt"):         `lies under none of its paths.allow rules ("src/"`,
		"/etc/passwd":                          "names a path outside it",
	} {
		got, code := servedCall(t, cs, "fs__read_text_file", map[string]any{"path": path})
		if code != "forbidden" || !strings.Contains(got, says) {
			t.Errorf("read of %s = %q (error %q), want forbidden: %s", path, got, code, says)
		}
	}
	if calls := g.Statuses()[0].Calls; calls != 1 {
		t.Fatalf("the server got %d calls, want 1: a refused call must not reach it", calls)
	}
}

func TestAServersRateLimitRefusesTheCallPastItNamingTheServerWithServerEverything(t *testing.T) {
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	g := newGateway(t, map[string]settings.MCPServer{"every": {Command: every, RateLimit: settings.ServerRateLimit{PerMinute: 2}}})
	cs, _ := servedAsWorkspace(t, g, "every__echo")
	for i := range 2 {
		if got, code := servedCall(t, cs, "every__echo", map[string]any{"message": "hi"}); code != "" {
			t.Fatalf("call %d within the limit: %s %s", i+1, code, got)
		}
	}
	got, code := servedCall(t, cs, "every__echo", map[string]any{"message": "hi"})
	if code != "rate-limited" || !strings.Contains(got, `too many calls of the MCP server "every"`) || !strings.Contains(got, "rateLimit: 2 per minute") {
		t.Fatalf("the third call = %q (error %q), want rate-limited naming every and its limit", got, code)
	}
	if calls := g.Statuses()[0].Calls; calls != 2 {
		t.Fatalf("the server got %d calls, want 2: the refused one must not reach it", calls)
	}
}

// TestServerEverythingsToolWhosePinDiffersIsWithheldFromTheClientUntilAccepted:
// echo's pin is changed in the pins file between two runs, as if the
// server had offered another echo when it was pinned.
func TestServerEverythingsToolWhosePinDiffersIsWithheldFromTheClientUntilAccepted(t *testing.T) {
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	pinsPath := filepath.Join(t.TempDir(), "mcp-pins.json")
	server := map[string]settings.MCPServer{"every": {Command: every}}
	opts := func() Options {
		return Options{Servers: server, PinsFile: pinsPath, StartTimeout: 20 * time.Second, StopTimeout: time.Second}
	}
	first := New(opts())
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if tools := first.Tools(ctx); len(tools) == 0 {
		t.Fatal("server-everything offered no tools")
	}
	_ = first.Close()
	pins := readPins(t, pinsPath)
	echo, ok := pins.Servers["every"]["echo"]
	if !ok {
		t.Fatalf("echo was not pinned: %+v", pins.Servers["every"])
	}
	echo.Hash = "sha256:" + strings.Repeat("0", 64)
	pins.Servers["every"]["echo"] = echo
	data, err := json.Marshal(pins)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pinsPath, data, 0o600); err != nil {
		t.Fatal(err)
	}

	g := New(opts())
	t.Cleanup(func() { _ = g.Close() })
	cs, _ := servedAsWorkspace(t, g, "every__get-sum")
	if names := listed(t, cs); slices.Contains(names, "every__echo") {
		t.Fatalf("tools/list %v offers the withheld echo", names)
	}
	got, code := servedCall(t, cs, "every__echo", map[string]any{"message": "hi"})
	if code != "forbidden" || !strings.Contains(got, "definition changed; review it in Settings") {
		t.Fatalf("call of the withheld echo = %q (error %q), want forbidden saying its definition changed", got, code)
	}
	changes := g.ToolChanges("every")
	if len(changes) != 1 || changes[0].Tool != "echo" {
		t.Fatalf("ToolChanges = %+v, want echo's", changes)
	}
	if err := g.AcceptToolChange("every", "echo", changes[0].Hash); err != nil {
		t.Fatal(err)
	}
	awaitListed(t, cs, "offers echo once accepted", func(names []string) bool { return slices.Contains(names, "every__echo") })
	if got, code := servedCall(t, cs, "every__echo", map[string]any{"message": "hi"}); code != "" || !strings.Contains(got, "hi") {
		t.Fatalf("call of the accepted echo = %q (error %q)", got, code)
	}
}
