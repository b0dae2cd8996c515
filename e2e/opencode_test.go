//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"codehydra/internal/paths"
	"codehydra/internal/testenv"
	"codehydra/mcp"
	"codehydra/opencode"
)

// TestServeConnectsTheRealOpencodeToItsMCPServer runs `codehydra serve`,
// the built binary, with the real opencode as the agent of one workspace:
// the start-up order as shipped (MCP server, then the OpenCode config
// file, then agents) must leave the agent's opencode connected to the MCP
// server, and a tool call made from the agent's environment and config
// file, as opencode makes it, must act on the agent's own workspace. The
// file is the one source of the agent's codehydra entry, which the agent
// gets by path and inline (OPENCODE_CONFIG_CONTENT, which outranks the
// repository's opencode.json below): the test fails if the file is
// written after the agents start or not at all (the agent does not
// start), or if the inline copy is missing or is not the file's (the
// repository's entry wins, or the check below).
func TestServeConnectsTheRealOpencodeToItsMCPServer(t *testing.T) {
	oc := testenv.RealOpencode(t)
	bin := builtApp(t)
	isolate(t)
	repo := testenv.GitRepo(t, "repo")
	ws := filepath.Join(filepath.Dir(repo), "feature")
	testenv.Git(t, repo, "worktree", "add", "-q", "-b", "feature", ws)
	// The repository's own opencode config tries to take the codehydra
	// entry (and so the workspace's token) elsewhere; opencode ranks it
	// above OPENCODE_CONFIG's file, but below OPENCODE_CONFIG_CONTENT.
	testenv.WriteFile(t, filepath.Join(ws, "opencode.json"), `{"mcp":{"codehydra":{"type":"remote","url":"http://127.0.0.1:1/mcp","enabled":true}}}`)
	set, err := json.Marshal(map[string]any{"opencodeBin": oc, "projects": []string{repo}})
	if err != nil {
		t.Fatal(err)
	}
	testenv.WriteSettings(t, string(set))
	// No network: opencode would otherwise fetch its model list and
	// look for updates at start.
	env := append(os.Environ(), "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1")

	started := time.Now()
	app := launch(t, bin, env)
	var rec opencode.AgentRecord
	app.poll(t, "the agent of "+ws+" to listen", func() bool {
		rec = agentRecord(t, ws)
		return rec.Port != 0 // the record has the port once the agent is ready
	})
	// What opencode itself says of its MCP servers, once it answers.
	var status string
	app.poll(t, "the agent's opencode to settle its codehydra MCP connection", func() bool {
		status = agentMCPStatus(t, rec)
		return status != "" && status != "pending"
	})
	if status != "connected" {
		t.Fatalf("the agent's opencode reports the codehydra MCP server %q, want connected\n%s", status, app.out)
	}
	// The agent's server is locked: nothing without its password.
	for _, path := range []string{"/mcp", "/session", "/global/health"} {
		if code, _ := agentGet(t, rec, path, false); code != http.StatusUnauthorized {
			t.Errorf("GET %s on the agent without its password: %d, want 401", path, code)
		}
	}
	t.Logf("agent connected after %v", time.Since(started).Round(time.Millisecond))
	raw, err := app.call(t, ws, mcp.ToolGetOpencodePort, nil)
	if err != nil || string(raw) != strconv.Itoa(rec.Port) {
		t.Fatalf("%s = %s, %v; want the agent's port %d", mcp.ToolGetOpencodePort, raw, err, rec.Port)
	}

	// A tool call with the URL and headers the agent's opencode builds
	// from the config file and its own environment.
	agentEnv := environOf(t, rec.PID)
	url, token, wsHeader := agentMCPEndpoint(t, agentEnv)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	r, err := mcp.Dial(ctx, mcp.DialOptions{URL: url, Token: token, WorkspacePath: wsHeader})
	if err != nil {
		t.Fatalf("dial the MCP server as the agent (%s): %v", url, err)
	}
	defer r.Close()
	got, err := r.Call(ctx, mcp.ToolGetStatus, nil)
	if err != nil || !strings.Contains(string(got), `"path":"`+ws+`"`) {
		t.Fatalf("%s as the agent = %s, %v; want the agent's own workspace %s", mcp.ToolGetStatus, got, err, ws)
	}

	app.stop(t)
	exe, err := filepath.EvalSymlinks(oc)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(processesOf(t, exe), rec.PID) {
		t.Fatalf("the agent (pid %d) still runs after serve stopped", rec.PID)
	}
	t.Logf("whole test %v", time.Since(started).Round(time.Millisecond))
}

