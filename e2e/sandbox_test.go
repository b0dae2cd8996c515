//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"codehydra/internal/fakemodel"
	"codehydra/internal/paths"
	"codehydra/internal/sandbox"
	"codehydra/internal/testenv"
	"codehydra/mcp"
	"codehydra/opencode"
)

// Issue 20: each agent, and everything that runs for its workspace, in a
// Landlock domain of its own. The built binary runs the real opencode,
// whose own bash tool a fake model drives with command lines hidden from
// opencode's path check, as a prompt-injected agent would write them.

// sandboxedApp is a running `codehydra serve` with two workspaces, a and
// b, of one repository, each with its real opencode agent; b holds a
// secret.
type sandboxedApp struct {
	*appRun
	bin, opencode string
	env           []string
	repo, a, b    string
	secret        string // b's secret file
	home          string
	model         *fakemodel.Server
}

func launchSandboxed(t *testing.T, extraSettings map[string]any) *sandboxedApp {
	t.Helper()
	oc := testenv.RealOpencode(t)
	testenv.RequireSandbox(t)
	bin := builtApp(t)
	isolate(t)
	s := &sandboxedApp{bin: bin, opencode: oc, home: os.Getenv("HOME"), model: &fakemodel.Server{}}
	// The fake model as provider, and every permission granted: what
	// stops the agent must be the kernel, not opencode asking first.
	modelEnv := startFakeModel(t, s.model, map[string]any{"tool_call": true},
		map[string]any{"permission": map[string]any{"bash": "allow", "edit": "allow", "external_directory": "allow"}})
	s.repo = testenv.GitRepo(t, "repo")
	for _, n := range []string{"a", "b"} {
		testenv.Git(t, s.repo, "worktree", "add", "-q", "-b", n, filepath.Join(filepath.Dir(s.repo), "worktrees", n))
	}
	s.a, s.b = filepath.Join(filepath.Dir(s.repo), "worktrees", "a"), filepath.Join(filepath.Dir(s.repo), "worktrees", "b")
	s.secret = filepath.Join(s.b, "secret.txt")
	testenv.WriteFile(t, s.secret, "b's secret: swordfish\n")
	testenv.WriteFile(t, filepath.Join(s.home, ".bashrc"), "# the user's own\n")
	// The caches that builds write, as a developer's home has them.
	for _, d := range []string{".npm", "go/pkg", "go/bin", ".cargo/bin"} {
		if err := os.MkdirAll(filepath.Join(s.home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	set := map[string]any{"opencodeBin": oc, "projects": []string{s.repo}, "sandbox": "required"}
	for k, v := range extraSettings {
		set[k] = v
	}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	testenv.WriteSettings(t, string(b))
	// Go's build cache where it is on this machine, already warm: the
	// sandbox grants the folder GOCACHE names.
	goEnv := exec.Command("go", "env", "GOCACHE")
	goEnv.Env = testenv.MachineEnv()
	gocache, err := goEnv.Output()
	if err != nil {
		t.Fatal(err)
	}
	s.env = append(append(os.Environ(), modelEnv...), "GOCACHE="+strings.TrimSpace(string(gocache)))
	s.appRun = launch(t, bin, s.env)
	for _, ws := range []string{s.a, s.b} {
		s.poll(t, "the agent of "+ws+" to be ready", func() bool { return agentRecord(t, ws).Port != 0 })
	}
	return s
}

// agent is the API of the ready opencode of the workspace ws, with its
// password read from its environment.
func (s *sandboxedApp) agent(t *testing.T, ws string) agentClient {
	t.Helper()
	rec := agentRecord(t, ws)
	return agentClient{t: t, rec: rec, base: "http://127.0.0.1:" + strconv.Itoa(rec.Port),
		password: environOf(t, rec.PID)["OPENCODE_SERVER_PASSWORD"]}
}

type agentClient struct {
	t        *testing.T
	rec      opencode.AgentRecord
	base     string
	password string
}

func (a agentClient) do(method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(a.t.Context(), 3*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth("opencode", a.password)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %.300s", method, path, resp.Status, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

func (a agentClient) newSession() string {
	a.t.Helper()
	var s struct {
		ID string `json:"id"`
	}
	if err := a.do(http.MethodPost, "/session", map[string]any{}, &s); err != nil {
		a.t.Fatal(err)
	}
	return s.ID
}

// bash has the model call opencode's bash tool with script, hidden from
// opencode's path check as `echo <base64> | base64 -d | sh`, in a new
// session, and returns what the tool printed.
func (a agentClient) bash(script string) string {
	a.t.Helper()
	hidden := "echo " + base64.StdEncoding.EncodeToString([]byte(script)) + " | base64 -d | sh"
	out, err := a.tool("bash", map[string]string{"command": hidden, "description": "run the script"})
	if err != nil {
		a.t.Fatal(err)
	}
	return out
}

// tool has the model call the tool name (as opencode names it, e.g.
// codehydra_workspace_get_diff) with args, in a new session, and returns
// what the tool answered; err when the call did not complete.
func (a agentClient) tool(name string, args any) (string, error) {
	a.t.Helper()
	session := a.newSession()
	raw, err := json.Marshal(args)
	if err != nil {
		a.t.Fatal(err)
	}
	if err := a.do(http.MethodPost, "/session/"+session+"/message", map[string]any{
		"model": map[string]any{"providerID": "fake", "modelID": "m"},
		"parts": []any{map[string]any{"type": "text", "text": "CALL " + name + " " + string(raw)}},
	}, nil); err != nil {
		a.t.Fatal(err)
	}
	var msgs []struct {
		Parts []struct {
			Type  string `json:"type"`
			Tool  string `json:"tool"`
			State struct {
				Status string `json:"status"`
				Output string `json:"output"`
				Error  string `json:"error"`
			} `json:"state"`
		} `json:"parts"`
	}
	if err := a.do(http.MethodGet, "/session/"+session+"/message", nil, &msgs); err != nil {
		a.t.Fatal(err)
	}
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Type == "tool" && p.Tool == name {
				if p.State.Status != "completed" {
					return p.State.Output, fmt.Errorf("the %s tool did not complete: %s %s", name, p.State.Status, p.State.Error)
				}
				return p.State.Output, nil
			}
		}
	}
	a.t.Fatalf("the model's %s call left no tool part: %+v", name, msgs)
	return "", nil
}

// wantLines fails for each line of want that out lacks.
func wantLines(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("the output lacks %q:\n%s", w, out)
		}
	}
}

// fileText is the content of the file at path.
func fileText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func unchanged(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || string(b) != want {
		t.Errorf("%s is now %q (%v), want %q", path, b, err, want)
	}
}

// TestTheKernelSandboxWithTheRealOpencode launches serve once, with the
// two workspaces' agents and a workspace-scoped MCP server that checks
// nothing, and tries what the issue asks, each part a subtest.
func TestTheKernelSandboxWithTheRealOpencode(t *testing.T) {
	naive := filepath.Join(t.TempDir(), "naivefs")
	if err := goBuild(naive, "../internal/testenv/naivefs"); err != nil {
		t.Fatal(err)
	}
	s := launchSandboxed(t, map[string]any{"mcpServers": map[string]any{
		"nfs": map[string]any{"command": naive, "scope": "workspace"},
	}})
	for _, st := range []struct {
		name string
		fn   func(*testing.T, *sandboxedApp)
	}{
		{"an agent's own shell cannot leave its workspace", ownShellCannotLeave},
		{"builds work inside the sandbox", buildsWorkInside},
		{"a task and a workspace's MCP server are confined like its agent", tasksAndServersConfined},
		// Last: it restarts a's agent.
		{"a confined agent keeps its sessions and serves its web UI and attach", sessionsWebUIAndAttach},
	} {
		t.Run(st.name, func(t *testing.T) { st.fn(t, s) })
	}
	s.stop(t)
}

func ownShellCannotLeave(t *testing.T, s *sandboxedApp) {
	a := s.agent(t, s.a)
	tokenBefore, settingsBefore := fileText(t, paths.TokenFile()), fileText(t, paths.SettingsFile())
	bPID := agentRecord(t, s.b).PID

	raw, err := s.call(t, s.a, mcp.ToolGetStatus, nil)
	if err != nil {
		t.Fatal(err)
	}
	var status struct {
		Agent struct {
			Sandbox struct {
				Enforced         bool   `json:"enforced"`
				ABI              int    `json:"abi"`
				Reason           string `json:"reason"`
				UnixSocketFilter bool   `json:"unixSocketFilter"`
				Gaps             string `json:"gaps"`
			} `json:"sandbox"`
		} `json:"agent"`
	}
	if err := json.Unmarshal(raw, &status); err != nil {
		t.Fatal(err)
	}
	probe := sandbox.Probe()
	if sb := status.Agent.Sandbox; !sb.Enforced || sb.ABI != probe.ABI || sb.UnixSocketFilter != (probe.ABI < 9) ||
		strings.Contains(sb.Gaps, "unix sockets") {
		t.Errorf("workspace_get_status agent.sandbox = %+v, want enforced with ABI %d, the unix socket filter before ABI 9 "+
			"and no unix socket left open\n%s", sb, probe.ABI, raw)
	}
	// A stand-in for the session D-Bus: a unix socket the user's session
	// listens on, in a folder the agent may read.
	busDir, err := os.MkdirTemp("", "bus")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(busDir) })
	bus, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(busDir, "bus"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()

	// The five escapes a review found, each one line.
	out := a.bash(fmt.Sprintf(`
cat %[1]q && echo LEAK-token || echo REFUSED-token
tr '\0' '\n' < /proc/%[2]d/environ | grep OPENCODE_SERVER_PASSWORD && echo LEAK-environ || echo REFUSED-environ
echo planted > %[3]q && echo LEAK-workspace || echo REFUSED-workspace
echo overwritten > %[4]q && echo LEAK-home || echo REFUSED-home
echo '{}' > %[5]q && echo LEAK-settings || echo REFUSED-settings
cat %[6]q && echo LEAK-secret || echo REFUSED-secret
ln -s %[4]q %[7]q && echo LEAK-reflog-link || echo REFUSED-reflog-link
echo '#!/bin/sh' > %[8]q && echo LEAK-path-program || echo REFUSED-path-program
mkdir -p %[9]q && echo 'export default async () => ({})' > %[9]q/x.js && echo LEAK-plugin || echo REFUSED-plugin
node -e 'const c = require("net").connect(process.argv[1]); c.on("connect", () => { console.log("LEAK-bus"); c.end() }); c.on("error", e => console.log("REFUSED-bus " + e.code))' %[10]q
`, paths.TokenFile(), bPID, filepath.Join(s.b, "planted.txt"), filepath.Join(s.home, ".bashrc"), paths.SettingsFile(), s.secret,
		filepath.Join(s.repo, ".git", "logs", "refs", "heads", "evil"), filepath.Join(s.home, "go", "bin", "git"),
		filepath.Join(paths.OpencodeConfigDir(), "plugin"), bus.Addr().String()))
	wantLines(t, out, "REFUSED-token", "REFUSED-environ", "REFUSED-workspace", "REFUSED-home", "REFUSED-settings",
		"REFUSED-secret", "REFUSED-reflog-link", "REFUSED-path-program", "REFUSED-plugin", "REFUSED-bus EACCES", "Permission denied")
	_ = bus.SetDeadline(time.Now().Add(200 * time.Millisecond))
	if c, err := bus.Accept(); err == nil {
		c.Close()
		t.Error("the socket outside got a connection from the agent's shell")
	}
	if strings.Contains(out, "LEAK-") || strings.Contains(out, "swordfish") || strings.Contains(out, tokenBefore) {
		t.Errorf("something got out:\n%s", out)
	}
	unchanged(t, paths.TokenFile(), tokenBefore)
	unchanged(t, paths.SettingsFile(), settingsBefore)
	unchanged(t, filepath.Join(s.home, ".bashrc"), "# the user's own\n")
	if _, err := os.Stat(filepath.Join(s.b, "planted.txt")); err == nil {
		t.Error("agent a wrote into workspace b")
	}

	// The same agent can still do its work at home.
	out = a.bash(`echo hello > inside.txt && git add inside.txt && git commit -qm "from the agent" && git log -1 --format=%s && echo $TMPDIR && touch "$TMPDIR/scratch" && echo TMP-OK`)
	wantLines(t, out, "from the agent", "TMP-OK")
	if got := testenv.Git(t, s.repo, "log", "-1", "--format=%s", "a"); got != "from the agent" {
		t.Errorf("branch a's last commit is %q, want the agent's", got)
	}
}

