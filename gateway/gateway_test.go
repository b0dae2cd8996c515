//go:build unix

package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/settings"
	"codehydra/internal/testenv"
	"codehydra/mcp"
)

// newGateway returns a gateway for servers, closed at the end of the test,
// with quick backoff so that restarts show within a test's time.
func newGateway(t *testing.T, servers map[string]settings.MCPServer) *Gateway {
	t.Helper()
	g := New(Options{Servers: servers, StartTimeout: 20 * time.Second, StopTimeout: time.Second,
		Backoff: func(int) time.Duration { return 200 * time.Millisecond }})
	t.Cleanup(func() { _ = g.Close() })
	return g
}

func toolNames(tools []mcp.GatewayTool) []string {
	var names []string
	for _, t := range tools {
		names = append(names, t.Tool.Name)
	}
	return names
}

// text is the text content of a result.
func text(t *testing.T, res *sdk.CallToolResult) string {
	t.Helper()
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func args(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestToolsAppearNamespacedWithSchemasAndCallsReachTheServer(t *testing.T) {
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	g := newGateway(t, map[string]settings.MCPServer{"every": {Command: every}})
	changed := make(chan struct{}, 10)
	g.OnToolsChanged(func() { changed <- struct{}{} })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	tools := g.Tools(ctx)
	i := slices.IndexFunc(tools, func(t mcp.GatewayTool) bool { return t.Tool.Name == "every__echo" })
	if i < 0 {
		t.Fatalf("Tools = %v, want every__echo among them", toolNames(tools))
	}
	if tools[i].Server != "every" || tools[i].PerWorkspace || tools[i].Confine || tools[i].Tool.InputSchema == nil {
		t.Fatalf("every__echo = %+v, want server every, shared, with its input schema", tools[i])
	}
	for _, tl := range tools {
		if !strings.HasPrefix(tl.Tool.Name, "every__") {
			t.Fatalf("tool %s is not namespaced", tl.Tool.Name)
		}
	}
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("OnToolsChanged not called when the server's tools became known")
	}
	res, err := g.Call(ctx, "", "every__echo", args(t, map[string]string{"message": "hello gateway"}))
	if err != nil || res.IsError || !strings.Contains(text(t, res), "hello gateway") {
		t.Fatalf("Call echo = %+v, %v", res, err)
	}
	st := g.Statuses()
	if len(st) != 1 || st[0].State != StateRunning || st[0].Calls != 1 || st[0].Tools != len(tools) || st[0].Instances != 1 {
		t.Fatalf("Statuses = %+v", st)
	}
}

func TestAWorkspaceScopedFilesystemServerHasTheCallersWorkspaceAsItsRoot(t *testing.T) {
	fs := testenv.RealMCPServer(t, "mcp-server-filesystem")
	ws1, ws2 := t.TempDir(), t.TempDir()
	testenv.WriteFile(t, filepath.Join(ws1, "a.txt"), "one")
	testenv.WriteFile(t, filepath.Join(ws2, "b.txt"), "two")
	g := newGateway(t, map[string]settings.MCPServer{"fs": {Command: fs, Scope: settings.ScopeWorkspace}})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	tools := g.Tools(ctx) // before any workspace called it: learnt from a probe
	if !slices.Contains(toolNames(tools), "fs__read_text_file") || !tools[0].PerWorkspace {
		t.Fatalf("Tools = %v, want fs__read_text_file, per workspace", toolNames(tools))
	}
	read := func(ws, path string) *sdk.CallToolResult {
		t.Helper()
		res, err := g.Call(ctx, ws, "fs__read_text_file", args(t, map[string]string{"path": path}))
		if err != nil {
			t.Fatalf("Call from %s of %s: %v", ws, path, err)
		}
		return res
	}
	if res := read(ws1, filepath.Join(ws1, "a.txt")); res.IsError || text(t, res) != "one" {
		t.Fatalf("ws1 reading its own file = %q (isError %v)", text(t, res), res.IsError)
	}
	if res := read(ws2, filepath.Join(ws2, "b.txt")); res.IsError || text(t, res) != "two" {
		t.Fatalf("ws2 reading its own file = %q (isError %v)", text(t, res), res.IsError)
	}
	res := read(ws1, filepath.Join(ws2, "b.txt"))
	if !res.IsError || strings.Contains(text(t, res), "two") {
		t.Fatalf("ws1 reading ws2's file = %q (isError %v), want the server's refusal", text(t, res), res.IsError)
	}
	if _, err := g.Call(ctx, "", "fs__read_text_file", args(t, map[string]string{"path": filepath.Join(ws1, "a.txt")})); err == nil {
		t.Fatal("a caller without a workspace reached a workspace-scoped server")
	}
	if st := g.Statuses(); st[0].Instances != 2 {
		t.Fatalf("Statuses = %+v, want 2 instances", st)
	}
	// The first call to a new instance already sees the workspace: the
	// server takes its roots only after initialization.
	ws3 := t.TempDir()
	res, err := g.Call(ctx, ws3, "fs__list_allowed_directories", args(t, map[string]string{}))
	if err != nil || res.IsError || !strings.Contains(text(t, res), ws3) {
		t.Fatalf("the first call of a new instance lists %q (%v), want %s", text(t, res), err, ws3)
	}
}

func TestAServerThatCannotStartFailsClearlyAndStallsNoOther(t *testing.T) {
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	g := New(Options{StartTimeout: 3 * time.Second, Servers: map[string]settings.MCPServer{
		"every":   {Command: every},
		"missing": {Command: "codehydra-no-such-mcp-server"},
		"silent":  {Command: "sleep", Args: []string{"600"}},
		"garbage": {Command: "sh", Args: []string{"-c", "echo this is not json; echo '{broken'; sleep 600"}},
		"noenv":   {Command: every, Env: map[string]string{"T": "{env:CODEHYDRA_TEST_UNSET_VAR}"}},
	}})
	t.Cleanup(func() { _ = g.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	start := time.Now()
	tools := g.Tools(ctx)
	if !slices.Contains(toolNames(tools), "every__echo") {
		t.Fatalf("Tools = %v, want every's", toolNames(tools))
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("Tools took %s: a broken server stalled the others", d)
	}
	for name, want := range map[string]string{
		"missing": "missing: command not found: codehydra-no-such-mcp-server",
		"silent":  "silent: start",
		"garbage": "garbage: start",
		"noenv":   "CODEHYDRA_TEST_UNSET_VAR is not set",
	} {
		_, err := g.Call(ctx, "", name+"__x", nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Call %s__x = %v, want an error containing %q", name, err, want)
		}
	}
	for _, st := range g.Statuses() {
		if st.Name != "every" && (st.State != StateFailed || st.LastError == "") {
			t.Errorf("status of %s = %+v, want failed with its error", st.Name, st)
		}
	}
	if res, err := g.Call(ctx, "", "every__echo", args(t, map[string]string{"message": "still here"})); err != nil || res.IsError {
		t.Fatalf("every after the others failed: %v", err)
	}
}

func TestAServerThatNeverAnswersTimesOutWithTheCallsContext(t *testing.T) {
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	g := newGateway(t, map[string]settings.MCPServer{"every": {Command: every}})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	g.Tools(ctx)
	callCtx, callCancel := context.WithTimeout(ctx, time.Second)
	defer callCancel()
	start := time.Now()
	_, err := g.Call(callCtx, "", "every__trigger-long-running-operation", args(t, map[string]any{"duration": 300, "steps": 3}))
	if err == nil || !strings.Contains(err.Error(), "every: no answer") || time.Since(start) > 5*time.Second {
		t.Fatalf("a call past its time = %v after %s, want a timeout naming the server", err, time.Since(start))
	}
	if res, err := g.Call(ctx, "", "every__echo", args(t, map[string]string{"message": "after"})); err != nil || res.IsError {
		t.Fatalf("echo after a timed-out call: %v", err)
	}
}

func TestKillingAServerMidCallGivesAClearErrorAndARestart(t *testing.T) {
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	g := newGateway(t, map[string]settings.MCPServer{"every": {Command: every}})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	g.Tools(ctx)
	pids := serverPIDs(t)
	if len(pids) != 1 {
		t.Fatalf("server processes %v, want one", pids)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := g.Call(ctx, "", "every__trigger-long-running-operation", args(t, map[string]any{"duration": 30, "steps": 3}))
		errc <- err
	}()
	// The call counts once its session is up, just before the request goes
	// out; a kill on either side of the write ends the call the same way.
	testenv.WaitFor(t, "the call to go to the server", 20*time.Second, func() bool { return g.Statuses()[0].Calls == 1 })
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "every: the server ended during the call") {
			t.Fatalf("the call = %v, want an error saying the server ended", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not end when its server was killed")
	}
	testenv.WaitFor(t, "the server to restart", 20*time.Second, func() bool {
		st := g.Statuses()[0]
		return st.Restarts == 1 && st.State == StateRunning
	})
	if res, err := g.Call(ctx, "", "every__echo", args(t, map[string]string{"message": "again"})); err != nil || res.IsError {
		t.Fatalf("echo after the restart: %v", err)
	}
	if now := serverPIDs(t); len(now) != 1 || now[0] == pids[0] {
		t.Fatalf("server processes after the restart %v, want one new", now)
	}
}

func TestStreamableHTTPServerEverythingWorksWithItsHeaders(t *testing.T) {
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	port := freePort(t)
	cmd := testenvCommand(t, every, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	var out bytes.Buffer
	cmd.Stderr = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	testenv.WaitFor(t, "server-everything to listen", 20*time.Second, func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	t.Setenv("CODEHYDRA_TEST_HEADER", "from-env")
	g := newGateway(t, map[string]settings.MCPServer{"remote": {URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port),
		Headers: map[string]string{"X-Test": "{env:CODEHYDRA_TEST_HEADER}"}}})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if names := toolNames(g.Tools(ctx)); !slices.Contains(names, "remote__echo") {
		t.Fatalf("Tools = %v (status %+v), want remote__echo", names, g.Statuses())
	}
	res, err := g.Call(ctx, "", "remote__echo", args(t, map[string]string{"message": "over http"}))
	if err != nil || res.IsError || !strings.Contains(text(t, res), "over http") {
		t.Fatalf("Call over http = %+v, %v", res, err)
	}
}

func TestReconfigureStopsRemovedAndChangedServersAndCloseStopsAll(t *testing.T) {
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	g := newGateway(t, map[string]settings.MCPServer{"a": {Command: every}, "b": {Command: every}})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	g.Tools(ctx)
	if n := len(serverPIDs(t)); n != 2 {
		t.Fatalf("%d server processes, want 2", n)
	}
	g.Reconfigure(map[string]settings.MCPServer{"a": {Command: every}, "c": {Command: every, Args: []string{"stdio"}}})
	if n := len(serverPIDs(t)); n != 1 {
		t.Fatalf("%d server processes after b was removed, want 1 (a kept running)", n)
	}
	if names := toolNames(g.Tools(ctx)); slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "b__") }) ||
		!slices.Contains(names, "c__echo") {
		t.Fatalf("Tools after Reconfigure = %v", names)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if pids := serverPIDs(t); len(pids) != 0 {
		t.Fatalf("server processes %v left after Close", pids)
	}
	if _, err := g.Call(ctx, "", "a__echo", nil); err == nil {
		t.Fatal("a call after Close succeeded")
	}
}

func TestASharedServerTakesItsCachesFromCodeHydrasOwnFolder(t *testing.T) {
	env := sharedCacheEnv("/private/caches")
	for _, want := range []string{"npm_config_cache=/private/caches/npm", "XDG_CACHE_HOME=/private/caches/cache", "GOMODCACHE=/private/caches/go-mod"} {
		if !slices.Contains(env, want) {
			t.Errorf("shared server env %q lacks %q", env, want)
		}
	}
}
