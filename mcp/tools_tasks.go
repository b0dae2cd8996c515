package mcp

// The task tools, workspace_list_tasks and workspace_run_task: the tasks
// of the caller's own workspace (package tasks finds and runs them), one run
// of a task per workspace at a time, progress notifications while it runs.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/proc"
	"codehydra/tasks"
	"codehydra/workspace"
)

// DefaultTaskTimeout is Options.TaskTimeout when left zero.
const DefaultTaskTimeout = 10 * time.Minute

// taskCallSlack is what a run_task call may take beyond its task's
// timeout: the grace between SIGTERM and SIGKILL and the last output.
const taskCallSlack = tasks.DefaultGrace + 10*time.Second

// maxTasksNamed bounds the task names an unknown-task error lists.
const maxTasksNamed = 50

func listTasksTool() toolDef {
	return toolDef{
		tool: &sdk.Tool{
			Name:  ToolListTasks,
			Title: "List workspace tasks",
			Description: "Lists the tasks of your own workspace that workspace_run_task can run: justfile recipes " +
				"(just:<recipe>), Makefile targets (make:<target>), package.json scripts (npm:<script>) and, when the user's " +
				"settings give the project a dev server, project:run (source settings), each with the " +
				"file it comes from and the command it runs, and the background runs of them (state, pid, started, the ports " +
				"they listen on). Nothing is run to find them.",
			Annotations: readOnly(),
		},
		handler:        typed((*Server).listTasks),
		needsWorkspace: true,
	}
}

type listTasksOutput struct {
	Tasks []tasks.Task `json:"tasks" jsonschema:"the tasks, sorted by name; name is what workspace_run_task takes"`
	Runs  []taskRun    `json:"runs,omitempty" jsonschema:"the background runs of the tasks, running or ended (an ended one is kept until its task starts again), sorted by name"`
	// Problems names task files that could not be read.
	Problems string `json:"problems,omitempty" jsonschema:"task files that could not be read, and why"`
}

func (s *Server) listTasks(ctx context.Context, _ *sdk.CallToolRequest, _ noInput) (*sdk.CallToolResult, listTasksOutput, error) {
	ws := callerWorkspace(ctx)
	found, err := tasks.Find(ws.Path)
	if run := s.projectRun(ws.ProjectPath); run != "" {
		found = append(found, tasks.ProjectRunTask(run))
		slices.SortFunc(found, func(a, b tasks.Task) int { return strings.Compare(a.Name, b.Name) })
	}
	out := listTasksOutput{Tasks: found, Runs: s.listRuns(callerWorkspace(ctx).Path)}
	if out.Tasks == nil {
		out.Tasks = []tasks.Task{}
	}
	if err != nil {
		out.Problems = err.Error()
	}
	return nil, out, nil
}

func runTaskTool() toolDef {
	return toolDef{
		tool: &sdk.Tool{
			Name:  ToolRunTask,
			Title: "Run a workspace task",
			Description: "Runs one task of your own workspace (a name from workspace_list_tasks, e.g. make:test) in the " +
				"workspace folder, without a shell; args are appended as separate arguments. It waits for the end and " +
				"returns the exit code and the last 64 KiB of output. The task is stopped, with every process it " +
				"started, after taskTimeoutSeconds (default 600) or when you cancel the call; progress notifications " +
				"carry its latest output line every second. With background: true it answers at once with the run's id and pid " +
				"instead, and the task runs until it ends, workspace_stop_task stops it, or the workspace is deleted or " +
				"hibernated (a dev server; workspace_task_output reads its output). A task already running in this " +
				"workspace, in either way, cannot be started again.",
			Annotations: &sdk.ToolAnnotations{DestructiveHint: new(true), OpenWorldHint: new(true)},
		},
		handler:        typed((*Server).runTask),
		needsWorkspace: true,
		timeout:        func(s *Server) time.Duration { return s.opts.TaskTimeout + taskCallSlack },
	}
}

type (
	runTaskInput struct {
		Name string   `json:"name" jsonschema:"the task's name as workspace_list_tasks gives it, e.g. make:test or npm:build"`
		Args []string `json:"args,omitempty" jsonschema:"arguments appended to the task's command, each as one argument, never through a shell: a just recipe's parameters, VAR=value assignments for make, the script's arguments for npm"`
		// Background starts a run that outlives the call (a dev server).
		Background bool `json:"background,omitempty" jsonschema:"true: start the task in the background (a dev server) and answer at once with its run's id; workspace_task_output reads its output, workspace_stop_task stops it"`
	}

	runTaskOutput struct {
		Name    string   `json:"name" jsonschema:"the task that ran"`
		Command []string `json:"command" jsonschema:"the command line that ran, one argument per element"`
		// ExitCode is null when the process did not exit by itself.
		ExitCode     *int   `json:"exitCode" jsonschema:"the exit code (0 is success); null when the task was stopped (timedOut, cancelled) or ended by a signal"`
		Ended        string `json:"ended,omitempty" jsonschema:"how it ended, e.g. exit status 2 or signal: killed; absent for a background run"`
		TimedOut     bool   `json:"timedOut,omitempty" jsonschema:"true: it ran past taskTimeoutSeconds and was stopped with every process it started"`
		Cancelled    bool   `json:"cancelled,omitempty" jsonschema:"true: the call was cancelled and the task stopped"`
		Output       string `json:"output,omitempty" jsonschema:"the end of its combined stdout and stderr (at most 64 KiB); absent when it printed nothing"`
		OutputBytes  int64  `json:"outputBytes,omitempty" jsonschema:"all the output it printed; absent when none"`
		DroppedBytes int64  `json:"droppedBytes,omitempty" jsonschema:"how much of the start of the output is not in output; absent when none"`
		DurationMs   int64  `json:"durationMs,omitempty" jsonschema:"how long it ran"`
		// The run started with background.
		ID      string `json:"id,omitempty" jsonschema:"the background run's id, for workspace_stop_task and workspace_task_output"`
		State   string `json:"state,omitempty" jsonschema:"the background run's state: running"`
		Pid     int    `json:"pid,omitempty" jsonschema:"the background run's first process, which leads its process group"`
		Started string `json:"started,omitempty" jsonschema:"when the background run started (RFC 3339)"`
	}
)

