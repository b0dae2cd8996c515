package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/sandbox"
	"codehydra/internal/testenv"
	"codehydra/tasks"
	"codehydra/tasks/taskstest"
	"codehydra/workspace"
)

// taskMakefile is the Makefile of the task tests' workspace. Its recipes
// run through make's shell: that is the workspace's own content, not the
// caller's arguments.
const taskMakefile = `fail:
	@echo failing; exit 7
sleep:
	@sleep 300 & echo $$! > child.pid; echo $$$$ > shell.pid; echo started; wait
loud:
	@head -c 3000000 /dev/zero | tr '\0' x; echo; echo END
tick:
	@for i in 1 2 3; do echo tick $$i; sleep 1; done
show:
	$(info V=$(V))
	@true
`

// taskWorkspace is a workspace of h with taskMakefile.
func taskWorkspace(h *harness, name string) string {
	h.t.Helper()
	ws := h.create(name)
	testenv.WriteFile(h.t, filepath.Join(ws.Path, "Makefile"), taskMakefile)
	return ws.Path
}

// progressSession is h.session(wsPath) whose client collects the progress
// notifications it gets.
func (h *harness) progressSession(wsPath string, got func(*sdk.ProgressNotificationParams)) *sdk.ClientSession {
	h.t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) { got(r.Params) },
	})
	hdr := h.authHeader(http.Header{WorkspaceHeader: {wsPath}})
	cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{
		Endpoint: h.srv.URL(), HTTPClient: &http.Client{Transport: &headerTransport{base: newTransport(h.t), header: hdr}},
		MaxRetries: -1, DisableStandaloneSSE: true,
	}, &sdk.ClientSessionOptions{ProtocolVersion: ProtocolSessions})
	if err != nil {
		h.t.Fatalf("connect: %v", err)
	}
	h.t.Cleanup(func() { cs.Close() })
	return cs
}

func runTask(t *testing.T, cs *sdk.ClientSession, name string, args ...string) runTaskOutput {
	t.Helper()
	var out runTaskOutput
	okJSON(t, call(t, cs, ToolRunTask, map[string]any{"name": name, "args": args}), &out)
	return out
}

func TestListTasksNamesEachSourcesTasks(t *testing.T) {
	h := newHarness(t)
	ws := taskWorkspace(h, "list")
	testenv.WriteFile(t, filepath.Join(ws, "package.json"), `{"scripts":{"fail":"exit 1"}}`)
	var out listTasksOutput
	okJSON(t, call(t, h.session(ws), ToolListTasks, nil), &out)
	var names []string
	for _, tk := range out.Tasks {
		names = append(names, tk.Name)
	}
	want := []string{"make:fail", "make:loud", "make:show", "make:sleep", "make:tick", "npm:fail"}
	if !slices.Equal(names, want) || out.Problems != "" {
		t.Fatalf("tasks %v (problems %q), want %v", names, out.Problems, want)
	}
}

func TestRunTaskThatDoesNotExistListsTheAvailableOnes(t *testing.T) {
	h := newHarness(t)
	ws := taskWorkspace(h, "missing")
	code, msg := errCode(t, call(t, h.session(ws), ToolRunTask, map[string]any{"name": "make:deploy"}))
	if code != workspace.CodeInvalidInput || !strings.Contains(msg, "make:fail, make:loud") {
		t.Fatalf("%s: %s", code, msg)
	}
}

func TestRunTaskThatFailsReturnsItsExitCode(t *testing.T) {
	h := newHarness(t)
	ws := taskWorkspace(h, "fails")
	out := runTask(t, h.session(ws), "make:fail")
	if out.ExitCode == nil || *out.ExitCode == 0 || !strings.Contains(out.Output, "failing") || out.TimedOut {
		t.Fatalf("result %+v", out)
	}
}

func TestRunTaskPastItsTimeoutEndsEveryProcessItStarted(t *testing.T) {
	// The task timeout (2 s) is longer than the call timeout (1 s): the
	// run is bounded by its own.
	h := newHarness(t, func(o *Options) { o.TaskTimeout, o.CallTimeout = 2*time.Second, time.Second })
	ws := taskWorkspace(h, "slow")
	out := runTask(t, h.session(ws), "make:sleep")
	if !out.TimedOut || out.ExitCode != nil || !strings.Contains(out.Output, "started") {
		t.Fatalf("result %+v", out)
	}
	for _, f := range []string{"shell.pid", "child.pid"} {
		pid := taskstest.PID(t, filepath.Join(ws, f))
		waitFor(t, f+" gone", func() bool { return !taskstest.Alive(pid) })
	}
}