func buildsWorkInside(t *testing.T, s *sandboxedApp) {
	a := s.agent(t, s.a)
	// go build through the writable Go caches, npm install through npm's
	// (of a package packed here: no network needed).
	out := a.bash(`set -e
mkdir gob && cd gob
printf 'module example.com/x\ngo 1.21\n' > go.mod
printf 'package main\nfunc main() { println("built and ran") }\n' > main.go
go build -o x . && ./x
cd .. && mkdir pkgsrc && cd pkgsrc
printf '{"name":"tinypkg","version":"1.0.0","main":"index.js"}' > package.json
echo 'module.exports = "tiny"' > index.js
npm pack --silent >/dev/null
cd .. && printf '{"name":"app","version":"1.0.0"}' > package.json
npm install --no-audit --no-fund --silent ./pkgsrc/tinypkg-1.0.0.tgz
node -e 'console.log("npm gave " + require("tinypkg"))'
`)
	wantLines(t, out, "built and ran", "npm gave tiny")
	if entries, err := os.ReadDir(filepath.Join(s.home, ".npm")); err != nil || len(entries) == 0 {
		t.Errorf("npm's cache in ~/.npm is empty (%v): npm did not use it", err)
	}
}

func tasksAndServersConfined(t *testing.T, s *sandboxedApp) {
	tokenBefore, settingsBefore := fileText(t, paths.TokenFile()), fileText(t, paths.SettingsFile())
	bashrcBefore := fileText(t, filepath.Join(s.home, ".bashrc"))

	// A task: make runs whatever its recipe says, here the five escapes
	// and b's secret, one line each.
	testenv.WriteFile(t, filepath.Join(s.a, "escape.sh"), fmt.Sprintf(`
cat %[1]q && echo LEAK-token || echo REFUSED-token
tr '\0' '\n' < /proc/%[2]d/environ | grep OPENCODE_SERVER_PASSWORD && echo LEAK-environ || echo REFUSED-environ
echo planted > %[3]q && echo LEAK-workspace || echo REFUSED-workspace
echo overwritten > %[4]q && echo LEAK-home || echo REFUSED-home
echo '{}' > %[5]q && echo LEAK-settings || echo REFUSED-settings
cat %[6]q && echo LEAK-secret || echo REFUSED-secret
`, paths.TokenFile(), agentRecord(t, s.b).PID, filepath.Join(s.b, "planted-by-task.txt"), filepath.Join(s.home, ".bashrc"),
		paths.SettingsFile(), s.secret))
	testenv.WriteFile(t, filepath.Join(s.a, "Makefile"), "peek:\n\tsh escape.sh\nlocal:\n\techo made > made.txt\n")
	raw, err := s.call(t, s.a, mcp.ToolRunTask, map[string]any{"name": "make:peek"})
	if err != nil {
		t.Fatal(err)
	}
	wantLines(t, string(raw), "REFUSED-token", "REFUSED-environ", "REFUSED-workspace", "REFUSED-home", "REFUSED-settings",
		"REFUSED-secret", "Permission denied")
	if strings.Contains(string(raw), "LEAK-") || strings.Contains(string(raw), "swordfish") || strings.Contains(string(raw), tokenBefore) {
		t.Errorf("something got out of the task: %s", raw)
	}
	unchanged(t, paths.TokenFile(), tokenBefore)
	unchanged(t, paths.SettingsFile(), settingsBefore)
	unchanged(t, filepath.Join(s.home, ".bashrc"), bashrcBefore)
	if _, err := os.Stat(filepath.Join(s.b, "planted-by-task.txt")); err == nil {
		t.Error("a's task wrote into workspace b")
	}
	if _, err := s.call(t, s.a, mcp.ToolRunTask, map[string]any{"name": "make:local"}); err != nil {
		t.Fatal(err)
	}
	unchanged(t, filepath.Join(s.a, "made.txt"), "made\n")

	// A workspace's own instance of an MCP server with no checks of its
	// own: the kernel refuses what it should have.
	if err := os.Symlink(s.secret, filepath.Join(s.a, "link-out")); err != nil {
		t.Fatal(err)
	}
	// One client for the calls below, as a's agent calls: with its own
	// token. The gateway knows the server's tools once a probe of it has
	// listed them, shortly after launch.
	aToken := environOf(t, agentRecord(t, s.a).PID)["CODEHYDRA_MCP_TOKEN"]
	remote, err := mcp.Dial(t.Context(), mcp.DialOptions{URL: s.info.MCPURL, Token: aToken, WorkspacePath: s.a})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	call := func(tool string, args any) (string, error) {
		raw, err := remote.Call(t.Context(), tool, args)
		return string(raw), err
	}
	if !testenv.Poll(45*time.Second, 250*time.Millisecond, func() bool {
		_, err := call("nfs__read_file", map[string]any{"path": filepath.Join(s.a, "made.txt")})
		return err == nil || !strings.Contains(err.Error(), "unknown tool")
	}) {
		_, err := call("nfs__read_file", map[string]any{"path": filepath.Join(s.a, "made.txt")})
		t.Fatalf("the gateway never offered nfs's tools: %v\n%s", err, s.out)
	}
	// It starts in CodeHydra's empty folder, not in a: the workspace is
	// named in full.
	for _, path := range []string{s.a + "/../b/secret.txt", filepath.Join(s.a, "link-out"), s.secret} {
		out, err := call("nfs__read_file", map[string]any{"path": path})
		if err == nil || !strings.Contains(err.Error(), "permission denied") || strings.Contains(out+err.Error(), "swordfish") {
			t.Errorf("nfs__read_file %s = %s, %v; want permission denied", path, out, err)
		}
	}
	if _, err := call("nfs__write_file", map[string]any{"path": s.a + "/../b/planted.txt", "content": "x"}); err == nil ||
		!strings.Contains(err.Error(), "permission denied") {
		t.Errorf("nfs__write_file into b: %v, want permission denied", err)
	}
	if out, err := call("nfs__read_file", map[string]any{"path": filepath.Join(s.a, "made.txt")}); err != nil || !strings.Contains(out, "made") {
		t.Errorf("nfs__read_file of its own file = %s, %v", out, err)
	}
	if out, err := call("nfs__read_file", map[string]any{"path": "made.txt"}); err == nil || strings.Contains(out, "made") {
		t.Errorf("nfs__read_file of a relative path = %s, %v; want nothing: it starts outside its workspace", out, err)
	}
}

