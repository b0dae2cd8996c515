package mcp

// Background runs of the caller's own workspace's tasks (package tasks,
// Runs): workspace_run_task with background starts one, workspace_list_tasks
// lists them, workspace_stop_task stops one and workspace_task_output reads
// its output a page at a time.

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/tasks"
	"codehydra/workspace"
)

// Bounds of a workspace_task_output page.
const (
	defaultOutputPage = 16 << 10
	maxOutputPage     = 256 << 10
)

// taskRun is a background run as the tools answer it.
type taskRun struct {
	ID       string `json:"id" jsonschema:"the run's id"`
	Name     string `json:"name" jsonschema:"the task it runs"`
	State    string `json:"state" jsonschema:"running; exited (it ended by itself with exit code 0); failed (it ended by itself otherwise); stopped (by workspace_stop_task, or its workspace was deleted or hibernated, or CodeHydra quit)"`
	Pid      int    `json:"pid" jsonschema:"its first process, which leads its process group"`
	Started  string `json:"started" jsonschema:"when it started (RFC 3339)"`
	Ended    string `json:"ended,omitempty" jsonschema:"when it ended (RFC 3339); absent while it runs"`
	ExitCode *int   `json:"exitCode,omitempty" jsonschema:"its exit code, when it ended by itself with one"`
	Ports    []int  `json:"ports,omitempty" jsonschema:"the TCP ports its processes listen on, while it runs"`
}

