package app

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"fyne.io/fyne/v2"

	"codehydra/workspace"
)

// State is everything the tray menu shows. BuildMenu turns it into a menu;
// the tray rebuilds the whole menu whenever it changes.
type State struct {
	Projects []ProjectState
	// CanCopyMCPConfig enables "Copy MCP config".
	CanCopyMCPConfig bool
	// CanRestartAgents enables "Restart agent" (there is a supervisor).
	CanRestartAgents bool
	// Notice is a warning shown under the summary (the MCP port in use is
	// not the one set up); "" for none.
	Notice string
}

// ProjectState is a project and its workspaces, sorted.
type ProjectState struct {
	Project    workspace.Project
	Workspaces []WorkspaceState
	// Err explains why the workspaces could not be listed.
	Err string
}

// WorkspaceState is a workspace as the tray shows it.
type WorkspaceState struct {
	Workspace workspace.Workspace
	Agent     workspace.AgentStatus
	// Deleting is true from the first delete-progress event until the
	// workspace is gone or the delete failed.
	Deleting   bool
	DeleteStep workspace.DeleteStep
	// DeleteErr is the error of the last failed delete.
	DeleteErr string
	// CreatedBy is the path of the workspace whose agent created this
	// one, "" when none did.
	CreatedBy string
	// SetupFailed is why the workspace's setup failed ("" if it did not).
	SetupFailed string
	// Prompt is what became of its first prompt; zero when it has none.
	Prompt workspace.PromptDelivery
	// Base is the branch the workspace is compared with and lands in (its
	// metadata "base"); Ahead counts its commits that the base lacks, read
	// from the status cache for children only (ReadyForReview).
	Base  string
	Ahead int
	// Updating and CreatingPR are true while an update from the base, or
	// the push and pull request, that the tray started runs.
	Updating, CreatingPR bool
	// MCPServers are the user's MCP servers that the workspace's project
	// offers (enabled, and named by its projectSetup's mcpServers when it
	// has them), sorted; MCPOff those the user switched off for this
	// workspace (its metadata "mcpoff").
	MCPServers, MCPOff []string
	// Answering are the IDs of the agent's pending requests whose answer
	// the tray sent and the agent has not yet taken.
	Answering []string
	// Ports is the workspace's port block, zero when it has none.
	Ports workspace.PortBlock
}

// Phase is what a workspace is doing, as the menu marks it.
type Phase string

// The phases of a workspace, and their marks in the menu.
const (
	PhaseIdle         Phase = "idle"
	PhaseBusy         Phase = "busy"
	PhaseRetrying     Phase = "retrying"
	PhaseNeedsInput   Phase = "needs input"
	PhaseFailed       Phase = "failed"
	PhaseStarting     Phase = "starting"
	PhaseDeleting     Phase = "deleting"
	PhaseDeleteFailed Phase = "delete failed"
	PhaseNoAgent      Phase = "no agent"
	PhaseHibernated   Phase = "hibernated"
)

// Phases lists every phase, in the order the README's table of marks
// explains them.
func Phases() []Phase {
	return []Phase{PhaseIdle, PhaseBusy, PhaseRetrying, PhaseNeedsInput, PhaseStarting,
		PhaseFailed, PhaseDeleting, PhaseDeleteFailed, PhaseNoAgent, PhaseHibernated}
}

// Mark is the sign a phase shows before a workspace's name.
func (p Phase) Mark() string {
	switch p {
	case PhaseBusy:
		return "●"
	case PhaseRetrying:
		return "↻"
	case PhaseIdle:
		return "○"
	case PhaseNeedsInput:
		return "?"
	case PhaseFailed, PhaseDeleteFailed:
		return "✕"
	case PhaseDeleting:
		return "…"
	case PhaseStarting:
		return "◌"
	case PhaseHibernated:
		return "☾"
	default:
		return "–"
	}
}

// Phase is what the workspace is doing; a delete outranks the agent, and a
// failure or a question outranks work. A turn whose model request failed
// and waits to be retried is no longer plain work: it shows as retrying.
func (w WorkspaceState) Phase() Phase {
	a := w.Agent
	switch {
	case w.Deleting:
		return PhaseDeleting
	case w.DeleteErr != "":
		return PhaseDeleteFailed
	case a.State == workspace.AgentStateFailed || a.State == workspace.AgentStateNotFound:
		return PhaseFailed
	case a.State == workspace.AgentStateHibernated:
		return PhaseHibernated
	case a.NeedsInput > 0 && !heldForParent(a):
		return PhaseNeedsInput
	case a.State == workspace.AgentStateStarting:
		return PhaseStarting
	case a.Retry.Sessions > 0:
		return PhaseRetrying
	case a.Type == workspace.AgentBusy || a.Type == workspace.AgentMixed:
		return PhaseBusy
	case a.Type == workspace.AgentIdle || a.State == workspace.AgentStateReady:
		return PhaseIdle
	default:
		return PhaseNoAgent
	}
}

