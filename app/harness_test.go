package app

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"codehydra/internal/settings"
	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// TestMain isolates git from the machine: its own HOME, no system or global
// config, a fixed identity; and runs in a locale Fyne understands.
func TestMain(m *testing.M) {
	for _, k := range []string{"LC_ALL", "LC_MESSAGES"} {
		os.Unsetenv(k)
	}
	os.Setenv("LANG", "en_US.UTF-8") // Fyne cannot parse the C locale and says so
	os.Exit(testenv.Main(m, "app-test-home-"))
}

// harness runs a ui on a test Fyne app. The test goroutine plays the Fyne
// thread: what the UI hands to u.do waits in a queue until the test drains
// it (in waitFor), so widgets are only touched by one goroutine.
type harness struct {
	t    *testing.T
	app  *recApp
	u    *ui
	view *recView

	mu    sync.Mutex
	queue []func()
}

func newHarness(t *testing.T, deps Deps) *harness {
	t.Helper()
	h := &harness{t: t, app: &recApp{App: test.NewTempApp(t)}, view: &recView{}}
	if deps.Settings == nil {
		deps.Settings = settings.NewStore(filepath.Join(t.TempDir(), "settings.json"))
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.u = newUI(ctx, h.app, deps)
	h.u.do = h.enqueue
	h.u.tray.setTooltip = func(s string) { h.view.setTooltip(s) }
	t.Cleanup(func() {
		for _, w := range slices.Clone(h.app.Driver().AllWindows()) {
			w.Close()
		}
		cancel()
		done := make(chan struct{})
		go func() { h.u.wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("background work did not stop")
		}
	})
	return h
}

// startTray starts the tray on the recording view.
func (h *harness) startTray() {
	h.u.tray.view = h.view
	h.u.tray.start()
	h.drain()
}

func (h *harness) enqueue(fn func()) {
	h.mu.Lock()
	h.queue = append(h.queue, fn)
	h.mu.Unlock()
}

// drain runs what the UI queued for the Fyne thread.
func (h *harness) drain() {
	for {
		h.mu.Lock()
		q := h.queue
		h.queue = nil
		h.mu.Unlock()
		if len(q) == 0 {
			return
		}
		for _, fn := range q {
			fn()
		}
	}
}

// menusBuilt drains the queue and counts the menus the tray was given.
func (h *harness) menusBuilt() int {
	h.drain()
	h.view.mu.Lock()
	defer h.view.mu.Unlock()
	return len(h.view.menus)
}

// waitFor drains the queue until cond holds, failing after a deadline.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	testenv.WaitFor(h.t, what, 10*time.Second, func() bool {
		h.drain()
		return cond()
	})
}

// windowOpen reports whether a window titled title is open.
func (h *harness) windowOpen(title string) bool {
	for _, w := range h.app.Driver().AllWindows() {
		if w.Title() == title {
			return true
		}
	}
	return false
}

// recApp records notifications and opened URLs.
type recApp struct {
	fyne.App
	mu    sync.Mutex
	notes []fyne.Notification
	urls  []string
	quits int
}

func (a *recApp) SendNotification(n *fyne.Notification) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.notes = append(a.notes, *n)
}

func (a *recApp) OpenURL(u *url.URL) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.urls = append(a.urls, u.String())
	return nil
}

func (a *recApp) Quit() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.quits++
}

func (a *recApp) notifications() []fyne.Notification {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.notes)
}

// recView records what the tray shows.
type recView struct {
	mu       sync.Mutex
	menus    []*fyne.Menu
	icons    []fyne.Resource
	tooltips []string
}

func (v *recView) SetSystemTrayMenu(m *fyne.Menu) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.menus = append(v.menus, m)
}

func (v *recView) SetSystemTrayIcon(r fyne.Resource) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.icons = append(v.icons, r)
}

func (v *recView) setTooltip(s string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.tooltips = append(v.tooltips, s)
}

func (v *recView) menu() *fyne.Menu {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.menus) == 0 {
		return nil
	}
	return v.menus[len(v.menus)-1]
}

// labels flattens a menu to its labels, submenus indented by "  ", with
// "(off)" after disabled items and "---" for separators.
func labels(m *fyne.Menu) []string {
	var out []string
	var walk func(m *fyne.Menu, indent string)
	walk = func(m *fyne.Menu, indent string) {
		for _, it := range m.Items {
			switch {
			case it.IsSeparator:
				out = append(out, indent+"---")
				continue
			case it.Disabled:
				out = append(out, indent+it.Label+" (off)")
			default:
				out = append(out, indent+it.Label)
			}
			if it.ChildMenu != nil {
				walk(it.ChildMenu, indent+"  ")
			}
		}
	}
	if m != nil {
		walk(m, "")
	}
	return out
}

// find returns the item at a path of labels.
func find(m *fyne.Menu, path ...string) *fyne.MenuItem {
	for i, label := range path {
		var found *fyne.MenuItem
		for _, it := range m.Items {
			if it.Label == label {
				found = it
			}
		}
		if found == nil || i == len(path)-1 {
			return found
		}
		if found.ChildMenu == nil {
			return nil
		}
		m = found.ChildMenu
	}
	return nil
}

// fakeWorkspaces is an in-memory Workspaces for what a real repository
// cannot easily do: fail on purpose.
type fakeWorkspaces struct {
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
	addErr    error
	// deleteFail, when set, makes the next delete fail at that step.
	deleteFail workspace.DeleteStep
	deletes    []workspace.DeleteOptions
	// existedBefore names workspaces whose branch CodeHydra did not create.
	existedBefore map[string]bool
	created       []workspace.CreateOptions
}

