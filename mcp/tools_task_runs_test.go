package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/sandbox"
	"codehydra/internal/testenv"
	"codehydra/tasks"
	"codehydra/tasks/taskstest"
	"codehydra/workspace"
)

// runsMakefile is the Makefile of the background run tests' workspace.
const runsMakefile = `serve:
	@exec python3 -u -m http.server --bind 127.0.0.1 $$PORT
sleep:
	@sleep 300 & echo $$! > child.pid; echo started; wait
count:
	@i=0; while [ $$i -lt 100 ]; do i=$$((i+1)); echo "line $$i"; done; exec sleep 300
`

// runsWorkspace is a workspace of h with runsMakefile.
func runsWorkspace(h *harness, name string) string {
	h.t.Helper()
	ws := h.create(name)
	testenv.WriteFile(h.t, filepath.Join(ws.Path, "Makefile"), runsMakefile)
	return ws.Path
}

func startBackground(t *testing.T, cs *sdk.ClientSession, name string) runTaskOutput {
	t.Helper()
	var out runTaskOutput
	okJSON(t, call(t, cs, ToolRunTask, map[string]any{"name": name, "background": true}), &out)
	if out.ID == "" || out.State != tasks.StateRunning || out.Pid == 0 || out.Started == "" || out.Name != name || out.ExitCode != nil {
		t.Fatalf("background start: %+v", out)
	}
	return out
}

func listRuns(t *testing.T, cs *sdk.ClientSession) []taskRun {
	t.Helper()
	var out listTasksOutput
	okJSON(t, call(t, cs, ToolListTasks, nil), &out)
	return out.Runs
}

