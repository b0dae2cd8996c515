package window

import (
	"context"
	"log/slog"

	"codehydra/internal/settings"
	"codehydra/prepare"
	"codehydra/workspace"
)

// Deps is what the windows need of the app. In the tray process they are
// the app's own parts; in a window process each is a call over the
// bridge to the tray process (package bridge).
type Deps struct {
	// Workspaces, Settings and Tray are required.
	Workspaces Workspaces
	Settings   SettingsStore
	Tray       Tray
	// Agents may be nil (no opencode): then no first prompt can be given
	// and the settings say that agents do not run.
	Agents Agents
	// MCP may be nil while no server runs.
	MCP MCPServer
	// Gateway may be nil: the MCP servers tab then shows the configured
	// servers without their state.
	Gateway MCPGateway
	// Prepare may be nil: created workspaces then show no setup progress.
	Prepare Preparation
	// Landing may be nil: the tray then offers no review, merge, update or
	// pull request.
	Landing Landing
	// RotateToken replaces the MCP access token, and only that: the
	// settings window then calls Agents.RestartAll itself. Nil disables
	// "Rotate token".
	RotateToken func() error
	// Restart asks for the app to start again once it has shut down; the
	// settings window's "Restart now" calls it on the Fyne thread and then
	// quits. Nil: the window asks the user to quit and start it again.
	Restart func()

	// Logger defaults to discarding.
	Logger *slog.Logger
	// Getenv defaults to os.Getenv.
	Getenv func(string) string
	// DefaultWorktreeRoot is shown in the settings window as what an empty
	// worktree root means (paths.ProjectsDir()).
	DefaultWorktreeRoot string
}

// Workspaces is the part of *workspace.Manager that the UI uses.
type Workspaces interface {
	Projects() []workspace.Project
	Workspaces(projectPath string) ([]workspace.Workspace, error)
	Subscribe() (events <-chan workspace.Event, cancel func())
	AddProject(ctx context.Context, path string) (workspace.Project, error)
	RemoveProject(ctx context.Context, path string) error
	Create(ctx context.Context, o workspace.CreateOptions) (workspace.Workspace, error)
	Delete(ctx context.Context, wsPath string, o workspace.DeleteOptions) error
	Status(ctx context.Context, wsPath string) (workspace.Status, error)
	Changes(ctx context.Context, wsPath string) (workspace.Changes, error)
	BranchCreated(ctx context.Context, wsPath string) (bool, error)
	Metadata(ctx context.Context, wsPath string) (map[string]string, error)
	SetMetadata(ctx context.Context, wsPath, key string, value *string) error
	Branches(ctx context.Context, projectPath string) ([]string, error)
	ReusableBranches(ctx context.Context, projectPath string) ([]string, error)
	DefaultBase(ctx context.Context, projectPath string) (string, error)
}

// Agents is the part of the opencode supervisor that the UI uses.
type Agents interface {
	// AgentStatus reports what the workspace's agent is doing; it must be
	// cheap (no I/O), as the tray asks on every agent-changed event.
	AgentStatus(path string) workspace.AgentStatus
	// OpencodeServer is the port of the workspace's `opencode serve` and
	// the password it demands (HTTP basic auth as "opencode"); ok=false
	// while none is ready. The password is a secret: it goes only into
	// what the user asked for (the browser, the clipboard), never into a
	// log or a notification.
	OpencodeServer(path string) (port int, password string, ok bool)
	// Restart stops the workspace's agent and starts it again (it also
	// revives a failed one).
	Restart(path string) error
	// RestartAll restarts every agent, e.g. so that each gets a new token.
	RestartAll()
	// FindBinary looks for the opencode executable again and returns it,
	// ok=false when none was found.
	FindBinary() (path string, ok bool)
	// QueuePrompt keeps p, checked with workspace.CheckFirstPrompt, until
	// the agent of the new workspace at path is ready, then gives it to
	// that agent once: what workspace_create's initialPrompt does.
	QueuePrompt(path string, p workspace.FirstPrompt) (workspace.PromptDelivery, error)
	// PromptDelivery is what became of the workspace's first prompt;
	// ok=false when it has none.
	PromptDelivery(path string) (d workspace.PromptDelivery, ok bool)
}