func taskRunOf(r tasks.Run) taskRun {
	out := taskRun{ID: r.ID, Name: r.Name, State: r.State, Pid: r.Pid, Started: rfc3339(r.Started), ExitCode: r.ExitCode, Ports: r.Ports}
	if !r.Ended.IsZero() {
		out.Ended = rfc3339(r.Ended)
	}
	return out
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// runs is the background runs, or the error that there are none here.
func (s *Server) runs() (TaskRuns, error) {
	if s.opts.Runs == nil {
		return nil, workspace.Errorf(workspace.CodeInternal, "this CodeHydra runs no tasks")
	}
	return s.opts.Runs, nil
}

// holdTask reserves task of the workspace at path for a run in the
// foreground: a conflict while it runs there already, in the foreground or
// the background (tasks.Runs.Hold).
func (s *Server) holdTask(path, task string) (release func(), err error) {
	runs, err := s.runs()
	if err != nil {
		return nil, err
	}
	release, err = runs.Hold(path, task)
	switch {
	case errors.Is(err, tasks.ErrAlreadyRunning):
		return nil, workspace.Errorf(workspace.CodeConflict,
			"%s is already running in this workspace; wait for that run to end (or cancel it, or workspace_stop_task a background run) and try again", task)
	case errors.Is(err, tasks.ErrClosed):
		return nil, workspace.Errorf(workspace.CodeConflict, "CodeHydra is quitting; the task was not run")
	}
	return release, err
}

// startInBackground starts argv, the command of task, as a background run
// of the workspace at path, confined as a foreground run is.
func (s *Server) startInBackground(ctx context.Context, path, task string, argv []string) (runTaskOutput, error) {
	runs, err := s.runs()
	if err != nil {
		return runTaskOutput{}, fail(err)
	}
	plan, err := s.opts.Confine(ctx, path)
	if err != nil {
		return runTaskOutput{}, fail(workspace.Errorf(workspace.CodeInternal, "the task was not run: %v", err))
	}
	r, err := runs.Start(ctx, tasks.StartOptions{Workspace: path, Name: task, Argv: argv, Dir: path, Sandbox: plan.Policy, Env: plan.Env})
	switch {
	case errors.Is(err, tasks.ErrAlreadyRunning):
		return runTaskOutput{}, fail(workspace.Errorf(workspace.CodeConflict, "%s is already running in this workspace; workspace_stop_task stops it", task))
	case errors.Is(err, tasks.ErrClosed):
		return runTaskOutput{}, fail(workspace.Errorf(workspace.CodeConflict, "CodeHydra is quitting; the task was not run"))
	case err != nil:
		return runTaskOutput{}, fail(notStarted(err, argv))
	}
	s.log.Info("task started in the background", slog.String("workspace", path), slog.String("task", task),
		slog.String("id", r.ID), slog.Int("pid", r.Pid))
	return runTaskOutput{Name: task, Command: argv, ID: r.ID, State: r.State, Pid: r.Pid, Started: rfc3339(r.Started)}, nil
}

// listRuns is the background runs of the workspace at path.
func (s *Server) listRuns(path string) []taskRun {
	if s.opts.Runs == nil {
		return nil
	}
	var out []taskRun
	for _, r := range s.opts.Runs.List(path) {
		out = append(out, taskRunOf(r))
	}
	return out
}

// runError is err of the run named which, a run that is not there
// being invalid-input.
func runError(err error, which string) error {
	if errors.Is(err, tasks.ErrNoRun) {
		return workspace.Errorf(workspace.CodeInvalidInput, "no background run %q in this workspace; workspace_list_tasks lists them", which)
	}
	return workspace.Errorf(workspace.CodeInternal, "%v", err)
}

// runSelector names a run by its id or its task's name.
type runSelector struct {
	ID   string `json:"id,omitempty" jsonschema:"the run's id, as workspace_run_task or workspace_list_tasks gave it"`
	Name string `json:"name,omitempty" jsonschema:"or the task's name (e.g. make:dev): its latest run"`
}

// which is the id or name the selector gives, or an invalid-input error.
func (r runSelector) which() (string, error) {
	switch {
	case r.ID != "" && r.Name != "":
		return "", workspace.Errorf(workspace.CodeInvalidInput, "give id or name, not both")
	case r.ID == "" && r.Name == "":
		return "", workspace.Errorf(workspace.CodeInvalidInput, "give the run's id or the task's name")
	}
	return r.ID + r.Name, nil
}

func stopTaskTool() toolDef {
	return toolDef{
		tool: &sdk.Tool{
			Name:  ToolStopTask,
			Title: "Stop a background task",
			Description: "Stops a background run of your own workspace (started by workspace_run_task with background: true), " +
				"named by its id or by its task's name, with every process it started: SIGTERM to its process group, SIGKILL " +
				"after 3 seconds. It answers once they are gone, with how the run ended; stopping a run that ended is not an error.",
			Annotations: &sdk.ToolAnnotations{DestructiveHint: new(true), IdempotentHint: true, OpenWorldHint: new(false)},
		},
		handler:        typed((*Server).stopTask),
		needsWorkspace: true,
		timeout:        func(s *Server) time.Duration { return s.opts.CallTimeout + taskCallSlack },
	}
}

func (s *Server) stopTask(ctx context.Context, _ *sdk.CallToolRequest, in runSelector) (*sdk.CallToolResult, taskRun, error) {
	which, err := in.which()
	if err != nil {
		return nil, taskRun{}, fail(err)
	}
	runs, err := s.runs()
	if err != nil {
		return nil, taskRun{}, fail(err)
	}
	ws := callerWorkspace(ctx)
	r, err := runs.Stop(ctx, ws.Path, which)
	if err != nil {
		return nil, taskRun{}, fail(runError(err, which))
	}
	s.log.Info("background task stopped", slog.String("workspace", ws.Path), slog.String("task", r.Name), slog.String("id", r.ID))
	return nil, taskRunOf(r), nil
}

func taskOutputTool() toolDef {
	return toolDef{
		tool: &sdk.Tool{
			Name:  ToolTaskOutput,
			Title: "Read a background task's output",
			Description: "Reads the combined stdout and stderr of a background run of your own workspace, named by its id or " +
				"its task's name: the last maxBytes (default 16 KiB, at most 256 KiB) unless offset is given; next is the " +
				"offset to read on from. The last 1 MiB of a run's output is kept: dropped says how much of its start is gone.",
			Annotations: readOnly(),
		},
		handler:        typed((*Server).taskOutput),
		needsWorkspace: true,
	}
}

type (
	taskOutputInput struct {
		runSelector
		Offset   *int64 `json:"offset,omitempty" jsonschema:"the byte offset to read from (a page's next); left out: the last maxBytes"`
		MaxBytes int    `json:"maxBytes,omitempty" jsonschema:"the most bytes to answer, 1 to 262144 (default 16384)"`
	}

	taskOutputOutput struct {
		ID      string `json:"id" jsonschema:"the run's id"`
		Text    string `json:"text" jsonschema:"the output from offset to next, cut at whole UTF-8 characters"`
		Offset  int64  `json:"offset" jsonschema:"where text starts, in bytes of all the output"`
		Next    int64  `json:"next" jsonschema:"where text ends: the offset to read on from"`
		Total   int64  `json:"total" jsonschema:"all the output so far"`
		Dropped int64  `json:"dropped" jsonschema:"how much of the start of the output is no longer kept"`
		Running bool   `json:"running" jsonschema:"true: the run goes on and more may come"`
	}
)

func (s *Server) taskOutput(ctx context.Context, _ *sdk.CallToolRequest, in taskOutputInput) (*sdk.CallToolResult, taskOutputOutput, error) {
	which, err := in.which()
	if err != nil {
		return nil, taskOutputOutput{}, fail(err)
	}
	if in.MaxBytes < 0 || in.MaxBytes > maxOutputPage || in.Offset != nil && *in.Offset < 0 {
		return nil, taskOutputOutput{}, fail(workspace.Errorf(workspace.CodeInvalidInput,
			"maxBytes is 1 to %d and offset at least 0", maxOutputPage))
	}
	runs, err := s.runs()
	if err != nil {
		return nil, taskOutputOutput{}, fail(err)
	}
	ws := callerWorkspace(ctx)
	id := in.ID
	if in.Name != "" {
		// Its latest run, named by id from here on, whatever starts meanwhile.
		for _, r := range runs.List(ws.Path) {
			if r.Name == in.Name {
				id = r.ID
			}
		}
		if id == "" {
			return nil, taskOutputOutput{}, fail(runError(tasks.ErrNoRun, which))
		}
	}
	offset := int64(-1) // the tail
	if in.Offset != nil {
		offset = *in.Offset
	}
	page, err := runs.Output(ws.Path, id, offset, cmp.Or(in.MaxBytes, defaultOutputPage))
	if err != nil {
		return nil, taskOutputOutput{}, fail(runError(err, which))
	}
	return nil, taskOutputOutput{ID: id, Text: page.Text, Offset: page.Offset, Next: page.Next, Total: page.Total,
		Dropped: page.Dropped, Running: page.Running}, nil
}