func TestABackgroundTaskAnswersAtOnceAndServesOnTheWorkspacesPortUntilStopped(t *testing.T) {
	testenv.NeedPython3(t)
	h := newHarness(t)
	ws := runsWorkspace(h, "serve")
	port := testenv.FreePort(t)
	if err := workspace.RecordPorts(ws, workspace.PortBlock{First: port, Count: 1}); err != nil {
		t.Fatal(err)
	}
	cs := h.session(ws)
	run := startBackground(t, cs, "make:serve")

	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	waitFor(t, "the dev server to answer on the workspace's PORT", func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if runs := listRuns(t, cs); len(runs) != 1 || runs[0].ID != run.ID || runs[0].State != tasks.StateRunning || runs[0].Pid != run.Pid {
		t.Fatalf("runs %+v", runs)
	}
	var page taskOutputOutput
	waitFor(t, "the request in the server's log", func() bool {
		okJSON(t, call(t, cs, ToolTaskOutput, map[string]any{"id": run.ID}), &page)
		return strings.Contains(page.Text, `"GET / HTTP/1.1" 200`)
	})
	if page.ID != run.ID || !page.Running || page.Next != page.Total || page.Dropped != 0 {
		t.Fatalf("output %+v", page)
	}

	var stopped taskRun
	okJSON(t, call(t, cs, ToolStopTask, map[string]any{"id": run.ID}), &stopped)
	if stopped.State != tasks.StateStopped || stopped.Ended == "" {
		t.Fatalf("stopped %+v", stopped)
	}
	if taskstest.Alive(run.Pid) {
		t.Fatal("the dev server runs after workspace_stop_task answered")
	}
	if _, err := http.Get(url); err == nil {
		t.Fatal("the port answers after workspace_stop_task")
	}
	// Stopping it again is no error; the ended run stays listed.
	okJSON(t, call(t, cs, ToolStopTask, map[string]any{"name": "make:serve"}), &stopped)
	if runs := listRuns(t, cs); len(runs) != 1 || runs[0].State != tasks.StateStopped || stopped.State != tasks.StateStopped {
		t.Fatalf("runs after stop %+v", runs)
	}
}

func TestATaskRunsOnceWhetherInTheForegroundOrTheBackground(t *testing.T) {
	h := newHarness(t)
	ws := runsWorkspace(h, "once")
	cs := h.session(ws)
	run := startBackground(t, cs, "make:sleep")
	child := taskstest.PID(t, filepath.Join(ws, "child.pid"))
	for _, bg := range []bool{false, true} {
		code, msg := errCode(t, call(t, cs, ToolRunTask, map[string]any{"name": "make:sleep", "background": bg}))
		if code != workspace.CodeConflict {
			t.Fatalf("a second run (background %v): %s: %s", bg, code, msg)
		}
	}
	var stopped taskRun
	okJSON(t, call(t, cs, ToolStopTask, map[string]any{"name": "make:sleep"}), &stopped)
	if stopped.ID != run.ID || taskstest.Alive(run.Pid) {
		t.Fatalf("stopped %+v", stopped)
	}
	// The group's SIGKILL is sent by the time the stop answers; the
	// kernel ends the child a moment later.
	waitFor(t, "the run's child gone", func() bool { return !taskstest.Alive(child) })
	again := startBackground(t, cs, "make:sleep")
	if runs := listRuns(t, cs); len(runs) != 1 || runs[0].ID != again.ID {
		t.Fatalf("runs %+v, want the new run only", runs)
	}
}

func TestTaskOutputIsPagedFromAnyOffset(t *testing.T) {
	h := newHarness(t)
	ws := runsWorkspace(h, "paged")
	cs := h.session(ws)
	run := startBackground(t, cs, "make:count")
	var want strings.Builder
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	var page taskOutputOutput
	waitFor(t, "all the lines", func() bool {
		okJSON(t, call(t, cs, ToolTaskOutput, map[string]any{"name": "make:count", "maxBytes": 8}), &page)
		return page.Total == int64(want.Len())
	})
	if page.Text != "ine 100\n" || page.Offset != page.Total-8 {
		t.Fatalf("tail of 8 bytes: %q", page.Text)
	}
	var got strings.Builder
	for off := int64(0); off < page.Total; {
		var p taskOutputOutput
		okJSON(t, call(t, cs, ToolTaskOutput, map[string]any{"id": run.ID, "offset": off, "maxBytes": 100}), &p)
		if p.Offset != off || p.Next <= off {
			t.Fatalf("page at %d: %+v", off, p)
		}
		got.WriteString(p.Text)
		off = p.Next
	}
	if got.String() != want.String() {
		t.Fatalf("the pages read %q", got.String())
	}
	for _, args := range []map[string]any{{}, {"id": run.ID, "name": "make:count"}, {"id": run.ID, "maxBytes": 1 << 20}, {"id": run.ID, "offset": -1}} {
		if code, msg := errCode(t, call(t, cs, ToolTaskOutput, args)); code != workspace.CodeInvalidInput {
			t.Errorf("%v: %s: %s", args, code, msg)
		}
	}
}

func TestBackgroundRunsOfAnotherWorkspaceAreNotThere(t *testing.T) {
	h := newHarness(t)
	mine, other := runsWorkspace(h, "mine"), runsWorkspace(h, "theirs")
	run := startBackground(t, h.session(other), "make:sleep")
	tok, err := h.token.ForWorkspace(mine)
	if err != nil {
		t.Fatal(err)
	}
	own := h.sessionAs(tok, "")
	for _, tool := range []string{ToolStopTask, ToolTaskOutput} {
		for _, args := range []map[string]any{{"id": run.ID}, {"name": "make:sleep"}} {
			if code, msg := errCode(t, call(t, own, tool, args)); code != workspace.CodeInvalidInput || !strings.Contains(msg, "no background run") {
				t.Errorf("%s %v from another workspace: %s: %s", tool, args, code, msg)
			}
		}
		code, msg := errCode(t, call(t, h.sessionAs(tok, other), tool, map[string]any{"id": run.ID}))
		if code != workspace.CodeForbidden {
			t.Errorf("%s with the other workspace's header: %s: %s", tool, code, msg)
		}
	}
	if runs := listRuns(t, own); len(runs) != 0 {
		t.Errorf("another workspace's runs listed: %+v", runs)
	}
	if !taskstest.Alive(run.Pid) {
		t.Error("another workspace's token stopped the run")
	}
}

func TestABackgroundTaskThatMustBeConfinedAndCannotBeRunsNothing(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		o.Confine = func(context.Context, string) (sandbox.Plan, error) {
			return sandbox.Plan{}, errors.New(`not confined: this kernel has no Landlock, and the settings require the sandbox (sandbox mode "required")`)
		}
	})
	ws := runsWorkspace(h, "required")
	cs := h.session(ws)
	code, msg := errCode(t, call(t, cs, ToolRunTask, map[string]any{"name": "make:sleep", "background": true}))
	if code != workspace.CodeInternal || !strings.Contains(msg, "the task was not run: not confined") {
		t.Fatalf("%s: %s", code, msg)
	}
	if testenv.Exists(filepath.Join(ws, "child.pid")) || len(listRuns(t, cs)) != 0 {
		t.Fatal("the task ran although it could not be confined")
	}
}