func TestRunTaskThatPrintsMegabytesKeepsTheTail(t *testing.T) {
	h := newHarness(t)
	ws := taskWorkspace(h, "loud")
	out := runTask(t, h.session(ws), "make:loud")
	if out.OutputBytes != 3000005 || len(out.Output) != tasks.DefaultMaxOutput || out.DroppedBytes != out.OutputBytes-int64(len(out.Output)) ||
		!strings.HasSuffix(out.Output, "x\nEND\n") {
		t.Fatalf("bytes %d, kept %d, dropped %d", out.OutputBytes, len(out.Output), out.DroppedBytes)
	}
}

func TestRunTaskCancelledByTheClientEndsItsProcesses(t *testing.T) {
	h := newHarness(t)
	ws := taskWorkspace(h, "cancel")
	cs := h.session(ws)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: ToolRunTask, Arguments: map[string]any{"name": "make:sleep"}})
		done <- err
	}()
	shell, child := taskstest.PID(t, filepath.Join(ws, "shell.pid")), taskstest.PID(t, filepath.Join(ws, "child.pid"))
	cancel()
	<-done
	waitFor(t, "the cancelled task's processes gone", func() bool { return !taskstest.Alive(shell) && !taskstest.Alive(child) })
	// The run is over once the server has released it (its processes
	// may end a moment before it does, or after: the rest of the tree is
	// killed as the run ends); then the task may run again.
	waitFor(t, "the server to release the cancelled run", func() bool { return !h.srv.taskRuns.holds(ws, "make:sleep") })
	testenv.WriteFile(t, filepath.Join(ws, "Makefile"), strings.Replace(taskMakefile, "sleep 300 &", "true &", 1))
	if out := runTask(t, cs, "make:sleep"); out.ExitCode == nil || *out.ExitCode != 0 {
		t.Fatalf("the task after a cancelled run: %+v", out)
	}
}

// holds reports whether a run of task in the workspace at path is going on.
func (r *runningTasks) holds(path, task string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running[[2]string{path, task}]
}

func TestRunTaskTwiceAtOnceIsAConflict(t *testing.T) {
	h := newHarness(t)
	ws := taskWorkspace(h, "twice")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = h.session(ws).CallTool(ctx, &sdk.CallToolParams{Name: ToolRunTask, Arguments: map[string]any{"name": "make:sleep"}})
	}()
	child := taskstest.PID(t, filepath.Join(ws, "child.pid"))
	code, msg := errCode(t, call(t, h.session(ws), ToolRunTask, map[string]any{"name": "make:sleep"}))
	if code != workspace.CodeConflict {
		t.Fatalf("second run: %s: %s", code, msg)
	}
	// Another task of the same workspace is no conflict.
	if out := runTask(t, h.session(ws), "make:fail"); out.ExitCode == nil {
		t.Fatalf("another task: %+v", out)
	}
	cancel()
	<-done
	waitFor(t, "first run's child gone", func() bool { return !taskstest.Alive(child) })
}

func TestRunTaskSendsProgressNotifications(t *testing.T) {
	h := newHarness(t)
	ws := taskWorkspace(h, "progress")
	var mu sync.Mutex
	var got []*sdk.ProgressNotificationParams
	cs := h.progressSession(ws, func(p *sdk.ProgressNotificationParams) { mu.Lock(); got = append(got, p); mu.Unlock() })
	params := &sdk.CallToolParams{Name: ToolRunTask, Arguments: map[string]any{"name": "make:tick"}}
	params.SetProgressToken("run-1")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("run: %v %+v", err, res)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) < 2 {
		t.Fatalf("%d progress notifications, want one a second", len(got))
	}
	for i, p := range got {
		if p.ProgressToken != "run-1" || i > 0 && p.Progress <= got[i-1].Progress {
			t.Fatalf("notification %d: %+v", i, p)
		}
	}
	if !slices.ContainsFunc(got, func(p *sdk.ProgressNotificationParams) bool { return strings.Contains(p.Message, "tick ") }) {
		t.Fatalf("no notification carries an output line: %+v", got[0])
	}
}