func newFake() *fakeWorkspaces {
	return &fakeWorkspaces{
		workspaces: map[string][]workspace.Workspace{},
		status:     map[string]workspace.Status{},
		changes:    map[string]workspace.Changes{},
		metadata:   map[string]map[string]string{},
		branches:   []string{"develop", "main"},
		base:       "main",
	}
}

// addWorkspace adds a project (if new) and a workspace in it.
func (f *fakeWorkspaces) addWorkspace(project, name string) workspace.Workspace {
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

func (f *fakeWorkspaces) Projects() []workspace.Project {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.projects)
}

func (f *fakeWorkspaces) Workspaces(p string) ([]workspace.Workspace, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.workspaces[p]), nil
}

func (f *fakeWorkspaces) Subscribe() (<-chan workspace.Event, func()) {
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
func (f *fakeWorkspaces) Publish(e workspace.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ch := range f.subs {
		ch <- e
	}
}

func (f *fakeWorkspaces) AddProject(_ context.Context, path string) (workspace.Project, error) {
	f.mu.Lock()
	err := f.addErr
	f.mu.Unlock()
	if err != nil {
		return workspace.Project{}, err
	}
	p := workspace.Project{Name: filepath.Base(path), Path: path}
	f.mu.Lock()
	f.projects = append(f.projects, p)
	f.mu.Unlock()
	f.Publish(workspace.Event{Kind: workspace.EventProjectAdded, ProjectPath: path})
	return p, nil
}

func (f *fakeWorkspaces) Create(_ context.Context, o workspace.CreateOptions) (workspace.Workspace, error) {
	f.mu.Lock()
	f.created = append(f.created, o)
	err := f.createErr
	f.mu.Unlock()
	if err != nil {
		return workspace.Workspace{}, err
	}
	ws := f.addWorkspace(filepath.Base(o.ProjectPath), o.Name)
	f.Publish(workspace.Event{Kind: workspace.EventWorkspaceAdded, ProjectPath: o.ProjectPath, Workspace: ws})
	return ws, nil
}

func (f *fakeWorkspaces) Delete(_ context.Context, path string, o workspace.DeleteOptions) error {
	f.mu.Lock()
	f.deletes = append(f.deletes, o)
	fail := f.deleteFail
	f.deleteFail = ""
	var ws workspace.Workspace
	for _, list := range f.workspaces {
		for _, w := range list {
			if w.Path == path {
				ws = w
			}
		}
	}
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

func (f *fakeWorkspaces) Status(_ context.Context, path string) (workspace.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status[path], nil
}

func (f *fakeWorkspaces) Changes(_ context.Context, path string) (workspace.Changes, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changes[path], nil
}

func (f *fakeWorkspaces) BranchCreated(_ context.Context, path string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.existedBefore[path], nil
}

func (f *fakeWorkspaces) Metadata(_ context.Context, path string) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.metadata[path]), nil
}

func (f *fakeWorkspaces) SetMetadata(_ context.Context, path, key string, value *string) error {
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

func (f *fakeWorkspaces) Branches(context.Context, string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.branches), nil
}

// ReusableBranches are the fake's branches but main, which the fake
// project's main checkout has checked out.
func (f *fakeWorkspaces) ReusableBranches(ctx context.Context, path string) ([]string, error) {
	all, err := f.Branches(ctx, path)
	return slices.DeleteFunc(all, func(b string) bool { return b == "main" }), err
}

func (f *fakeWorkspaces) DefaultBase(context.Context, string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.base, nil
}

// fakeAgents is an in-memory Agents.
type fakeAgents struct {
	mu       sync.Mutex
	status   map[string]workspace.AgentStatus
	restarts []string
	binary   string
	// def is the status of workspaces not set; NoAgent when zero.
	def workspace.AgentStatus
	// prompts are the first prompts queued, and their deliveries
	// (promptmenu_test.go).
	prompts map[string]queuedPrompt
}

func newFakeAgents() *fakeAgents {
	return &fakeAgents{status: map[string]workspace.AgentStatus{}}
}

func (a *fakeAgents) set(path string, st workspace.AgentStatus) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.status[path] = st
}

func (a *fakeAgents) AgentStatus(path string) workspace.AgentStatus {
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
func (a *fakeAgents) OpencodeServer(path string) (int, string, bool) {
	st := a.AgentStatus(path)
	return st.Port, fmt.Sprintf("pw-%d", st.Port), st.Port != 0
}

func (a *fakeAgents) Restart(path string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.restarts = append(a.restarts, path)
	return nil
}

func (a *fakeAgents) RestartAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.restarts = append(a.restarts, "all")
}

func (a *fakeAgents) FindBinary() (string, bool) { return a.binary, a.binary != "" }

func (a *fakeAgents) restarted() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.restarts)
}

// realManager is a loaded workspace.Manager over the given projects, with
// worktrees under a temp folder.
func realManager(t *testing.T, projects ...string) *workspace.Manager {
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

// question is the open confirmation titled title, read back from its
// window; nil when none is open.
func question(h *harness, title string) *confirmWindow {
	w, ok := h.u.windows["confirm:"+title]
	if !ok {
		return nil
	}
	q := &confirmWindow{win: w}
	for _, o := range test.LaidOutObjects(w.Content()) {
		switch o := o.(type) {
		case *widget.Button:
			if o.Importance == widget.DangerImportance {
				q.ok = o
			} else if o.Text == "Cancel" {
				q.cancel = o
			}
		case *widget.Label:
			if o.Wrapping == fyne.TextWrapWord {
				q.message = o
			}
		}
	}
	return q
}