// agentMCPStatus is the status the opencode on port gives its codehydra
// MCP server ("" when it has none or does not answer).
func agentMCPStatus(t *testing.T, rec opencode.AgentRecord) string {
	t.Helper()
	code, body := agentGet(t, rec, "/mcp", true)
	var servers map[string]struct {
		Status string `json:"status"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &servers) != nil {
		return ""
	}
	return servers["codehydra"].Status
}

// agentGet asks the agent's opencode server for path, with the server
// password from the agent's own environment when auth is set; code is 0
// when the server does not answer.
func agentGet(t *testing.T, rec opencode.AgentRecord, path string, auth bool) (code int, body []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(rec.Port)+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth {
		req.SetBasicAuth("opencode", environOf(t, rec.PID)["OPENCODE_SERVER_PASSWORD"])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil
	}
	return resp.StatusCode, body
}

// agentRecord is the record the app keeps of the workspace's agent while
// it runs; zero when there is none yet.
func agentRecord(t *testing.T, ws string) opencode.AgentRecord {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(paths.AgentsDir(), "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		var rec opencode.AgentRecord
		if err == nil && json.Unmarshal(b, &rec) == nil && rec.Workspace == ws {
			return rec
		}
	}
	return opencode.AgentRecord{}
}

// environOf is the environment process pid was started with.
func environOf(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for kv := range strings.SplitSeq(string(b), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// agentMCPEndpoint reads the codehydra MCP server's URL and headers from
// the OpenCode config file the agent was given (OPENCODE_CONFIG), with
// its {env:…} references filled in from env as opencode fills them in.
func agentMCPEndpoint(t *testing.T, env map[string]string) (url, token, wsPath string) {
	t.Helper()
	if env["OPENCODE_CONFIG"] != paths.OpencodeConfigFile() {
		t.Fatalf("the agent's OPENCODE_CONFIG is %q, want %s", env["OPENCODE_CONFIG"], paths.OpencodeConfigFile())
	}
	b, err := os.ReadFile(env["OPENCODE_CONFIG"])
	if err != nil {
		t.Fatal(err)
	}
	entry := codehydraEntry(t, b)
	if inline := codehydraEntry(t, []byte(env["OPENCODE_CONFIG_CONTENT"])); !reflect.DeepEqual(inline, entry) {
		t.Fatalf("the agent's OPENCODE_CONFIG_CONTENT has the codehydra entry %+v, want the config file's %+v", inline, entry)
	}
	fill := func(s string) string {
		for k, v := range env {
			s = strings.ReplaceAll(s, "{env:"+k+"}", v)
		}
		if strings.Contains(s, "{env:") {
			t.Fatalf("%q names a variable the agent does not have", s)
		}
		return s
	}
	auth := fill(entry.Headers["Authorization"])
	token, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || len(entry.Headers) != 2 {
		t.Fatalf("the config's headers are %v, want Authorization: Bearer … and X-Workspace-Path", entry.Headers)
	}
	return fill(entry.URL), token, fill(entry.Headers["X-Workspace-Path"])
}

// opencodeMCPEntry is the codehydra MCP server of an OpenCode config file.
type opencodeMCPEntry struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

// codehydraEntry reads the codehydra MCP server from the OpenCode config b.
func codehydraEntry(t *testing.T, b []byte) opencodeMCPEntry {
	t.Helper()
	var cfg struct {
		MCP map[string]opencodeMCPEntry `json:"mcp"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("the OpenCode config: %v\n%s", err, b)
	}
	return cfg.MCP["codehydra"]
}
