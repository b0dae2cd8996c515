// Package uitest is what the tests of the app's packages (app, window,
// bridge) share: in-memory fakes of the domain for what a real repository
// cannot easily do (fail on purpose), agent statuses as the supervisor
// reports them, a Fyne app that records what it is asked, and a Fyne
// thread the test plays itself. Only tests import it.
package uitest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// Main isolates git from the machine (its own HOME, no system or global
// config, a fixed identity) and runs m in a locale Fyne understands; home
// prefixes the temporary HOME's name.
func Main(m *testing.M, home string) {
	for _, k := range []string{"LC_ALL", "LC_MESSAGES"} {
		os.Unsetenv(k)
	}
	os.Setenv("LANG", "en_US.UTF-8") // Fyne cannot parse the C locale and says so
	os.Exit(testenv.Main(m, home))
}

// Agent statuses as the supervisor reports them.
var (
	AgentIdle     = workspace.AgentStatus{Type: workspace.AgentIdle, State: workspace.AgentStateReady, Port: 4101, Counts: workspace.AgentCounts{Idle: 1, Total: 1}}
	AgentBusy     = workspace.AgentStatus{Type: workspace.AgentBusy, State: workspace.AgentStateReady, Port: 4102, Counts: workspace.AgentCounts{Busy: 1, Total: 1}}
	AgentMixed    = workspace.AgentStatus{Type: workspace.AgentMixed, State: workspace.AgentStateReady, Port: 4103, Counts: workspace.AgentCounts{Idle: 1, Busy: 1, Total: 2}}
	AgentInput    = workspace.AgentStatus{Type: workspace.AgentBusy, State: workspace.AgentStateReady, Port: 4104, NeedsInput: 1, Counts: workspace.AgentCounts{Busy: 1, Total: 1}}
	AgentFailed   = workspace.AgentStatus{Type: workspace.AgentNone, State: workspace.AgentStateFailed, Detail: "exited with status 1"}
	AgentNotFound = workspace.AgentStatus{Type: workspace.AgentNone, State: workspace.AgentStateNotFound, Detail: "opencode not found"}
	AgentStarting = workspace.AgentStatus{Type: workspace.AgentNone, State: workspace.AgentStateStarting}
	AgentReady    = workspace.AgentStatus{Type: workspace.AgentNone, State: workspace.AgentStateReady, Port: 4105}
	// AgentRetrying's model cannot be reached: opencode retries its turn.
	AgentRetrying = workspace.AgentStatus{Type: workspace.AgentBusy, State: workspace.AgentStateReady, Port: 4106, Counts: workspace.AgentCounts{Busy: 1, Total: 1},
		Retry: workspace.AgentRetry{Sessions: 1, Attempt: 3, Message: "Cannot connect to API", Next: 1767225600123}}
)

// Workspaces is an in-memory workspace manager.
type Workspaces struct {
	mu         sync.Mutex
	projects   []workspace.Project
	workspaces map[string][]workspace.Workspace
	branches   []string
	base       string
	status     map[string]workspace.Status
	changes    map[string]workspace.Changes
	metadata   map[string]map[string]string
	subs       []chan workspace.Event

	createErr error
	// deleteFail, when set, makes the next delete fail at that step.
	deleteFail workspace.DeleteStep
	deletes    []workspace.DeleteOptions
	created    []workspace.CreateOptions
}

// NewWorkspaces is a manager without projects whose repositories have the
// branches develop and main, main the default base.
func NewWorkspaces() *Workspaces {
	return &Workspaces{
		workspaces: map[string][]workspace.Workspace{},
		status:     map[string]workspace.Status{},
		changes:    map[string]workspace.Changes{},
		metadata:   map[string]map[string]string{},
		branches:   []string{"develop", "main"},
		base:       "main",
	}
}

