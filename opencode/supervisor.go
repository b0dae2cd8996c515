package opencode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"

	"codehydra/internal/reap"
	"codehydra/workspace"
)

// Supervisor runs one `opencode serve` per workspace. It implements
// workspace.Agents and the MCP server's Agents (OpencodePort).
type Supervisor struct {
	opts      SupervisorOptions
	log       *slog.Logger
	agentsDir string
	sem       chan struct{}
	spawner   *reap.Spawner

	mu       sync.Mutex
	agents   map[string]*agent
	reserved map[int]bool // ports held by our agents
	// running counts the agents whose loop runs (MaxAgents bounds it);
	// waiting are the workspaces refused a start for it, in the order they
	// asked, each with the placeholder that reports why (see limitLocked).
	running  int
	queue    []string
	waiting  map[string]*agent
	bin      string
	binFound bool
	closed   bool
	// changed is closed, and replaced, at every change of an agent's
	// status (notifyLocked), for those that wait for one (waitUntilReady).
	changed chan struct{}

	// prompts are what agents are given as prompts: first prompts and
	// reviews (prompt.go).
	prompts prompts

	// spent is the usage the agents reported while this supervisor ran
	// (guarded by mu; see UsageSpent).
	spent workspace.AgentUsage
}

// NewSupervisor returns a supervisor. It looks for the opencode binary
// once (FindBinary), so that AgentStatus can report a missing one before
// any agent starts, and starts the thread that agents will be forked from
// (see reap.Spawner); it starts no agent.
func NewSupervisor(o SupervisorOptions) *Supervisor {
	o.setDefaults()
	s := &Supervisor{
		opts:      o,
		log:       o.Logger,
		agentsDir: o.AgentsDir,
		sem:       make(chan struct{}, o.MaxStarting),
		spawner:   reap.NewSpawner(errSpawnerClosed),
		agents:    map[string]*agent{},
		reserved:  map[int]bool{},
		waiting:   map[string]*agent{},
		changed:   make(chan struct{}),
		prompts:   prompts{all: map[string]*outbox{}},
	}
	s.FindBinary()
	return s
}

// Start starts the agent of ws unless one runs already. At most
// MaxStarting agents start at once; the others wait their turn. With
// MaxAgents running already, the agent is not started: its status is
// failed and says why, and it starts when another agent ends. Either way
// OnChange hears of it at once: the status is "starting" (or failed) from
// here on, long before the process is ready. A workspace recorded
// hibernated (workspace.MarkHibernated) stays so: its agent is not started.
func (s *Supervisor) Start(ws workspace.Workspace) {
	key := filepath.Clean(ws.Path)
	s.loadOutbox(key)
	since, hibernated := workspace.HibernatedSince(ws.Path)
	s.mu.Lock()
	if a := s.agents[key]; s.closed || a != nil && (!ended(a) || s.waiting[key] == a || a.state == workspace.AgentStateHibernated) {
		s.mu.Unlock()
		return
	}
	if hibernated {
		s.hibernatedLocked(key, ws, since, nil, nil)
	} else {
		s.startLocked(key, ws)
	}
	s.mu.Unlock()
	s.opts.OnChange(ws.Path)
}

// ended reports whether a's loop returned.
func ended(a *agent) bool {
	select {
	case <-a.done:
		return true
	default:
		return false
	}
}

// startLocked starts the agent of ws, or, with MaxAgents running, puts it
// in the queue (limited reports that).
func (s *Supervisor) startLocked(key string, ws workspace.Workspace) (limited bool) {
	if s.running >= s.opts.MaxAgents {
		s.limitLocked(key, ws)
		return true
	}
	delete(s.waiting, key)
	s.running++
	ctx, cancel := context.WithCancel(context.Background())
	a := &agent{
		ws:      ws,
		cancel:  cancel,
		done:    make(chan struct{}),
		restart: make(chan struct{}, 1),
		state:   workspace.AgentStateStarting,
		out:     newLineRing(s.opts.OutputLines),
		usage:   s.lastUsageLocked(key),
		// A start counts as activity, for HibernateIdle.
		activeAt: s.opts.Now(),
	}
	s.agents[key] = a
	s.notifyLocked()
	go func() {
		defer close(a.done)
		s.run(ctx, key, a)
		s.agentEnded()
	}()
	return false
}

