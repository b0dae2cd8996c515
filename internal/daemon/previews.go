package daemon

// The workspaces' previews (package previews: the ports their agents'
// children and background runs listen on) and the projects' dev servers
// (projectSetup run, run as the background task tasks.ProjectRun), for the
// tray and the MCP server.

import (
	"context"
	"fmt"
	"slices"

	"codehydra/internal/sandbox"
	"codehydra/internal/settings"
	"codehydra/previews"
	"codehydra/tasks"
	"codehydra/workspace"
)

// buildPreviews makes the finder of endpoints over the agents and the
// background runs.
func (s *server) buildPreviews() {
	s.previews = previews.New(previews.Options{Agents: s.sup, Runs: s.runRoots})
}

// runRoots are the processes of a workspace's running background runs.
func (s *server) runRoots(ws string) []previews.Root {
	var roots []previews.Root
	for _, r := range s.runs.List(ws) {
		if r.State == tasks.StateRunning {
			roots = append(roots, previews.Root{Pid: r.Pid, Source: "task:" + r.Name, Marker: r.Marker()})
		}
	}
	return roots
}

// devServers start and stop the projects' dev servers (app.DevServers).
type devServers struct {
	settings  *settings.Store
	workspace interface {
		Resolve(path string) (workspace.Workspace, error)
	}
	runs    *tasks.Runs
	confine func(ctx context.Context, path string) (sandbox.Plan, error)
}

// command is the run command of the project of the workspace at path;
// nil when it has none.
func (d devServers) command(path string) ([]string, error) {
	ws, err := d.workspace.Resolve(path)
	if err != nil {
		return nil, err
	}
	line := d.settings.Get().ProjectOf(ws.ProjectPath).Run
	if line == "" {
		return nil, nil
	}
	// The same task, and so the same command line, as workspace_run_task
	// project:run runs.
	return tasks.Argv(path, tasks.ProjectRunTask(line), nil)
}

func (d devServers) Configured(path string) bool {
	argv, err := d.command(path)
	return err == nil && len(argv) > 0
}

func (d devServers) Running(path string) bool {
	return slices.ContainsFunc(d.runs.List(path), func(r tasks.Run) bool {
		return r.Name == tasks.ProjectRun && r.State == tasks.StateRunning
	})
}

// Start runs the project's run command in the workspace, confined like
// its tasks, with its port block in the environment.
func (d devServers) Start(ctx context.Context, path string) error {
	argv, err := d.command(path)
	if err != nil {
		return fmt.Errorf("read the project's run command: %w", err)
	}
	if len(argv) == 0 {
		return fmt.Errorf("the project has no run command: set projectSetup run in Settings → Projects")
	}
	plan, err := d.confine(ctx, path)
	if err != nil {
		return fmt.Errorf("the dev server was not started: %w", err)
	}
	_, err = d.runs.Start(ctx, tasks.StartOptions{Workspace: path, Name: tasks.ProjectRun, Argv: argv, Dir: path,
		Sandbox: plan.Policy, Env: plan.Env})
	return err
}

func (d devServers) Stop(ctx context.Context, path string) error {
	_, err := d.runs.Stop(ctx, path, tasks.ProjectRun)
	return err
}