// OneWorkspace is a manager with one workspace, proj/feat, whose agent is
// in st.
func OneWorkspace(st workspace.AgentStatus) (*Workspaces, workspace.Workspace, *Agents) {
	f := NewWorkspaces()
	ws := f.AddWorkspace("proj", "feat")
	agents := NewAgents()
	agents.Set(ws.Path, st)
	return f, ws, agents
}

// AddWorkspace adds a project (if new) at /src/<project> and a workspace
// in it under /wt/<project>, without an event.
func (f *Workspaces) AddWorkspace(project, name string) workspace.Workspace {
	f.mu.Lock()
	defer f.mu.Unlock()
	pp := "/src/" + project
	if !slices.ContainsFunc(f.projects, func(p workspace.Project) bool { return p.Path == pp }) {
		f.projects = append(f.projects, workspace.Project{Name: project, Path: pp})
	}
	ws := workspace.Workspace{Name: name, Branch: name, Path: "/wt/" + project + "/" + strings.ReplaceAll(name, "/", "%"), ProjectPath: pp}
	f.workspaces[pp] = append(f.workspaces[pp], ws)
	f.metadata[ws.Path] = map[string]string{"base": "main"}
	return ws
}

// FailCreate makes every create fail with err (nil: succeed again).
func (f *Workspaces) FailCreate(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.createErr = err
}

// FailDelete makes the next delete fail at step.
func (f *Workspaces) FailDelete(step workspace.DeleteStep) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleteFail = step
}

// Created is the options of every create asked for.
func (f *Workspaces) Created() []workspace.CreateOptions {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.created)
}

// Deletes is the options of every delete asked for.
func (f *Workspaces) Deletes() []workspace.DeleteOptions {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.deletes)
}

func (f *Workspaces) Projects() []workspace.Project {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.projects)
}

func (f *Workspaces) Workspaces(p string) ([]workspace.Workspace, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.workspaces[p]), nil
}

func (f *Workspaces) Subscribe() (<-chan workspace.Event, func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan workspace.Event, 256)
	f.subs = append(f.subs, ch)
	return ch, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.subs = slices.DeleteFunc(f.subs, func(c chan workspace.Event) bool { return c == ch })
	}
}

// Publish sends e to every subscriber, as the manager does.
func (f *Workspaces) Publish(e workspace.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ch := range f.subs {
		ch <- e
	}
}

func (f *Workspaces) AddProject(_ context.Context, path string) (workspace.Project, error) {
	p := workspace.Project{Name: filepath.Base(path), Path: path}
	f.mu.Lock()
	f.projects = append(f.projects, p)
	f.mu.Unlock()
	f.Publish(workspace.Event{Kind: workspace.EventProjectAdded, ProjectPath: path})
	return p, nil
}

// RemoveProject drops the project and its workspaces, announcing them as
// the manager does.
func (f *Workspaces) RemoveProject(_ context.Context, path string) error {
	f.mu.Lock()
	i := slices.IndexFunc(f.projects, func(p workspace.Project) bool { return p.Path == path })
	if i < 0 {
		f.mu.Unlock()
		return workspace.Errorf(workspace.CodeProjectNotFound, "no project at %s; see the project list for the paths", path)
	}
	f.projects = slices.Delete(f.projects, i, i+1)
	gone := f.workspaces[path]
	delete(f.workspaces, path)
	f.mu.Unlock()
	for _, ws := range gone {
		f.Publish(workspace.Event{Kind: workspace.EventWorkspaceRemoved, ProjectPath: path, Workspace: ws})
	}
	f.Publish(workspace.Event{Kind: workspace.EventProjectRemoved, ProjectPath: path})
	return nil
}

func (f *Workspaces) Create(_ context.Context, o workspace.CreateOptions) (workspace.Workspace, error) {
	f.mu.Lock()
	f.created = append(f.created, o)
	err := f.createErr
	f.mu.Unlock()
	if err != nil {
		return workspace.Workspace{}, err
	}
	ws := f.AddWorkspace(filepath.Base(o.ProjectPath), o.Name)
	f.Publish(workspace.Event{Kind: workspace.EventWorkspaceAdded, ProjectPath: o.ProjectPath, Workspace: ws})
	return ws, nil
}

