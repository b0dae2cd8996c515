package workspace

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// ProjectStore persists the list of project paths (the settings file).
type ProjectStore interface {
	SaveProjects(paths []string) error
}

// Options configure a Manager.
type Options struct {
	// Projects are the project paths to load (from the settings).
	Projects []string
	// Store persists the project list; nil means it is not persisted.
	Store ProjectStore
	// WorktreeRoot is where new worktrees go, as
	// <root>/<name>-<sha256(projectPath)[:8]>/workspaces/<branch, "/" as "%">;
	// "" means paths.ProjectsDir().
	WorktreeRoot string
	// Agents reports and stops agents; nil means no agents (status "none").
	Agents Agents
	// Teardowns runs the project's teardown in a workspace before its
	// delete removes anything; nil runs none.
	Teardowns Teardowns
	// Events is where the manager publishes its changes, shared with the
	// parts that publish theirs (agents, preparation, the status cache);
	// nil gives the manager one of its own.
	Events *Events
	// Logger receives the manager's logs; nil discards them.
	Logger *slog.Logger
	// PollInterval is how often Run looks for worktrees added or removed
	// outside the app; 0 means DefaultPollInterval.
	PollInterval time.Duration
	// Git is the git program, best an absolute path found on a PATH that
	// no agent can write to; "" looks "git" up on PATH at every run.
	Git string
	// Ports is where the workspaces' port blocks come from (ports.go);
	// the zero value gives none.
	Ports PortsOptions
}

// DefaultPollInterval is Run's default interval: worktrees made or removed
// outside the app show up within two intervals at most.
const DefaultPollInterval = time.Second

// Manager owns the projects and their workspaces. All methods are safe for
// concurrent use; git runs outside the manager's lock.
type Manager struct {
	opts Options
	log  *slog.Logger
	git  *gitRunner
	// sleep waits between retries of a delete's folder removal.
	sleep func(ctx context.Context, d time.Duration) error
	// deleteStep is told each step of a worktree's removal (the step
	// constants of delete.go) and the worktree's path: tests swap the
	// folder after the checks, as a process of the same user could, and
	// kill the delete between steps. Nil in the app.
	deleteStep func(step, path string)
	// now is the clock (the names of the refs that keep deleted branches).
	now func() time.Time

	// projMu serialises Load, AddProject and RemoveProject, so the project
	// list is saved in the order it changes. It is taken before mu.
	projMu sync.Mutex

	// agents, events and ports are set by NewManager and never change.
	agents Agents
	events *Events
	ports  *portBlocks

	mu       sync.Mutex
	stored   []string            // the persisted list, as given; includes projects that did not load
	projects map[string]*project // by pathKey(Project.Path)
	// busy holds the workspace paths (pathKey) and branches (branchKey)
	// that a create, a delete, a merge or an update is working on, with
	// what it is doing.
	busy map[string]string
	// tombstones are workspaces whose worktree a failed delete removed but
	// whose branch is left, so that a second Delete can finish the job.
	tombstones map[string]Workspace
}

// NewManager returns a Manager. It is cheap and runs no git; call Load.
func NewManager(opts Options) *Manager {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	events := opts.Events
	if events == nil {
		events = NewEvents(log)
	}
	m := &Manager{
		events:     events,
		opts:       opts,
		log:        log,
		git:        newGitRunner(opts.Git),
		sleep:      sleepCtx,
		now:        time.Now,
		agents:     opts.Agents,
		ports:      newPortBlocks(opts.Ports, log),
		projects:   map[string]*project{},
		busy:       map[string]string{},
		tombstones: map[string]Workspace{},
	}
	m.git.gone = m.workspaceGone
	m.git.pin = m.pinnedGit
	return m
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// AgentStatus is the agent of the workspace at path as Options.Agents
// reports it; NoAgent without agents.
func (m *Manager) AgentStatus(path string) AgentStatus {
	if m.agents == nil {
		return NoAgent
	}
	return m.agents.AgentStatus(path)
}

// Subscribe subscribes to the manager's events (Events.Subscribe): its
// own, and those of the parts that share its Events.
func (m *Manager) Subscribe() (events <-chan Event, cancel func()) { return m.events.Subscribe() }

// Publish sends e to every subscriber (Events.Publish).
func (m *Manager) Publish(e Event) { m.events.Publish(e) }

// reserve marks keys as busy with what ("create", "delete", "merge" or
// "update") and returns
// the function that releases them. A key already busy is a CodeConflict.
func (m *Manager) reserve(what string, keys ...string) (release func(), err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		if other, ok := m.busy[k]; ok {
			return nil, busyError(other, what)
		}
	}
	for _, k := range keys {
		m.busy[k] = what
	}
	return func() {
		m.mu.Lock()
		for _, k := range keys {
			delete(m.busy, k)
		}
		m.mu.Unlock()
	}, nil
}

func busyError(running, wanted string) error {
	switch {
	case running == "merge" || running == "update":
		return Errorf(CodeConflict, "this workspace or branch is being merged or updated; wait for that to finish")
	case wanted == "merge" || wanted == "update":
		return Errorf(CodeConflict, "this workspace or branch is busy with a %s; wait for it to finish", running)
	}
	if running == "delete" {
		return Errorf(CodeConflict, "this workspace is already being deleted; wait for that delete to finish")
	}
	if wanted == "delete" {
		return Errorf(CodeConflict, "this workspace is still being created; wait for the create to finish, then delete it")
	}
	return Errorf(CodeConflict, "a workspace with this name is already being created; wait for it to finish or choose another name")
}

// pathKey is the form under which paths are compared: as they are, or
// case-folded on Windows, whose file systems ignore case.
func pathKey(p string) string {
	if runtime.GOOS == "windows" {
		return strings.ToLower(p)
	}
	return p
}

// branchKey names a branch of a project in Manager.busy.
func branchKey(projectPath, branch string) string {
	return "branch\x00" + pathKey(projectPath) + "\x00" + branch
}

// isWithin reports whether path is dir or inside it (both cleaned keys).
func isWithin(path, dir string) bool {
	if path == dir {
		return true
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// resolveMaybeMissing is filepath.EvalSymlinks for a path that may no longer
// exist: the longest existing ancestor is resolved and the rest appended.
func resolveMaybeMissing(p string) string {
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	dir, rest := p, ""
	for {
		parent := filepath.Dir(dir)
		if parent == dir {
			return p
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest)
		}
	}
}

// sortWorkspaces puts ws in the order of AllWorkspaces: by project path,
// then by name case-folded, then by path.
func sortWorkspaces(ws []Workspace) {
	slices.SortFunc(ws, func(a, b Workspace) int {
		if c := strings.Compare(a.ProjectPath, b.ProjectPath); c != 0 {
			return c
		}
		return compareNamePath(a.Name, a.Path, b.Name, b.Path)
	})
}

// compareNamePath is the domain's one order of projects and of the
// workspaces of a project: by name case-folded, then by path (which tells
// apart names equal but for case).
func compareNamePath(aName, aPath, bName, bPath string) int {
	if c := strings.Compare(strings.ToLower(aName), strings.ToLower(bName)); c != 0 {
		return c
	}
	return strings.Compare(aPath, bPath)
}