// Unconfined is why the workspace's running agent is not confined by the
// kernel to its workspace ("not confined: …"); "" when it is, or when
// no agent runs.
func (w WorkspaceState) Unconfined() string {
	sb := w.Agent.Sandbox
	switch w.Phase() {
	case PhaseIdle, PhaseBusy, PhaseRetrying, PhaseNeedsInput, PhaseStarting:
		if !sb.Enforced {
			return sb.Reason
		}
	}
	return ""
}

// Port is the workspace agent's port, 0 when no agent server is ready.
func (w WorkspaceState) Port() int {
	if w.Deleting {
		return 0
	}
	return w.Agent.Port
}

// The fixed labels of the tray menu. They are stable: tests drive the tray
// over D-Bus by these strings.
const (
	LabelOpenAgent    = "Open agent in browser"
	LabelCopyPath     = "Copy path"
	LabelCopyAttach   = "Copy attach command"
	LabelRestartAgent = "Restart agent"
	LabelHibernate    = "Hibernate"
	LabelWake         = "Wake"
	LabelDelete       = "Delete…"
	LabelNewWorkspace = "New workspace…"
	LabelAddProject   = "Add project…"
	LabelSettings     = "Settings…"
	LabelQuit         = "Quit"
	LabelNoProjects   = "No projects yet: use Add project…"
	LabelNoWorkspaces = "No workspaces: use New workspace…"
)

// WorkspaceLabel is the menu label of a workspace: its mark, its name and
// its phase in words, e.g. "● feature/login (busy)", then "ready for
// review" for a child with work to look at (ReadyForReview), and
// "unconfined" when its agent runs outside the kernel sandbox: "○ fix
// (idle, ready for review, unconfined)".
func WorkspaceLabel(w WorkspaceState) string {
	p := w.Phase()
	words := []string{string(p)}
	if w.ReadyForReview() {
		words = append(words, LabelReadyForReview)
	}
	if w.Unconfined() != "" {
		words = append(words, LabelUnconfined)
	}
	return fmt.Sprintf("%s %s (%s)", p.Mark(), w.Workspace.Name, strings.Join(words, ", "))
}

// LabelUnconfined marks a workspace whose agent is not confined.
const LabelUnconfined = "unconfined"

// ProjectLabel is the header of a project's workspaces (its submenu holds
// the project's actions).
func ProjectLabel(p ProjectState) string {
	name := p.Project.Name
	if name == "" {
		name = baseName(p.Project.Path)
	}
	if p.Err != "" {
		return name + " (cannot list workspaces)"
	}
	return name
}

// AgentURL is the web UI of the agent server on port that demands
// password, opened in one click. The credentials go in the URL's user
// part: the browser answers the server's challenge with them and keeps
// them for the page's scripts, styles and API calls. opencode's
// ?auth_token= parameter would not do: it opens only the page itself,
// and opencode 1.18 then challenges the browser for every script, which
// asks the user for a password they do not know.
func AgentURL(port int, password string) string {
	u := url.URL{Scheme: "http", User: url.UserPassword("opencode", password), Host: fmt.Sprintf("127.0.0.1:%d", port), Path: "/"}
	return u.String()
}

// AttachCommand attaches a terminal to the agent server on port that
// demands password, as pasted into a POSIX shell. The password goes in the
// environment of opencode attach, which opencode reads it from, not on its
// command line: any local user can read a process's command line, only
// its owner its environment. The user name is set too, since opencode
// would otherwise take OPENCODE_SERVER_USERNAME from the user's shell.
func AttachCommand(port int, password string) string {
	return fmt.Sprintf("OPENCODE_SERVER_USERNAME=opencode OPENCODE_SERVER_PASSWORD=%s opencode attach http://127.0.0.1:%d", password, port)
}

// Actions are what the menu's items do. BuildMenu binds them to the items'
// workspaces; a nil action leaves its item disabled.
type Actions struct {
	// OpenAgent and CopyAttach act on the agent server of the workspace
	// at path; they ask for its password only when clicked.
	OpenAgent    func(path string)
	CopyAttach   func(path string)
	CopyText     func(text string)
	RestartAgent func(path string)
	// Hibernate stops the workspace's agent until something needs it;
	// Wake starts it again.
	Hibernate, Wake func(path string)
	Delete          func(ws workspace.Workspace)
	NewWorkspace    func()
	AddProject      func()
	Settings        func()
	// CopyMCPConfig copies a config for the user's own client;
	// CopyWorkspaceMCPConfig one that acts on ws only.
	CopyMCPConfig          func(client string)
	CopyWorkspaceMCPConfig func(client string, ws workspace.Workspace)
	Quit                   func()
	// SwitchMCPServer switches the MCP server named server on or off for
	// ws's agents.
	SwitchMCPServer func(ws workspace.Workspace, server string, on bool)
	FolderActions
	PrepareActions
	LandActions
	RequestActions
}