// limitLocked records the agent of ws as not started for the cap: a
// placeholder whose loop has ended (so Restart and Start try again) and
// whose status says why, and a place in the queue.
func (s *Supervisor) limitLocked(key string, ws workspace.Workspace) {
	done := make(chan struct{})
	close(done)
	a := &agent{
		ws:      ws,
		cancel:  func() {},
		done:    done,
		restart: make(chan struct{}, 1),
		state:   workspace.AgentStateFailed,
		detail: fmt.Sprintf("not started: %d agents run already (maxAgents in the settings); it starts when one of them stops",
			s.opts.MaxAgents),
		out:   newLineRing(s.opts.OutputLines),
		usage: s.lastUsageLocked(key),
	}
	if s.waiting[key] == nil {
		s.queue = append(s.queue, key)
	}
	s.waiting[key] = a
	s.agents[key] = a
	s.notifyLocked()
}

// lastUsageLocked is the usage of the agent of key so far, for the agent
// or placeholder that replaces it: it keeps its last figures while it does
// not run, and until the new process's sessions are read.
func (s *Supervisor) lastUsageLocked(key string) Usage {
	if a := s.agents[key]; a != nil {
		return a.usage
	}
	return Usage{}
}

// waitingForPlace reports whether the agent of key waits in the queue for
// a place of MaxAgents (see limitLocked).
func (s *Supervisor) waitingForPlace(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.waiting[key]
	return a != nil && s.agents[key] == a
}

// agentEnded frees the place of an agent whose loop returned and starts
// the agents waiting for one, oldest first.
func (s *Supervisor) agentEnded() {
	var started []string
	s.mu.Lock()
	s.running--
	for !s.closed && s.running < s.opts.MaxAgents && len(s.queue) > 0 {
		key := s.queue[0]
		s.queue = s.queue[1:]
		a := s.waiting[key]
		if a == nil || s.agents[key] != a {
			continue // stopped, or started meanwhile
		}
		s.log.Info("starting an agent that waited for maxAgents", slog.String("workspace", a.ws.Path))
		s.startLocked(key, a.ws)
		started = append(started, a.ws.Path)
	}
	s.mu.Unlock()
	for _, p := range started {
		s.opts.OnChange(p)
	}
}

// Restart stops the agent of path if it runs and starts it again with a
// fresh crash history, the current binary and the current MCP token. It
// also revives a failed or not-found agent, and wakes a hibernated one.
// It does not wait.
func (s *Supervisor) Restart(path string) error {
	key := filepath.Clean(path)
	if woke, err := s.wakeStart(context.Background(), key, path); woke || err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("restart agent: the supervisor is stopped")
	}
	a := s.agents[key]
	if a == nil {
		return fmt.Errorf("restart agent: no agent for workspace %s", path)
	}
	select {
	case <-a.done:
		s.startLocked(key, a.ws)
	default:
		select {
		case a.restart <- struct{}{}:
		default: // a restart is already pending
		}
	}
	return nil
}

// RestartAll restarts every agent, e.g. after the MCP token was rotated;
// a hibernated one stays so (it gets the new token when it wakes).
func (s *Supervisor) RestartAll() {
	s.mu.Lock()
	keys := make([]string, 0, len(s.agents))
	for k, a := range s.agents {
		if a.state != workspace.AgentStateHibernated {
			keys = append(keys, k)
		}
	}
	s.mu.Unlock()
	for _, k := range keys {
		_ = s.Restart(k)
	}
}