func (f *Workspaces) Delete(_ context.Context, path string, o workspace.DeleteOptions) error {
	f.mu.Lock()
	f.deletes = append(f.deletes, o)
	fail := f.deleteFail
	f.deleteFail = ""
	ws := f.workspaceAt(path)
	f.mu.Unlock()
	if ws.Path == "" {
		return workspace.Errorf(workspace.CodeWorkspaceNotFound, "no workspace at %s; nothing was deleted", path)
	}
	for _, step := range workspace.DeleteSteps {
		if step == workspace.StepDone {
			f.mu.Lock()
			f.workspaces[ws.ProjectPath] = slices.DeleteFunc(f.workspaces[ws.ProjectPath], func(w workspace.Workspace) bool { return w.Path == path })
			f.mu.Unlock()
			f.Publish(workspace.Event{Kind: workspace.EventWorkspaceRemoved, ProjectPath: ws.ProjectPath, Workspace: ws})
		}
		f.Publish(workspace.Event{Kind: workspace.EventDeleteProgress, ProjectPath: ws.ProjectPath, Workspace: ws, Step: step})
		if step == fail {
			err := workspace.Errorf(workspace.CodeInternal, "cannot remove the worktree: device busy")
			f.Publish(workspace.Event{Kind: workspace.EventDeleteFailed, ProjectPath: ws.ProjectPath, Workspace: ws, Step: step, Err: err.Error()})
			return err
		}
	}
	return nil
}

func (f *Workspaces) Status(_ context.Context, path string) (workspace.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status[path], nil
}

// workspaceAt is the workspace at path, zero when none is; f.mu is held.
func (f *Workspaces) workspaceAt(path string) workspace.Workspace {
	for _, list := range f.workspaces {
		for _, w := range list {
			if w.Path == path {
				return w
			}
		}
	}
	return workspace.Workspace{}
}

// SetStatus makes st the status of the workspace at path and announces
// it, as the status cache does.
func (f *Workspaces) SetStatus(path string, st workspace.Status) {
	f.mu.Lock()
	f.status[path] = st
	ws := f.workspaceAt(path)
	f.mu.Unlock()
	f.Publish(workspace.Event{Kind: workspace.EventStatusChanged, ProjectPath: ws.ProjectPath, Workspace: ws})
}

// SetMetadataQuietly sets a metadata key without an event, as a workspace
// is found with it.
func (f *Workspaces) SetMetadataQuietly(path, key, value string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.metadata[path] == nil {
		f.metadata[path] = map[string]string{}
	}
	f.metadata[path][key] = value
}

func (f *Workspaces) Changes(_ context.Context, path string) (workspace.Changes, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changes[path], nil
}

// BranchCreated is true: CodeHydra created every branch of the fake.
func (f *Workspaces) BranchCreated(context.Context, string) (bool, error) { return true, nil }

func (f *Workspaces) Metadata(_ context.Context, path string) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.metadata[path]), nil
}

func (f *Workspaces) SetMetadata(_ context.Context, path, key string, value *string) error {
	if err := workspace.ValidateMetadataKey(key); err != nil {
		return err
	}
	f.mu.Lock()
	if value == nil {
		delete(f.metadata[path], key)
	} else {
		f.metadata[path][strings.ToLower(key)] = *value
	}
	f.mu.Unlock()
	f.Publish(workspace.Event{Kind: workspace.EventMetadataChanged, Workspace: workspace.Workspace{Path: path}})
	return nil
}