// BuildMenu is the tray menu for s: a summary line, each project with its
// workspaces (each a submenu of actions), then the app's actions. It has no
// side effects; items are disabled when their action is impossible.
func BuildMenu(s State, a Actions) *fyne.Menu {
	var items []*fyne.MenuItem
	add := func(it ...*fyne.MenuItem) { items = append(items, it...) }

	add(disabled(Summary(s)))
	if s.Notice != "" {
		add(disabled("⚠ " + s.Notice))
	}
	add(fyne.NewMenuItemSeparator())
	if len(s.Projects) == 0 {
		add(disabled(LabelNoProjects))
	}
	for _, p := range s.Projects {
		add(projectItem(p, a))
		if len(p.Workspaces) == 0 && p.Err == "" {
			add(disabled("    " + LabelNoWorkspaces))
		}
		for _, w := range p.Workspaces {
			add(workspaceItem(s, w, a))
		}
		add(fyne.NewMenuItemSeparator())
	}
	if len(s.Projects) == 0 {
		add(fyne.NewMenuItemSeparator())
	}

	add(
		actionItem(LabelNewWorkspace, when(len(s.Projects) > 0, a.NewWorkspace)),
		actionItem(LabelAddProject, a.AddProject),
		actionItem(LabelSettings, a.Settings),
	)

	add(userConfigItem(s, a), fyne.NewMenuItemSeparator())

	quit := actionItem(LabelQuit, a.Quit)
	// Fyne appends its own Quit unless the last item is marked as one.
	quit.IsQuit = true
	add(quit)
	return fyne.NewMenu("CodeHydra", items...)
}

// workspaceItem is a workspace's entry with its submenu of actions.
func workspaceItem(s State, w WorkspaceState, a Actions) *fyne.MenuItem {
	ws, port := w.Workspace, w.Port()
	var open, copyPath, attach, restart, del func()
	// A hibernated agent is woken by these two.
	hibernated := w.Phase() == PhaseHibernated
	if a.OpenAgent != nil && (port != 0 || hibernated) {
		open = func() { a.OpenAgent(ws.Path) }
	}
	if a.CopyAttach != nil && (port != 0 || hibernated) {
		attach = func() { a.CopyAttach(ws.Path) }
	}
	if a.CopyText != nil {
		copyPath = func() { a.CopyText(ws.Path) }
	}
	// An agent the supervisor never started (no state) has nothing to
	// restart.
	if a.RestartAgent != nil && s.CanRestartAgents && !w.Deleting && w.Agent.State != workspace.AgentStateNone {
		restart = func() { a.RestartAgent(ws.Path) }
	}
	if a.Delete != nil {
		del = func() { a.Delete(ws) }
	}
	setup := setupItems(w, a)
	items := append(requestItems(w, a.RequestActions), createdByItems(s, w)...)
	items = append(items, usageItems(w)...)
	items = append(items, setup...)
	if why := AgentTrouble(w.Agent); why != "" && len(setup) == 0 {
		items = append(items, disabled("⚠ "+why), fyne.NewMenuItemSeparator())
	}
	if why := w.Unconfined(); why != "" {
		items = append(items, disabled("⚠ "+oneMenuLine(why)), fyne.NewMenuItemSeparator())
	}
	items = append(items, promptItems(w)...)
	items = append(items, portsItems(w)...)
	it := fyne.NewMenuItem(WorkspaceLabel(w), nil)
	items = append(items,
		actionItem(LabelOpenAgent, open),
		actionItem(LabelCopyPath, copyPath),
		actionItem(LabelCopyAttach, attach),
		workspaceConfigItem(s, w, a))
	if it := mcpServersItem(w, a); it != nil {
		items = append(items, it)
	}
	items = append(items, fyne.NewMenuItemSeparator())
	items = append(items, folderItems(w, a)...)
	items = append(items, fyne.NewMenuItemSeparator())
	items = append(items, landItems(w, a)...)
	it.ChildMenu = fyne.NewMenu(ws.Name, append(items,
		hibernateItem(s, w, a),
		actionItem(LabelRestartAgent, restart),
		actionItem(LabelDelete, del),
	)...)
	return it
}