func TestRunTaskWithAWorkspaceTokenNeverRunsInAnotherWorkspace(t *testing.T) {
	h := newHarness(t)
	mine, other := taskWorkspace(h, "mine"), taskWorkspace(h, "other")
	tok, err := h.token.ForWorkspace(mine)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{ToolRunTask, ToolListTasks} {
		code, msg := errCode(t, call(t, h.sessionAs(tok, other), tool, map[string]any{"name": "make:sleep"}))
		if code != workspace.CodeForbidden {
			t.Fatalf("%s in another workspace: %s: %s", tool, code, msg)
		}
	}
	if _, err := os.Stat(filepath.Join(other, "shell.pid")); err == nil {
		t.Fatal("a workspace token ran a task in another workspace")
	}
	if out := runTask(t, h.sessionAs(tok, ""), "make:fail"); out.ExitCode == nil || *out.ExitCode == 0 {
		t.Fatalf("own workspace: %+v", out)
	}
}

func TestRunTaskRefusesArgsWithShellOrMakeMetacharactersAndRunsNothing(t *testing.T) {
	h := newHarness(t)
	ws := taskWorkspace(h, "literal")
	value := "V=a;b|c&&touch pwned `touch pwned2` $(touch pwned3) 'q' \"d\" >x"
	code, msg := errCode(t, call(t, h.session(ws), ToolRunTask, map[string]any{"name": "make:show", "args": []string{value}}))
	if code != workspace.CodeInvalidInput || !strings.Contains(msg, "letters, digits") || !strings.Contains(msg, "args[0] holds ';'") {
		t.Fatalf("%s: %s, want invalid-input naming the argument and its first bad character", code, msg)
	}
	for _, f := range []string{"pwned", "pwned2", "pwned3", "x"} {
		if _, err := os.Stat(filepath.Join(ws, f)); err == nil {
			t.Fatalf("an argument ran through a shell: %s exists", f)
		}
	}
	code, _ = errCode(t, call(t, h.session(ws), ToolRunTask, map[string]any{"name": "make:show", "args": []string{"V=a\x00b"}}))
	if code != workspace.CodeInvalidInput {
		t.Fatalf("a NUL in an argument: %s", code)
	}
}

func TestRunTaskThatMustBeConfinedAndCannotBeRunsNothing(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		o.Confine = func(context.Context, string) (sandbox.Plan, error) {
			return sandbox.Plan{}, errors.New(`not confined: this kernel has no Landlock, and the settings require the sandbox (sandbox mode "required")`)
		}
	})
	ws := taskWorkspace(h, "required")
	testenv.WriteFile(t, filepath.Join(ws, "Makefile"), "mark:\n\ttouch ran\n")
	code, msg := errCode(t, call(t, h.session(ws), ToolRunTask, map[string]any{"name": "make:mark"}))
	if code != workspace.CodeInternal || !strings.Contains(msg, "the task was not run: not confined") {
		t.Fatalf("%s: %s", code, msg)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Fatal("the task ran although it could not be confined")
	}
}

// TestATasksArgumentsRunNothingAndTheAuditKeepsTheirHashes is issue 21's
// first finding: a make variable of make's own (MAKEFLAGS=--eval=…) or a
// value make and the recipe's shell expand ran any command; and the audit
// line showed only the argument's name, so the payload left no trace.
func TestATasksArgumentsRunNothingAndTheAuditKeepsTheirHashes(t *testing.T) {
	h := newHarness(t)
	ws := taskWorkspace(h, "args")
	marker := filepath.Join(t.TempDir(), "ran")
	testenv.WriteFile(t, filepath.Join(ws, "Makefile"), "build:\n\t@echo V=$(V)\n")
	cs := h.session(ws)
	for _, arg := range []string{"MAKEFLAGS=--eval=$(shell touch " + marker + ")", "V=$(shell touch " + marker + ")",
		"V=`touch " + marker + "`", "V=x;touch " + marker} {
		code, msg := errCode(t, call(t, cs, ToolRunTask, map[string]any{"name": "make:build", "args": []string{arg}}))
		if code != workspace.CodeInvalidInput {
			t.Errorf("%q: %s: %s, want invalid-input", arg, code, msg)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("an argument of a make task ran a command")
	}
	out := runTask(t, cs, "make:build", "V=plain-value_1")
	if !strings.Contains(out.Output, "V=plain-value_1") {
		t.Errorf("a plain value did not reach the recipe: %+v", out)
	}
	audit, err := os.ReadFile(h.audit)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(audit), "plain-value_1") || strings.Contains(string(audit), "MAKEFLAGS=") {
		t.Errorf("the audit log holds an argument's value:\n%s", audit)
	}
	sum := sha256.Sum256([]byte("V=plain-value_1"))
	if want := `"argHashes":["sha256:` + hex.EncodeToString(sum[:8]) + `"]`; !strings.Contains(string(audit), want) {
		t.Errorf("the audit log lacks %s:\n%s", want, audit)
	}
}