// SetMCPServerOff switches server off (or on) in the workspace's
// metadata "mcpoff", sorted and comma-separated as the manager writes it,
// and publishes metadata-changed.
func (f *Workspaces) SetMCPServerOff(_ context.Context, path, server string, off bool) error {
	f.mu.Lock()
	var names []string
	for n := range strings.SplitSeq(f.metadata[path][workspace.MetadataMCPOff], ",") {
		if n != "" && n != server {
			names = append(names, n)
		}
	}
	if off {
		names = append(names, server)
		slices.Sort(names)
	}
	if f.metadata[path] == nil {
		f.metadata[path] = map[string]string{}
	}
	if len(names) == 0 {
		delete(f.metadata[path], workspace.MetadataMCPOff)
	} else {
		f.metadata[path][workspace.MetadataMCPOff] = strings.Join(names, ",")
	}
	f.mu.Unlock()
	f.Publish(workspace.Event{Kind: workspace.EventMetadataChanged, Workspace: workspace.Workspace{Path: path}})
	return nil
}

func (f *Workspaces) Branches(context.Context, string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.branches), nil
}

// ReusableBranches are the fake's branches but main, which the fake
// project's main checkout has checked out.
func (f *Workspaces) ReusableBranches(ctx context.Context, path string) ([]string, error) {
	all, err := f.Branches(ctx, path)
	return slices.DeleteFunc(all, func(b string) bool { return b == "main" }), err
}

func (f *Workspaces) DefaultBase(context.Context, string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.base, nil
}

// Agents is an in-memory opencode supervisor.
type Agents struct {
	mu       sync.Mutex
	status   map[string]workspace.AgentStatus
	restarts []string
	binary   string
	// def is the status of workspaces not set; NoAgent when zero.
	def workspace.AgentStatus
	// prompts are the first prompts queued, and their deliveries.
	prompts map[string]queuedPrompt
	// refuse makes QueuePrompt fail.
	refuse bool
	// asleep are the statuses of hibernated agents before they were
	// hibernated; wakes the paths woken, in order.
	asleep map[string]workspace.AgentStatus
	wakes  []string
}

// AgentHibernated is the status of a hibernated agent.
var AgentHibernated = workspace.AgentStatus{Type: workspace.AgentNone, State: workspace.AgentStateHibernated, Detail: "hibernated"}

// Hibernate records the agent of path hibernated; Wake gives it its
// status back.
func (a *Agents) Hibernate(_ context.Context, path string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.asleep == nil {
		a.asleep = map[string]workspace.AgentStatus{}
	}
	if _, ok := a.asleep[path]; !ok {
		a.asleep[path] = a.status[path]
	}
	a.status[path] = AgentHibernated
	return nil
}

func (a *Agents) Wake(_ context.Context, path string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if st, ok := a.asleep[path]; ok {
		a.status[path] = st
		delete(a.asleep, path)
		a.wakes = append(a.wakes, path)
	}
	return nil
}

func (a *Agents) Hibernated(path string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.asleep[path]
	return ok
}

// Woken is the paths Wake woke, in order.
func (a *Agents) Woken() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.wakes)
}

// queuedPrompt is a first prompt given to Agents, and what it answers
// PromptDelivery with.
type queuedPrompt struct {
	prompt   workspace.FirstPrompt
	delivery workspace.PromptDelivery
}

// NewAgents is a supervisor whose workspaces have no agent until Set.
func NewAgents() *Agents {
	return &Agents{status: map[string]workspace.AgentStatus{}, prompts: map[string]queuedPrompt{}}
}

// Set makes st the status of the agent of path.
func (a *Agents) Set(path string, st workspace.AgentStatus) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.status[path] = st
}

// SetDefault makes st the status of the agents of workspaces not Set.
func (a *Agents) SetDefault(st workspace.AgentStatus) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.def = st
}

// SetBinary is where FindBinary finds opencode; "" for nowhere.
func (a *Agents) SetBinary(path string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.binary = path
}

// RefuseQueue makes QueuePrompt fail from now on.
func (a *Agents) RefuseQueue() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.refuse = true
}