// hibernateItem is *Wake* for a hibernated agent, else *Hibernate*, on
// while there is an agent to hibernate.
func hibernateItem(s State, w WorkspaceState, a Actions) *fyne.MenuItem {
	path := w.Workspace.Path
	if w.Phase() == PhaseHibernated {
		return actionItem(LabelWake, when(a.Wake != nil, func() { a.Wake(path) }))
	}
	switch w.Agent.State {
	case workspace.AgentStateNone, workspace.AgentStateStopped, workspace.AgentStateNotFound:
		return disabled(LabelHibernate)
	}
	return actionItem(LabelHibernate, when(a.Hibernate != nil && s.CanRestartAgents && !w.Deleting, func() { a.Hibernate(path) }))
}

// maxTroubleLen keeps the reason one menu line wide.
const maxTroubleLen = 90

// AgentTrouble is why an agent that failed or was not found does not run
// (the supervisor's detail), or why its turn stalls (opencode's reason for
// retrying a model request, and the attempt), cut to one menu line; "" for
// any other state.
func AgentTrouble(st workspace.AgentStatus) string {
	var why string
	switch {
	case st.State == workspace.AgentStateFailed || st.State == workspace.AgentStateNotFound:
		why = st.Detail
	case st.State == workspace.AgentStateReady && st.Retry.Sessions > 0:
		why = fmt.Sprintf("retrying (attempt %d): %s", st.Retry.Attempt, st.Retry.Message)
	default:
		return ""
	}
	return oneMenuLine(why)
}

// actionItem is an item that runs fn, disabled when fn is nil.
func actionItem(label string, fn func()) *fyne.MenuItem {
	if fn == nil {
		return disabled(label)
	}
	return fyne.NewMenuItem(label, fn)
}

// when is fn if ok, else nil (a disabled item).
func when(ok bool, fn func()) func() {
	if !ok {
		return nil
	}
	return fn
}

func disabled(label string) *fyne.MenuItem {
	it := fyne.NewMenuItem(label, nil)
	it.Disabled = true
	return it
}

// Counts are the workspaces in each phase.
type Counts map[Phase]int

// CountPhases counts the workspaces of s by phase.
func CountPhases(s State) (total int, c Counts) {
	c = Counts{}
	for _, p := range s.Projects {
		for _, w := range p.Workspaces {
			total++
			c[w.Phase()]++
		}
	}
	return total, c
}

// The overall states of the tray icon (assets.TrayIcon's argument).
const (
	TrayIdle   = "idle"
	TrayBusy   = "busy"
	TrayInput  = "input"
	TrayFailed = "failed"
)

// Overall is the tray icon's state: failed > input > busy > idle. An agent
// whose model cannot be reached shows the input icon: like a question, it
// stalls until the user acts (or the model comes back), and unlike a
// failure the agent itself runs.
func Overall(s State) string {
	_, c := CountPhases(s)
	switch {
	case c[PhaseFailed]+c[PhaseDeleteFailed] > 0:
		return TrayFailed
	case c[PhaseNeedsInput]+c[PhaseRetrying] > 0:
		return TrayInput
	case c[PhaseBusy] > 0:
		return TrayBusy
	default:
		return TrayIdle
	}
}

// Summary is the first line of the menu and the tray's tooltip, e.g.
// "CodeHydra: 3 workspaces, 1 busy, 1 needs input, today 13.5k tokens,
// $0.42".
func Summary(s State) string {
	total, c := CountPhases(s)
	switch {
	case len(s.Projects) == 0:
		return "CodeHydra: no projects"
	case total == 0:
		return "CodeHydra: no workspaces"
	}
	parts := []string{plural(total, "workspace")}
	var counted []string
	for _, p := range []Phase{PhaseBusy, PhaseRetrying, PhaseNeedsInput, PhaseFailed, PhaseDeleteFailed, PhaseStarting, PhaseDeleting, PhaseHibernated} {
		if n := c[p]; n > 0 {
			counted = append(counted, fmt.Sprintf("%d %s", n, p))
		}
	}
	if n := c[PhaseNoAgent]; n > 0 {
		counted = append(counted, fmt.Sprintf("%d without agent", n))
	}
	if len(counted) == 0 && c[PhaseIdle] == total {
		counted = append(counted, "all idle")
	}
	if n := countUnconfined(s); n > 0 {
		counted = append(counted, fmt.Sprintf("%d %s", n, LabelUnconfined))
	}
	if day := daySummary(s); day != "" {
		counted = append(counted, day)
	}
	return "CodeHydra: " + strings.Join(append(parts, counted...), ", ")
}

// countUnconfined counts the workspaces whose running agent is not
// confined.
func countUnconfined(s State) int {
	n := 0
	for _, p := range s.Projects {
		for _, w := range p.Workspaces {
			if w.Unconfined() != "" {
				n++
			}
		}
	}
	return n
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// baseName is the last element of a path, whatever its separators.
func baseName(p string) string {
	return filepath.Base(filepath.FromSlash(p))
}
