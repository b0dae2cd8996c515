package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/instance"
	"codehydra/internal/testenv"
)

// Set by make test-windows: the cross-built codehydra.exe, wine's runner
// (build/wine-setup.sh) and opencode's Windows build (build/setup.sh).
const (
	windowsExeEnv      = "CODEHYDRA_WINDOWS_EXE"
	wineRunEnv         = "CODEHYDRA_WINE_RUN"
	windowsOpencodeEnv = "CODEHYDRA_WINDOWS_OPENCODE"
)

// npmCmdShim is what npm writes as node_modules/.bin/opencode.cmd on
// Windows (cmd-shim) for a package whose bin is bin/opencode.exe.
const npmCmdShim = "@ECHO off\r\nGOTO start\r\n:find_dp0\r\nSET dp0=%~dp0\r\nEXIT /b\r\n:start\r\nSETLOCAL\r\nCALL :find_dp0\r\n" +
	"\"%dp0%\\..\\opencode-ai\\bin\\opencode.exe\"   %*\r\n"

// winPath is the Windows path under which wine shows the Unix path p
// (drive Z: is the Unix root).
func winPath(p string) string { return `Z:` + strings.ReplaceAll(p, "/", `\`) }

// TestTheWindowsBuildServesUnderWine runs the built codehydra.exe under
// wine as a Windows user would: `serve` with a project, `status --json`, an
// MCP call from Linux to its port, two workspaces created with the command
// line (git.exe), each with a real agent (opencode's Windows build, found
// where npm's Windows layout puts it in the tools folder) that reports
// ready, one workspace deleted (its agent stopped), and a stop of serve
// that stops the other agent: no agent stop may run out of time, no
// opencode.exe may be left (the job objects), and the runner returns only
// once its wineserver has no process. Then the tray app, with no display,
// must run headless (not panic in GLFW), stop on Ctrl+C, and, run again
// and killed hard, leave neither its GUI program nor an agent.
func TestTheWindowsBuildServesUnderWine(t *testing.T) {
	exe, run, oc := os.Getenv(windowsExeEnv), os.Getenv(wineRunEnv), os.Getenv(windowsOpencodeEnv)
	if exe == "" || run == "" {
		t.Skipf("runs the Windows build under wine: make test-windows sets %s, %s and %s", windowsExeEnv, wineRunEnv, windowsOpencodeEnv)
	}
	if oc == "" {
		t.Fatalf("%s is not set: make test-windows sets it to opencode's Windows build (build/setup.sh installs it)", windowsOpencodeEnv)
	}
	if !testenv.Exists(oc) {
		t.Fatalf("no opencode for Windows at %s: install it with CODEHYDRA_WINE=1 ./build/setup.sh", oc)
	}
	base := isolate(t)
	// opencode as npm lays it out on Windows in the tools folder, where
	// CodeHydra looks when opencode is not on PATH: .bin/opencode.cmd,
	// which CodeHydra does not run but follows to the package's exe.
	modules := filepath.Join(os.Getenv("XDG_DATA_HOME"), "codehydra", "tools", "node_modules")
	testenv.WriteFile(t, filepath.Join(modules, ".bin", "opencode.cmd"), npmCmdShim)
	linkOrCopy(t, oc, filepath.Join(modules, "opencode-ai", "bin", "opencode.exe"))
	repo := testenv.GitRepo(t, "repo")   // beside base: the runner shows their parent to wine
	repo2 := testenv.GitRepo(t, "repo2") // the app's own --project, which the core passes on
	env := map[string]string{}
	// Not XDG_RUNTIME_DIR: wine's own Unix side needs it. The runtime
	// folder is then %LOCALAPPDATA%\codehydra in the run's private prefix,
	// whose instance file the script copies out for the Linux side.
	for _, v := range []string{"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"} {
		env[v] = winPath(os.Getenv(v))
	}
	gitconfig := filepath.Join(base, "gitconfig")
	testenv.WriteFile(t, gitconfig, "[user]\n\tname = Test\n\temail = test@example.com\n")
	env["GIT_CONFIG_GLOBAL"] = winPath(gitconfig)
	env["USERPROFILE"] = winPath(filepath.Join(base, "home"))
	// The agents need no model, only to listen and connect to CodeHydra's
	// MCP server: no network for them beyond 127.0.0.1.
	env["OPENCODE_DISABLE_MODELS_FETCH"] = "1"
	env["OPENCODE_DISABLE_AUTOUPDATE"] = "1"
	for _, v := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		env[v] = "http://127.0.0.1:9" // the discard port: nothing listens
	}
	env["NO_PROXY"], env["no_proxy"] = "127.0.0.1,localhost", "127.0.0.1,localhost"

	// The steps that must share one wineserver (the instance lock is
	// its) run in one script; the test makes its MCP call in between,
	// when the script says "ready", and lets it go on with the file "go".
	steps := filepath.Join(base, "steps")
	if err := os.Mkdir(steps, 0o700); err != nil {
		t.Fatal(err)
	}
	// Copies where the runner shows them: the runner cannot show a folder
	// such as /tmp, which its root has of its own. The GUI program,
	// which the core's default command starts, sits beside it.
	for _, name := range []string{"codehydra.exe", "codehydra-gui.exe"} {
		from := filepath.Join(filepath.Dir(exe), name)
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatalf("%v (make test-windows builds both programs)", err)
		}
		if err := os.WriteFile(filepath.Join(base, name), data, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	exe = filepath.Join(base, "codehydra.exe")
	script := `set -u
cd "$STEPS"
exe=$EXE
wine "$exe" serve --project "$REPO" >serve.out 2>&1 &
serve=$!
n=0; until [ -f "$RUNTIME/instance.json" ]; do n=$((n+1)); [ $n -lt 600 ] || { echo "no instance file" >fail; wineserver -k; exit 1; }; sleep 0.1; done
cp "$RUNTIME/instance.json" instance.json
# The project is added after the instance file is written.
n=0; until grep -q "CodeHydra is running" serve.out; do n=$((n+1)); [ $n -lt 600 ] || { echo "serve never said it runs" >>fail; break; }; sleep 0.1; done
wine "$exe" status --json >status.json 2>status.err || echo "status: $?" >>fail
wine "$exe" workspace create try-it --project "$REPO" >create.out 2>&1 || echo "create: $?" >>fail
# A second workspace, whose agent runs until serve's stop stops it.
wine "$exe" workspace create keep-it --project "$REPO" >create2.out 2>&1 || echo "create keep-it: $?" >>fail
n=0; until [ -s fail ] || [ "$(grep -c 'msg="agent ready"' serve.out)" -ge 2 ]; do n=$((n+1)); [ $n -lt 3000 ] || { echo "the two agents did not report ready within 5 minutes" >>fail; break; }; sleep 0.1; done
wine tasklist >tasks-ready.out 2>&1
touch ready
n=0; until [ -f go ]; do n=$((n+1)); [ $n -lt 1200 ] || { echo "no go" >>fail; break; }; sleep 0.1; done
ws=$(sed -n 's/^created workspace try-it at //p' create.out | tr -d '\r')
wine "$exe" workspace delete "$ws" >delete.out 2>&1 || echo "delete: $?" >>fail
# The delete goes on in the background: wait for the worktree to go.
dir=$(printf '%s' "$ws" | sed 's/^Z://' | tr '\\' /)
n=0; while [ -d "$dir" ]; do n=$((n+1)); [ $n -lt 600 ] || { echo "worktree $dir still there" >>fail; break; }; sleep 0.1; done
kill -INT $serve
wait $serve; echo $? >serve.rc
[ ! -f "$RUNTIME/instance.json" ] || echo "instance file left after the stop" >>fail
# Nothing of the agents is left once serve has exited.
wine tasklist >tasks.out 2>&1
! grep -i "opencode" tasks.out || echo "an opencode.exe is left after serve exited" >>fail
# The tray app (no command) where no window can be made: it runs headless.
wine "$exe" --project "$REPO2" >app.out 2>&1 &
app=$!
n=0; until grep -q "running headless" app.out; do n=$((n+1)); [ $n -lt 600 ] || { echo "the app did not say it runs headless" >>fail; break; }; sleep 0.1; done
# The core ran the GUI program in its console.
# (Its program, the first word of its command line, is this test's copy:
# the runner sees every process of the machine, and its own shell's
# command line holds this script.)
gui_pids() { for p in /proc/[0-9]*; do c=$(tr '\0' '\n' <"$p/cmdline" 2>/dev/null | head -n 1); case $c in *"$TESTDIR"*codehydra-gui.exe) echo "${p#/proc/}";; esac; done; }
n=0; until grep -q "CodeHydra is running" app.out; do n=$((n+1)); [ $n -lt 600 ] || { echo "the app never said it runs" >>fail; break; }; sleep 0.1; done
gui_pids >gui.pids
# Ctrl+C in a Windows console reaches every process attached to it: the
# core, which waits, and the GUI program it started (wine passes each its
# own SIGINT as a Ctrl+C).
kill -INT $app
for p in $(cat gui.pids); do kill -INT "$p"; done
wait $app; echo $? >app.rc
# wine's side of the GUI program ends just after Windows' process.
n=0; while [ -n "$(gui_pids)" ]; do n=$((n+1)); [ $n -lt 100 ] || { echo "a codehydra-gui.exe is left 10 s after the app exited:" >>fail; for p in $(gui_pids); do tr '\0' ' ' <"/proc/$p/cmdline" >>fail; echo >>fail; done; break; }; sleep 0.1; done
[ ! -f "$RUNTIME/instance.json" ] || echo "instance file left after the app's stop" >>fail
# Killed hard, the core takes the GUI program with it (a kill-on-close job
# of the core's, proc.EndWithThisProcess), and the GUI program its agents
# (theirs): nothing is left to hold the instance lock or the worktrees.
wine "$exe" --project "$REPO2" >app2.out 2>&1 &
app2=$!
n=0; until grep -q "CodeHydra is running" app2.out; do n=$((n+1)); [ $n -lt 600 ] || { echo "the app's second run never said it runs" >>fail; break; }; sleep 0.1; done
gui_pids >gui2.pids
[ -s gui2.pids ] || echo "the app's second run ran no codehydra-gui.exe" >>fail
# Until its agent has started, so that there is one to end.
n=0; until wine tasklist >tasks-before-kill.out 2>&1 && grep -qi "opencode" tasks-before-kill.out; do n=$((n+1)); [ $n -lt 120 ] || { echo "the app's second run started no agent" >>fail; break; }; sleep 0.5; done
kill -KILL $app2
wait $app2 2>/dev/null
n=0; while [ -n "$(gui_pids)" ]; do n=$((n+1)); [ $n -lt 100 ] || { echo "a codehydra-gui.exe is left 10 s after the core was killed" >>fail; break; }; sleep 0.1; done
n=0; until ! wine tasklist 2>&1 | grep -qi "opencode"; do n=$((n+1)); [ $n -lt 50 ] || { echo "an opencode.exe is left 10 s after the core was killed" >>fail; break; }; sleep 0.2; done
wine tasklist >tasks-killed.out 2>&1
`
	cmd := exec.Command(run, "--sh", script)
	cmd.Dir = steps
	// No display: wine then can make no window, as in a Windows service's
	// session, and the tray app must run headless.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(v string) bool {
		return strings.HasPrefix(v, "DISPLAY=") || strings.HasPrefix(v, "WAYLAND_DISPLAY=")
	})
	cmd.Env = append(cmd.Env, "WINRUN_BIND="+filepath.Dir(base), "STEPS="+steps, "EXE="+exe,
		"REPO="+winPath(repo), "REPO2="+winPath(repo2), "TESTDIR="+filepath.Base(filepath.Dir(base)), "RUNTIME=/root/.wine/drive_c/users/root/AppData/Local/codehydra") // the runner's user is root
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out testenv.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		// Let the script stop serve; kill the runner and what it started
		// (its process group) only if it hangs.
		_ = os.WriteFile(filepath.Join(steps, "go"), nil, 0o600)
		select {
		case <-exited:
		case <-time.After(2 * time.Minute):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	file := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(steps, name))
		return string(b)
	}
	report := func() string {
		var b strings.Builder
		for _, f := range []string{"fail", "serve.out", "status.err", "create.out", "create2.out", "delete.out", "serve.rc", "tasks-ready.out", "tasks.out", "app.out", "app.rc", "app2.out", "tasks-before-kill.out", "tasks-killed.out"} {
			b.WriteString("--- " + f + ":\n" + file(f) + "\n")
		}
		return b.String() + "--- runner:\n" + out.String()
	}
	testenv.WaitFor(t, "the script's ready", 8*time.Minute, func() bool {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("the wine run ended early: %v\n%s", err, report())
		default:
		}
		return testenv.Exists(filepath.Join(steps, "ready"))
	})
	if f := file("fail"); f != "" {
		t.Fatalf("under wine: %s\n%s", f, report())
	}

	wt := strings.TrimSpace(file("create.out"))
	if !strings.Contains(wt, "try-it") {
		t.Errorf("workspace create said %q, want the new worktree\n%s", wt, report())
	}
	for _, l := range logLines(file("serve.out"), "agent started", "agent ready") {
		t.Logf("under wine: %s", l)
	}
	// The agents are opencode.exe itself, which CodeHydra found behind
	// npm's opencode.cmd: no cmd.exe runs it.
	var agents int
	for l := range strings.Lines(file("tasks-ready.out")) {
		if strings.HasPrefix(strings.ToLower(l), "opencode.exe ") {
			agents++
		}
		if strings.HasPrefix(strings.ToLower(l), "cmd.exe ") {
			t.Errorf("a cmd.exe runs beside the agents: CodeHydra ran npm's opencode.cmd, not the opencode.exe it names\n%s", report())
		}
	}
	if agents != 2 {
		t.Errorf("%d opencode.exe run once both agents are ready, want 2\n%s", agents, report())
	}

	// From Linux, to the port the Windows program listens on.
	info, err := instance.Read(filepath.Join(steps, "instance.json"))
	if err != nil {
		t.Fatal(err)
	}
	var status instance.Info
	if err := json.Unmarshal([]byte(file("status.json")), &status); err != nil || status.PID != info.PID || status.MCPURL != info.MCPURL {
		t.Errorf("status --json = %q, %v; want the instance file's pid %d and address %s\n%s", file("status.json"), err, info.PID, info.MCPURL, report())
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "e2e-linux-side", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: info.MCPURL,
		HTTPClient: &http.Client{Transport: bearer{token: info.Token}}}, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v\n%s", info.MCPURL, err, report())
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "workspace_list"})
	if err != nil || res.IsError {
		t.Fatalf("workspace_list = %+v, %v", res, err)
	}
	listed, _ := json.Marshal(res.Content)
	if !strings.Contains(string(listed), "try-it") {
		t.Errorf("workspace_list from Linux = %s, want the workspace made under wine", listed)
	}
	cs.Close()

	stopAsked := time.Now()
	if err := os.WriteFile(filepath.Join(steps, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err
		if err != nil || file("fail") != "" {
			t.Fatalf("the wine run: %v\n%s", err, report())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("processes left 2 minutes after the stop: the wine run has not ended\n%s", report())
	}
	t.Logf("delete, stop and every process gone in %s", time.Since(stopAsked).Round(time.Millisecond))
	if rc := strings.TrimSpace(file("serve.rc")); rc != "0" {
		t.Errorf("serve exited with %s after SIGINT, want 0\n%s", rc, report())
	}
	// Each agent's stop (the delete's and serve's) ended its tree in time.
	// Only the stop's own failure: "context deadline exceeded" may also
	// be a slow start's (the agent's MCP connect), which is no stop's.
	serveOut := file("serve.out")
	if failed := logLines(serveOut, "agent did not stop"); len(failed) > 0 {
		t.Errorf("an agent's stop ran out of time: %q\n%s", failed, report())
	}
	stopped := logLines(serveOut, "agent stopped")
	for _, l := range stopped {
		t.Logf("under wine: %s", l)
	}
	// Every agent that became ready was stopped: the deleted workspace's
	// and the one serve's stop stopped (one that a slow start made fail
	// first and restart has a stop of its own).
	for _, ready := range logLines(serveOut, "agent ready") {
		pid := logField(ready, "pid")
		if pid == "" || !slices.ContainsFunc(stopped, func(l string) bool { return logField(l, "pid") == pid }) {
			t.Errorf("the agent of %q has no \"agent stopped\" with its pid %q\n%s", ready, pid, report())
		}
	}
	if file("gui.pids") == "" {
		t.Errorf("codehydra.exe with no command ran no codehydra-gui.exe\n%s", report())
	}
	// "2 projects": serve's, and the one the core passed on.
	if rc := strings.TrimSpace(file("app.rc")); rc != "0" || !strings.Contains(file("app.out"), "No display found") || !strings.Contains(file("app.out"), "2 projects") {
		t.Errorf("the tray app with no display: exit %s, want 0 after it ran headless with both projects\n%s", rc, report())
	}
	if list := testenv.Git(t, repo, "worktree", "list"); strings.Contains(list, "try-it") {
		t.Errorf("the worktree is still listed after the delete:\n%s", list)
	}
	if branches := testenv.Git(t, repo, "branch", "--list", "try-it"); branches != "" {
		t.Errorf("the workspace's branch is left after the delete: %q", branches)
	}
}

// logLines are the lines of a text log whose message is one of msgs.
func logLines(log string, msgs ...string) []string {
	var lines []string
	for l := range strings.Lines(log) {
		for _, m := range msgs {
			if strings.Contains(l, `msg="`+m+`"`) {
				lines = append(lines, strings.TrimSpace(l))
				break
			}
		}
	}
	return lines
}

// logField is the value of key in a text log line (key=value, values
// without spaces); "" when the line has none.
func logField(line, key string) string {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	return ""
}

// linkOrCopy makes dst the file src: a hard link where both are on one
// file system (opencode.exe is 180 MB), a copy otherwise. The runner shows
// wine dst's folder, not src's.
func linkOrCopy(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Link(src, dst) == nil {
		return
	}
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
