package mcp

// What the server is given to act on: the domain (Workspaces), the agents'
// ports (Agents), first prompts (Prompts), reviews (Reviews) and pull
// requests (PullRequests). Each is the small part of the app's types that
// the tools need, so tests give fakes.

import (
	"context"
	"time"

	"codehydra/tasks"
	"codehydra/workspace"
)

// Workspaces is the part of workspace.Manager the server needs.
type Workspaces interface {
	Resolve(path string) (workspace.Workspace, error)
	Status(ctx context.Context, wsPath string) (workspace.Status, error)
	Metadata(ctx context.Context, wsPath string) (map[string]string, error)
	// Changes lists a workspace's changed and untracked files.
	Changes(ctx context.Context, wsPath string) (workspace.Changes, error)
	// Diff is what a workspace changed against its base, paged.
	Diff(ctx context.Context, wsPath string, o workspace.DiffOptions) (workspace.Diff, error)
	// ChangedFiles counts the files Diff would list.
	ChangedFiles(ctx context.Context, wsPath string) (int, error)
	// Preflight, Merge and UpdateFromBase land a workspace's branch and
	// bring its base in (workspace_merge, workspace_update_from_base).
	Preflight(ctx context.Context, wsPath string, o workspace.MergeOptions) (workspace.Preflight, error)
	Merge(ctx context.Context, wsPath string, o workspace.MergeOptions) (workspace.MergeResult, error)
	UpdateFromBase(ctx context.Context, wsPath string, mode workspace.UpdateMode) (workspace.UpdateResult, error)
	SetMetadata(ctx context.Context, wsPath, key string, value *string) error
	// StartDelete reserves the delete of a workspace and returns the work
	// that deletes it; a delete already running is a conflict at once.
	StartDelete(ctx context.Context, wsPath string, o workspace.DeleteOptions) (run func(context.Context) error, err error)
	Create(ctx context.Context, o workspace.CreateOptions) (workspace.Workspace, error)
	Projects() []workspace.Project
	Workspaces(projectPath string) ([]workspace.Workspace, error)
	AllWorkspaces() []workspace.Workspace
	AddProject(ctx context.Context, path string) (workspace.Project, error)
	RemoveProject(ctx context.Context, path string) error
	// Git runs git in a workspace the way the manager runs its own (see
	// workspace.Manager.Git): the file tools' listings and logs.
	Git(ctx context.Context, dir string, env []string, args ...string) (string, error)
	// BranchCreated reports whether CodeHydra created the branch of the
	// workspace at wsPath (a branch that existed before is the user's).
	BranchCreated(ctx context.Context, wsPath string) (bool, error)
}

// Agents reports the OpenCode server of a workspace; the opencode
// supervisor implements it.
type Agents interface {
	// OpencodePort returns the port of the workspace's OpenCode server and
	// whether one runs.
	OpencodePort(path string) (int, bool)
}

// Prompts hands a new workspace's first prompt (workspace_create's
// initialPrompt) to its agent; the opencode supervisor implements it.
type Prompts interface {
	// RecentModel is the model ("provider/model") of the last user message
	// the agent of the workspace at path got; "" if unknown.
	RecentModel(ctx context.Context, path string) string
	// QueuePrompt keeps p until the agent of the workspace at path is
	// ready, then delivers it once.
	QueuePrompt(path string, p workspace.FirstPrompt) (workspace.PromptDelivery, error)
}

// Reviews hands reviews to workspaces' agents, each exactly once, and
// tells what became of them; the opencode supervisor implements it.
type Reviews interface {
	// SendReview keeps r until the agent of the workspace at path is
	// ready, then delivers it once, into the agent's current session.
	SendReview(path string, r workspace.Review) (workspace.ReviewDelivery, error)
	// Reviews is what became of the last reviews sent to the agent of the
	// workspace at path, oldest first.
	Reviews(path string) []workspace.ReviewDelivery
}

// PullRequests pushes a workspace's branch and opens its pull request;
// package internal/pullrequest implements it.
type PullRequests interface {
	Create(ctx context.Context, wsPath string, o workspace.PullRequestOptions) (workspace.PullRequest, error)
	// MaxDuration bounds a Create.
	MaxDuration() time.Duration
}

// Hibernation stops a workspace's agent while it is not needed and starts
// it again (docs/DESIGN.md "Hibernation"); the opencode supervisor
// implements it.
type Hibernation interface {
	// Hibernate stops the agent and records it hibernated.
	Hibernate(ctx context.Context, path string) error
	// Wake starts a hibernated agent and waits until it is ready.
	Wake(ctx context.Context, path string) error
	// Hibernated reports whether the agent is hibernated.
	Hibernated(path string) bool
}

// TaskRuns starts, lists, stops and reads the background runs of the
// workspaces' tasks (workspace_run_task with background, the run tools);
// tasks.Runs implements it.
type TaskRuns interface {
	Start(ctx context.Context, o tasks.StartOptions) (tasks.Run, error)
	Hold(workspace, name string) (release func(), err error)
	List(workspace string) []tasks.Run
	Stop(ctx context.Context, workspace, idOrName string) (tasks.Run, error)
	Output(workspace, idOrName string, offset int64, max int) (tasks.OutputPage, error)
}