// Landing reviews and lands workspaces' work (issue 23): the manager's
// diff, merge, update and pull request, and the supervisor's reviews.
type Landing interface {
	// Diff is what the workspace changed against its base, a page of it.
	Diff(ctx context.Context, wsPath string, o workspace.DiffOptions) (workspace.Diff, error)
	// SendReview hands r to the workspace's agent as one prompt, exactly
	// once; Reviews are the deliveries of the reviews sent to it, oldest
	// first.
	SendReview(path string, r workspace.Review) (workspace.ReviewDelivery, error)
	Reviews(path string) []workspace.ReviewDelivery
	// Preflight is what Merge would do, found without touching any
	// working tree; Merge does it.
	Preflight(ctx context.Context, wsPath string, o workspace.MergeOptions) (workspace.Preflight, error)
	Merge(ctx context.Context, wsPath string, o workspace.MergeOptions) (workspace.MergeResult, error)
	// UpdateFromBase rebases the workspace onto its base or merges the
	// base in; on a conflict it leaves the workspace as it was and its
	// error names the files.
	UpdateFromBase(ctx context.Context, wsPath string, mode workspace.UpdateMode) (workspace.UpdateResult, error)
	// CreatePullRequest pushes the workspace's branch and opens its pull
	// request.
	CreatePullRequest(ctx context.Context, wsPath string, o workspace.PullRequestOptions) (workspace.PullRequest, error)
}

// SettingsStore holds the settings; *settings.Store implements it.
type SettingsStore interface {
	Get() settings.Settings
	Update(fn func(*settings.Settings)) error
}

// MCPServer is the running MCP server; *mcp.Server implements it.
type MCPServer interface {
	Port() int
	URL() string
	// PortNotice says what it means for clients when the fixed port was
	// taken and another one is in use; "" otherwise.
	PortNotice() string
}

// MCPGateway is the user's own MCP servers as CodeHydra runs them (main
// adapts the gateway to it).
type MCPGateway interface {
	// Statuses says how each configured server is doing, by name; it must
	// be cheap, as the Settings window asks every few seconds.
	Statuses() []MCPServerStatus
	// ToolChanges are the tools of the server called server that are
	// withheld because their definitions changed since they were pinned
	// (settings pinTools), sorted by tool.
	ToolChanges(server string) []MCPToolChange
	// AcceptToolChange pins the new definition of the server's tool, the
	// one whose hash is hash (as shown), and offers the tool again; a
	// definition that changed again since is refused.
	AcceptToolChange(server, tool, hash string) error
}

// MCPToolChange is a tool withheld because its definition changed: Old
// is the pinned definition, New the server's now (each the JSON of its
// name, description, inputSchema and annotations), Hash is New's.
type MCPToolChange struct {
	Tool     string
	Old, New string
	Hash     string
}

// MCPServerStatus is how one of the user's MCP servers is doing.
type MCPServerStatus struct {
	Name string
	// State is "running", "starting", "stopped" or "failed".
	State string
	// LastError is why the last start failed or the last instance ended;
	// it never holds an env or header value.
	LastError string
	Tools     int
	Calls     int64
	Restarts  int
	// Instances is how many of its instances run (one per workspace for a
	// workspace-scoped server).
	Instances int
	// ChangedTools counts its tools withheld because their definitions
	// changed since they were pinned (see MCPGateway.ToolChanges).
	ChangedTools int
}

// Preparation is the readying of created workspaces before their agent
// starts (*prepare.Preparer implements it).
type Preparation interface {
	// State is the preparation of the workspace at path; false when it
	// has none (yet, or at all).
	State(path string) (prepare.State, bool)
	// Retry runs a failed copy and setup again.
	Retry(path string) error
	// StartAnyway starts the agent of a workspace whose setup failed.
	StartAnyway(path string) error
}

// Tray is what the windows learn from the tray, which follows every event
// of the manager: in the tray process the tray itself, in a window
// process the app's tray over the bridge.
type Tray interface {
	// BusyAgents names the workspaces whose agents are in the middle of a
	// turn (working, or waiting for the user's answer), in the menu's
	// order.
	BusyAgents() []string
	// DeleteProgress is how the delete of the workspace at path goes, as
	// the tray saw its events; zero when none runs and none failed.
	DeleteProgress(path string) DeleteProgress
}

// DeleteProgress is a workspace's delete as the tray saw it.
type DeleteProgress struct {
	// Running is true from the first delete-progress event until the
	// workspace is gone or the delete failed.
	Running bool
	Step    workspace.DeleteStep
	// Err is why the last attempt failed; "" while none did.
	Err string
}