// StopAgent stops the agent of path and waits until it is gone (SIGTERM to
// its process group, SIGKILL after the stop timeout). Stopping an agent
// that does not run is not an error. It implements workspace.Agents.
func (s *Supervisor) StopAgent(ctx context.Context, path string) error {
	key := filepath.Clean(path)
	s.mu.Lock()
	a := s.agents[key]
	delete(s.agents, key)
	delete(s.waiting, key)
	s.notifyLocked()
	s.mu.Unlock()
	s.forgetOutbox(key)
	if a == nil {
		return nil
	}
	a.cancel()
	select {
	case <-a.done:
	case <-ctx.Done():
		return fmt.Errorf("stop agent of %s: %w", path, ctx.Err())
	}
	s.opts.OnChange(a.ws.Path)
	return nil
}

// StopAll stops every agent, waits for them, and ends the supervisor;
// Start does nothing afterwards. Call it at quit.
func (s *Supervisor) StopAll(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.notifyLocked()
	agents := make([]*agent, 0, len(s.agents))
	for _, a := range s.agents {
		agents = append(agents, a)
		a.cancel()
	}
	s.mu.Unlock()
	for _, a := range agents {
		select {
		case <-a.done:
		case <-ctx.Done():
			return fmt.Errorf("stop agents: %w", ctx.Err())
		}
	}
	s.spawner.Close()
	return nil
}

// AgentStatus reports the agent of the workspace at path. It implements
// workspace.Agents.
func (s *Supervisor) AgentStatus(path string) workspace.AgentStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.agents[filepath.Clean(path)]
	if a == nil {
		if !s.binFound {
			return workspace.AgentStatus{Type: workspace.AgentNone, State: workspace.AgentStateNotFound, Detail: s.notFoundDetail()}
		}
		return workspace.NoAgent
	}
	return s.statusLocked(a)
}

// OpencodePort returns the port of the workspace's agent server while it
// is ready, else (0, false). It implements the MCP server's Agents.
func (s *Supervisor) OpencodePort(path string) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.agents[filepath.Clean(path)]
	if a == nil || a.state != workspace.AgentStateReady || a.port == 0 {
		return 0, false
	}
	return a.port, true
}

// OpencodeServer returns the port of the workspace's agent server and the
// password it demands (HTTP basic auth as user "opencode") while it is
// ready, else ok=false. Each start of the server has a new password. It is
// a secret that opens the agent's whole API: show it to the user only on
// request, never log it.
func (s *Supervisor) OpencodeServer(path string) (port int, password string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.agents[filepath.Clean(path)]
	if a == nil || a.state != workspace.AgentStateReady || a.port == 0 {
		return 0, "", false
	}
	return a.port, a.password, true
}

// AgentProcess returns the pid of the workspace's agent process (the root
// of its process tree), the port of its own server and the marker in the
// environment of all it starts (CODEHYDRA_AGENT_ID=<id>) while it is
// ready, else ok=false: what the previews look for the agent's children
// by.
func (s *Supervisor) AgentProcess(path string) (pid, port int, marker string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.agents[filepath.Clean(path)]
	if a == nil || a.state != workspace.AgentStateReady || a.pid == 0 {
		return 0, 0, "", false
	}
	return a.pid, a.port, a.marker, true
}

// Output returns the last lines (up to OutputLines) that the workspace's
// agent printed, of the current run or the last one; nil if none.
func (s *Supervisor) Output(path string) []string {
	s.mu.Lock()
	a := s.agents[filepath.Clean(path)]
	s.mu.Unlock()
	if a == nil {
		return nil
	}
	return a.out.snapshot()
}

var _ workspace.Agents = (*Supervisor)(nil)

// UsageSpent is what the agents' model calls used while this supervisor
// ran: what their sessions' totals grew by after each agent's first read.
// It only grows (the OpenTelemetry counters).
func (s *Supervisor) UsageSpent() workspace.AgentUsage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spent
}