func sessionsWebUIAndAttach(t *testing.T, s *sandboxedApp) {
	a := s.agent(t, s.a)
	session := a.newSession()
	if _, err := s.call(t, s.a, mcp.ToolRestartAgent, nil); err != nil {
		t.Fatal(err)
	}
	s.poll(t, "the agent of a to come back", func() bool {
		rec := agentRecord(t, s.a)
		return rec.Port != 0 && rec.PID != a.rec.PID
	})
	a = s.agent(t, s.a)
	var sessions []struct {
		ID string `json:"id"`
	}
	if err := a.do(http.MethodGet, "/session", nil, &sessions); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(sessions, func(x struct {
		ID string `json:"id"`
	}) bool {
		return x.ID == session
	}) {
		t.Errorf("the session %s is gone after the restart: %+v", session, sessions)
	}

	// The web UI.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, a.base+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("opencode", a.password)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "<html") {
		t.Errorf("the web UI: %s %.200s", resp.Status, body)
	}

	// A client attached to the confined server, as *Copy attach command*
	// hands it over: the password in the environment.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.opencode, "run", "--attach", a.base, "-m", "fake/m", "say hello")
	cmd.Env = append(s.env, "OPENCODE_SERVER_USERNAME=opencode", "OPENCODE_SERVER_PASSWORD="+a.password)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Done.") {
		t.Errorf("opencode run --attach: %v\n%s", err, out)
	}
}
