package prepare

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"codehydra/internal/sandbox"
	"codehydra/internal/settings"
	"codehydra/workspace"
)

// Phase is where the preparation of a workspace is.
type Phase string

// The phases of a preparation.
const (
	PhaseCopying Phase = "copying"
	PhaseSetup   Phase = "setup"
	// PhaseFailed: the copy or the setup failed; the agent is not started
	// until Retry succeeds or StartAnyway.
	PhaseFailed Phase = "failed"
	// PhaseDone: the agent was started (after success, or anyway).
	PhaseDone Phase = "done"
)

// State is what a workspace's preparation shows: the phase, its last
// progress line, and after a failure why.
type State struct {
	Phase Phase
	// Progress is the last thing done: a copied file, a line of output.
	Progress string
	// Notes are what the user should know although nothing failed:
	// patterns that matched nothing, files not copied and why.
	Notes []string
	// Err is why it failed (PhaseFailed); a *SetupError for the setup.
	Err error
	// Anyway is set when the user started the agent despite a failure.
	Anyway bool
}

// Options configure a Preparer.
type Options struct {
	// Setup returns the setup of a project (from the user's settings).
	Setup func(projectPath string) (settings.ProjectSetup, bool)
	// Start starts the agent of a workspace that is ready.
	Start func(ws workspace.Workspace)
	// Confine plans how a workspace's setup is confined (nil: not at all);
	// its error keeps the setup from running.
	Confine func(ctx context.Context, path string) (sandbox.Plan, error)
	// OnChange is told each time a workspace's State changes.
	OnChange func(path string)
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Preparer readies new workspaces before their agent starts.
type Preparer struct {
	o   Options
	ctx context.Context
	// stop ends every running preparation; wg waits for them.
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu      sync.Mutex
	entries map[string]*entry
}

// entry is one workspace's preparation.
type entry struct {
	ws     workspace.Workspace
	state  State
	cancel context.CancelFunc // of the running attempt; nil when none runs
}

// New returns a Preparer; Close ends what it still runs.
func New(o Options) *Preparer {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.OnChange == nil {
		o.OnChange = func(string) {}
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Preparer{o: o, ctx: ctx, stop: stop, entries: map[string]*entry{}}
}

// Added handles a workspace that appeared. One that CodeHydra just created
// (created) in a project with a setup, or whose main checkout has a
// .worktreeinclude, is prepared in the background and
// its agent started once that succeeded; any other gets its agent now.
func (p *Preparer) Added(ws workspace.Workspace, created bool) {
	setup, ok := p.o.Setup(ws.ProjectPath)
	ok = ok || HasWorktreeInclude(ws.ProjectPath)
	if !created || !ok {
		p.o.Start(ws)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ctx.Err() != nil || p.entries[ws.Path] != nil {
		return
	}
	e := &entry{ws: ws}
	p.entries[ws.Path] = e
	p.runLocked(e, setup)
}

// Removed forgets a workspace that went, ending its running setup.
func (p *Preparer) Removed(path string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.entries[path]; e != nil {
		if e.cancel != nil {
			e.cancel()
		}
		delete(p.entries, path)
	}
}

// State returns the preparation of the workspace at path; false when it
// had none (its agent started at once).
func (p *Preparer) State(path string) (State, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.entries[path]
	if e == nil {
		return State{}, false
	}
	return e.state, true
}

// ErrNotFailed is returned by Retry and StartAnyway for a workspace whose
// preparation did not fail (it runs, it is done, or it never had one).
var ErrNotFailed = errors.New("the workspace's setup has not failed: there is nothing to retry or start")

// Retry runs the copy and the setup of a failed workspace again, with the
// project's current settings.
func (p *Preparer) Retry(path string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.entries[path]
	if e == nil || e.state.Phase != PhaseFailed {
		return ErrNotFailed
	}
	if p.ctx.Err() != nil {
		return errors.New("CodeHydra is shutting down")
	}
	setup, _ := p.o.Setup(e.ws.ProjectPath)
	p.runLocked(e, setup)
	return nil
}

// StartAnyway starts the agent of a workspace whose setup failed.
func (p *Preparer) StartAnyway(path string) error {
	p.mu.Lock()
	e := p.entries[path]
	if e == nil || e.state.Phase != PhaseFailed {
		p.mu.Unlock()
		return ErrNotFailed
	}
	e.state.Phase, e.state.Anyway = PhaseDone, true
	ws := e.ws
	p.mu.Unlock()
	p.o.Logger.Info("starting the agent although the workspace's setup failed", "workspace", ws.Path)
	p.o.Start(ws)
	p.o.OnChange(path)
	return nil
}

// Close ends every running preparation and waits for them.
func (p *Preparer) Close() {
	p.stop()
	p.wg.Wait()
}

// runLocked starts an attempt of e's preparation in the background.
func (p *Preparer) runLocked(e *entry, setup settings.ProjectSetup) {
	ctx, cancel := context.WithCancel(p.ctx)
	e.cancel = cancel
	e.state = State{Phase: PhaseCopying}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer cancel()
		p.o.OnChange(e.ws.Path)
		err := p.prepare(ctx, e, setup)
		p.finish(ctx, e, err)
	}()
}

// prepare copies the files and runs the setup of e.
func (p *Preparer) prepare(ctx context.Context, e *entry, setup settings.ProjectSetup) error {
	log := p.o.Logger.With("workspace", e.ws.Path)
	rep, err := CopyFiles(ctx, e.ws.ProjectPath, e.ws.Path, setup.Copy)
	if err != nil {
		return fmt.Errorf("copy files from the main checkout: %w", err)
	}
	var notes []string
	for _, pat := range rep.Unmatched {
		log.Info("copy pattern matched no untracked file", "pattern", pat)
		notes = append(notes, fmt.Sprintf("%s matched no untracked file", pat))
	}
	for _, s := range rep.Skipped {
		log.Info("file not copied", "why", s)
		notes = append(notes, s)
	}
	log.Info("copied files into the new workspace", "count", len(rep.Copied))
	p.update(e, func(s *State) {
		s.Notes = notes
		s.Progress = fmt.Sprintf("Copied %d file(s).", len(rep.Copied))
	})
	argv, err := settings.SplitCommand(setup.Setup)
	if err != nil || len(argv) == 0 {
		return err
	}
	var plan sandbox.Plan
	if p.o.Confine != nil {
		if plan, err = p.o.Confine(ctx, e.ws.Path); err != nil {
			return &SetupError{Reason: "was not run: " + err.Error(), ExitCode: -1}
		}
	}
	p.update(e, func(s *State) { s.Phase = PhaseSetup; s.Progress = "Running " + setup.Setup + "…" })
	log.Info("running the project's setup", "command", argv, "sandbox", plan.Policy != nil)
	env := plan.Env
	if b, ok := workspace.PortsOf(e.ws.Path); ok {
		env = append(slices.Clip(env), b.Env()...)
	}
	return Run(ctx, Command{Argv: argv, Dir: e.ws.Path, Timeout: setup.SetupTimeout(), Sandbox: plan.Policy, Env: env, Line: func(line string) {
		log.Info("setup output", "line", line)
		p.update(e, func(s *State) { s.Progress = line })
	}})
}

// update changes e's state and says so.
func (p *Preparer) update(e *entry, f func(*State)) {
	p.mu.Lock()
	f(&e.state)
	p.mu.Unlock()
	p.o.OnChange(e.ws.Path)
}

// finish records the outcome of an attempt and starts the agent after a
// success, unless the workspace went or the app is stopping meanwhile.
func (p *Preparer) finish(ctx context.Context, e *entry, err error) {
	p.mu.Lock()
	gone := ctx.Err() != nil || p.entries[e.ws.Path] != e
	e.cancel = nil
	if gone {
		p.mu.Unlock()
		return
	}
	if err != nil {
		e.state.Phase, e.state.Err = PhaseFailed, err
	} else {
		e.state.Phase, e.state.Progress = PhaseDone, "Ready."
	}
	p.mu.Unlock()
	if err != nil {
		p.o.Logger.Warn("workspace setup failed; its agent is not started", "workspace", e.ws.Path, "err", err)
	} else {
		p.o.Logger.Info("workspace ready", "workspace", e.ws.Path)
		p.o.Start(e.ws)
	}
	p.o.OnChange(e.ws.Path)
}

// Detail says in one line what the state means for the agent, for a
// status that names no phase of its own.
func (s State) Detail() string {
	switch s.Phase {
	case PhaseCopying:
		return "preparing the workspace: copying files from the main checkout"
	case PhaseSetup:
		return "preparing the workspace: running its setup command"
	case PhaseFailed:
		return "the workspace's setup failed, so its agent was not started: " + firstLine(s.Err) +
			". Choose Retry setup or Start agent anyway in the tray's menu of the workspace"
	}
	return ""
}

// firstLine is the first line of err's message.
func firstLine(err error) string {
	if err == nil {
		return ""
	}
	l, _, _ := strings.Cut(err.Error(), "\n")
	return l
}