func (s *Server) runTask(ctx context.Context, req *sdk.CallToolRequest, in runTaskInput) (*sdk.CallToolResult, runTaskOutput, error) {
	ws := callerWorkspace(ctx)
	task, argv, err := taskCommand(ws.Path, s.projectRun(ws.ProjectPath), in)
	if err != nil {
		return nil, runTaskOutput{}, fail(err)
	}
	if in.Background {
		out, err := s.startInBackground(ctx, ws.Path, task.Name, argv)
		return nil, out, err
	}
	release, err := s.holdTask(ws.Path, task.Name)
	if err != nil {
		return nil, runTaskOutput{}, fail(err)
	}
	defer release()
	// The server's shutdown ends the run too, not only the client.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.bgCtx, cancel)()

	plan, err := s.opts.Confine(ctx, ws.Path)
	if err != nil {
		return nil, runTaskOutput{}, fail(workspace.Errorf(workspace.CodeInternal, "the task was not run: %v", err))
	}
	res, err := tasks.RunAndWait(ctx, tasks.RunOptions{Argv: argv, Dir: ws.Path, Timeout: s.opts.TaskTimeout, Progress: progressOf(ctx, req),
		Sandbox: plan.Policy, Env: plan.Env})
	if err != nil {
		return nil, runTaskOutput{}, fail(notStarted(err, argv))
	}
	s.log.Info("task ran", slog.String("workspace", ws.Path), slog.String("task", task.Name), slog.String("ended", res.Ended),
		slog.Bool("timedOut", res.TimedOut), slog.Bool("cancelled", res.Cancelled), slog.Duration("duration", res.Duration))
	out := runTaskOutput{
		Name: task.Name, Command: argv, Ended: res.Ended, TimedOut: res.TimedOut, Cancelled: res.Cancelled,
		Output: res.Output, OutputBytes: res.Bytes, DroppedBytes: res.Dropped, DurationMs: res.Duration.Milliseconds(),
	}
	if res.ExitCode >= 0 && !res.TimedOut && !res.Cancelled {
		out.ExitCode = &res.ExitCode
	}
	return nil, out, nil
}

// taskCommand is the task of the workspace at dir that in names and the
// command line that runs it with in's arguments, or an invalid-input
// error; run is its project's run command (project:run), "" for none.
func taskCommand(dir, run string, in runTaskInput) (tasks.Task, []string, error) {
	task, err := findTask(dir, in.Name)
	if in.Name == tasks.ProjectRun {
		task, err = tasks.ProjectRunTask(run), nil
		if run == "" {
			err = workspace.Errorf(workspace.CodeInvalidInput, "%s: this project has no run command; the user sets one in Settings → Projects (projectSetup run)", in.Name)
		}
	}
	if err != nil {
		return tasks.Task{}, nil, err
	}
	argv, err := tasks.Argv(dir, task, in.Args)
	if err != nil {
		return tasks.Task{}, nil, &workspace.Error{Code: workspace.CodeInvalidInput, Message: err.Error()}
	}
	return task, argv, nil
}

// notStarted is the error of a task whose command did not start.
func notStarted(err error, argv []string) error {
	if errors.Is(err, proc.ErrNotConfined) {
		return workspace.Errorf(workspace.CodeInternal, "the task was not run: %v", err)
	}
	return workspace.Errorf(workspace.CodeInternal, "%v; is %s installed and on CodeHydra's PATH?", err, argv[0])
}

// projectRun is the run command of the project at path ("" for none).
func (s *Server) projectRun(path string) string {
	if s.opts.ProjectRun == nil {
		return ""
	}
	return s.opts.ProjectRun(path)
}

// findTask is the task of the workspace at dir named name, or an
// invalid-input error that lists the tasks there are.
func findTask(dir, name string) (tasks.Task, error) {
	found, ferr := tasks.Find(dir)
	var names []string
	for _, t := range found {
		if t.Name == name {
			return t, nil
		}
		names = append(names, t.Name)
	}
	available := "this workspace has no tasks (no justfile, Makefile or package.json scripts)"
	if len(names) > 0 {
		if len(names) > maxTasksNamed {
			names = append(names[:maxTasksNamed], "…")
		}
		available = "available: " + strings.Join(names, ", ")
	}
	if ferr != nil {
		available += "; some task files could not be read: " + ferr.Error()
	}
	return tasks.Task{}, workspace.Errorf(workspace.CodeInvalidInput, "no task %q in this workspace; %s", name, available)
}

// progressOf sends the client a progress notification for each report of
// a run, when the call asked for them (a progress token).
func progressOf(ctx context.Context, req *sdk.CallToolRequest) func(tasks.Progress) {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return nil
	}
	return func(p tasks.Progress) {
		msg := fmt.Sprintf("running for %ds", int(p.Elapsed.Seconds()))
		if p.Line != "" {
			msg += ": " + p.Line
		}
		// A lost notification costs the client one update; the run goes on.
		_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: p.Elapsed.Seconds(), Message: msg})
	}
}
