package mcp

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"testing"

	"codehydra/internal/testenv"
	"codehydra/tasks"
	"codehydra/tasks/taskstest"
	"codehydra/workspace"
)

// withProjectRun gives every project the run command *run.
func withProjectRun(run *string) harnessOption {
	return func(o *Options) { o.ProjectRun = func(string) string { return *run } }
}

func TestProjectRunIsTheSettingsDevServerListedAndRunInTheBackground(t *testing.T) {
	testenv.NeedPython3(t)
	run := ""
	h := newHarness(t, withProjectRun(&run))
	ws := h.create("dev")
	// A Makefile of the repository cannot stand in for it.
	testenv.WriteFile(t, filepath.Join(ws.Path, "Makefile"), "run:\n\techo from the repository\n")
	cs := h.session(ws.Path)

	var list listTasksOutput
	okJSON(t, call(t, cs, ToolListTasks, nil), &list)
	if slices.ContainsFunc(list.Tasks, func(t tasks.Task) bool { return t.Name == tasks.ProjectRun }) {
		t.Fatalf("project:run is listed for a project without a run command: %+v", list.Tasks)
	}
	code, msg := errCode(t, call(t, cs, ToolRunTask, map[string]any{"name": tasks.ProjectRun, "background": true}))
	if code != workspace.CodeInvalidInput {
		t.Fatalf("project:run without a run command: %s %q", code, msg)
	}

	run = "python3 -u -m http.server --bind 127.0.0.1"
	okJSON(t, call(t, cs, ToolListTasks, nil), &list)
	i := slices.IndexFunc(list.Tasks, func(t tasks.Task) bool { return t.Name == tasks.ProjectRun })
	if i < 0 || list.Tasks[i].Source != tasks.SourceSettings || list.Tasks[i].Command != run {
		t.Fatalf("tasks %+v, want project:run from the settings", list.Tasks)
	}

	port := testenv.FreePort(t)
	var out runTaskOutput
	okJSON(t, call(t, cs, ToolRunTask, map[string]any{"name": tasks.ProjectRun, "background": true, "args": []string{fmt.Sprint(port)}}), &out)
	if out.State != tasks.StateRunning || !slices.Equal(out.Command, []string{"python3", "-u", "-m", "http.server", "--bind", "127.0.0.1", fmt.Sprint(port)}) {
		t.Fatalf("started %+v", out)
	}
	waitFor(t, "the dev server to answer", func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	var stopped taskRun
	okJSON(t, call(t, cs, ToolStopTask, map[string]any{"name": tasks.ProjectRun}), &stopped)
	if stopped.State != tasks.StateStopped || taskstest.Alive(out.Pid) {
		t.Fatalf("stopped %+v", stopped)
	}
}