func (a *Agents) AgentStatus(path string) workspace.AgentStatus {
	a.mu.Lock()
	defer a.mu.Unlock()
	if st, ok := a.status[path]; ok {
		return st
	}
	if a.def.Type != "" {
		return a.def
	}
	return workspace.NoAgent
}

// OpencodeServer is the status's port; the password is "pw-" and the port.
func (a *Agents) OpencodeServer(path string) (int, string, bool) {
	st := a.AgentStatus(path)
	return st.Port, fmt.Sprintf("pw-%d", st.Port), st.Port != 0
}

func (a *Agents) Restart(path string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.restarts = append(a.restarts, path)
	return nil
}

func (a *Agents) RestartAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.restarts = append(a.restarts, "all")
}

func (a *Agents) FindBinary() (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.binary, a.binary != ""
}

// Restarted is the paths restarted, in order; "all" for a RestartAll.
func (a *Agents) Restarted() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.restarts)
}

func (a *Agents) QueuePrompt(path string, p workspace.FirstPrompt) (workspace.PromptDelivery, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.refuse {
		return workspace.PromptDelivery{}, errors.New("the agents are not set up yet; the prompt was not kept")
	}
	d := workspace.PromptDelivery{State: workspace.DeliveryPending}
	a.prompts[path] = queuedPrompt{prompt: p, delivery: d}
	return d, nil
}

func (a *Agents) PromptDelivery(path string) (workspace.PromptDelivery, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	q, ok := a.prompts[path]
	return q.delivery, ok
}

// SetDelivery changes what became of the first prompt of path.
func (a *Agents) SetDelivery(path string, d workspace.PromptDelivery) {
	a.mu.Lock()
	defer a.mu.Unlock()
	q := a.prompts[path]
	q.delivery = d
	a.prompts[path] = q
}

// Queued is the first prompt given for path.
func (a *Agents) Queued(path string) (workspace.FirstPrompt, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	q, ok := a.prompts[path]
	return q.prompt, ok
}

// MCP is a running MCP server on port InUse, with Notice as its port
// notice.
type MCP struct {
	InUse  int
	Notice string
}

func (m MCP) Port() int          { return m.InUse }
func (m MCP) URL() string        { return "http://127.0.0.1/mcp" }
func (m MCP) PortNotice() string { return m.Notice }

// RealManager is a loaded workspace.Manager over the given projects, with
// worktrees under a temp folder.
func RealManager(t *testing.T, projects ...string) *workspace.Manager {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := workspace.NewManager(workspace.Options{Projects: projects, WorktreeRoot: root})
	if err := m.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return m
}

// Answer is an answer given to Answers.
type Answer struct {
	Path, ID string
	Reply    workspace.Reply
}

// Answers is an in-memory answerer of the agents' pending requests
// (app.Answerer): it records each answer, and holds each until Release
// while held.
type Answers struct {
	mu      sync.Mutex
	got     []Answer
	hold    chan struct{}
	fail    error
	onReply func(Answer)
}

// Hold makes each answer wait until Release.
func (a *Answers) Hold() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.hold = make(chan struct{})
}

// Release lets the held answers through.
func (a *Answers) Release() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.hold != nil {
		close(a.hold)
		a.hold = nil
	}
}

// Fail makes each answer fail with err.
func (a *Answers) Fail(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.fail = err
}

// OnReply runs fn with each answer once it went through (as the agent
// then drops the request).
func (a *Answers) OnReply(fn func(Answer)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.onReply = fn
}

func (a *Answers) Answer(ctx context.Context, path, id string, r workspace.Reply) error {
	a.mu.Lock()
	ans := Answer{path, id, r}
	a.got = append(a.got, ans)
	hold, fail, on := a.hold, a.fail, a.onReply
	a.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if fail != nil {
		return fail
	}
	if on != nil {
		on(ans)
	}
	return nil
}

// Got are the answers given so far.
func (a *Answers) Got() []Answer {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.got)
}
