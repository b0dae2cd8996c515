package app

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2"

	"codehydra/app/internal/uitest"
	"codehydra/workspace"
)

func wsState(name string, a workspace.AgentStatus) WorkspaceState {
	return WorkspaceState{
		Workspace: workspace.Workspace{Name: name, Branch: name, Path: "/wt/" + name, ProjectPath: "/src/proj"},
		Agent:     a,
	}
}

func oneProject(ws ...WorkspaceState) State {
	return State{
		Projects:         []ProjectState{{Project: workspace.Project{Name: "proj", Path: "/src/proj"}, Workspaces: ws}},
		CanCopyMCPConfig: true,
		CanRestartAgents: true,
	}
}

// allActions are actions that record what they were called with.
func allActions(calls *[]string) Actions {
	rec := func(s string) { *calls = append(*calls, s) }
	return Actions{
		OpenAgent:     func(path string) { rec("open " + path) },
		CopyAttach:    func(path string) { rec("attach " + path) },
		CopyText:      func(text string) { rec("copy " + text) },
		RestartAgent:  func(path string) { rec("restart " + path) },
		Delete:        func(ws workspace.Workspace) { rec("delete " + ws.Path) },
		NewWorkspace:  func() { rec("new workspace") },
		AddProject:    func() { rec("add project") },
		Settings:      func() { rec("settings") },
		CopyMCPConfig: func(client string) { rec("mcp " + client) },
		CopyWorkspaceMCPConfig: func(client string, ws workspace.Workspace) {
			rec("mcp " + client + " " + ws.Path)
		},
		Quit: func() { rec("quit") },
	}
}

func TestBuildMenuShowsEachWorkspacePhaseWithItsMarkAndActions(t *testing.T) {
	deleting := wsState("going", uitest.AgentIdle)
	deleting.Deleting, deleting.DeleteStep = true, workspace.StepRemoveWorktree
	deleteFailed := wsState("stuck", uitest.AgentIdle)
	deleteFailed.DeleteErr = "device busy"

	tests := []struct {
		name  string
		ws    WorkspaceState
		label string
		icon  string
		// enabled are the submenu items that can be used.
		enabled []string
	}{
		{"idle", wsState("a", uitest.AgentIdle), "○ a (idle)", TrayIdle,
			[]string{LabelOpenAgent, LabelCopyPath, LabelCopyAttach, LabelCopyWorkspaceMCPConfig, LabelRestartAgent, LabelDelete}},
		{"ready without sessions is idle", wsState("a", uitest.AgentReady), "○ a (idle)", TrayIdle,
			[]string{LabelOpenAgent, LabelCopyPath, LabelCopyAttach, LabelCopyWorkspaceMCPConfig, LabelRestartAgent, LabelDelete}},
		{"busy", wsState("b", uitest.AgentBusy), "● b (busy)", TrayBusy,
			[]string{LabelOpenAgent, LabelCopyPath, LabelCopyAttach, LabelCopyWorkspaceMCPConfig, LabelRestartAgent, LabelDelete}},
		{"mixed is busy", wsState("b", uitest.AgentMixed), "● b (busy)", TrayBusy,
			[]string{LabelOpenAgent, LabelCopyPath, LabelCopyAttach, LabelCopyWorkspaceMCPConfig, LabelRestartAgent, LabelDelete}},
		{"retrying is not busy", wsState("r", uitest.AgentRetrying), "↻ r (retrying)", TrayInput,
			[]string{LabelOpenAgent, LabelCopyPath, LabelCopyAttach, LabelCopyWorkspaceMCPConfig, LabelRestartAgent, LabelDelete}},
		{"needs input", wsState("c", uitest.AgentInput), "? c (needs input)", TrayInput,
			[]string{LabelOpenAgent, LabelCopyPath, LabelCopyAttach, LabelCopyWorkspaceMCPConfig, LabelRestartAgent, LabelDelete}},
		{"failed has no port", wsState("d", uitest.AgentFailed), "✕ d (failed)", TrayFailed,
			[]string{LabelCopyPath, LabelCopyWorkspaceMCPConfig, LabelRestartAgent, LabelDelete}},
		{"opencode not found is failed", wsState("d", uitest.AgentNotFound), "✕ d (failed)", TrayFailed,
			[]string{LabelCopyPath, LabelCopyWorkspaceMCPConfig, LabelRestartAgent, LabelDelete}},
		{"starting has no port yet", wsState("e", uitest.AgentStarting), "◌ e (starting)", TrayIdle,
			[]string{LabelCopyPath, LabelCopyWorkspaceMCPConfig, LabelRestartAgent, LabelDelete}},
		{"no agent has no port and nothing to restart", wsState("f", workspace.NoAgent), "– f (no agent)", TrayIdle,
			[]string{LabelCopyPath, LabelCopyWorkspaceMCPConfig, LabelDelete}},
		{"a stopped agent can be restarted", wsState("f", workspace.AgentStatus{Type: workspace.AgentNone, State: workspace.AgentStateStopped}), "– f (no agent)", TrayIdle,
			[]string{LabelCopyPath, LabelCopyWorkspaceMCPConfig, LabelRestartAgent, LabelDelete}},
		{"deleting cannot be opened or restarted", deleting, "… going (deleting)", TrayIdle,
			[]string{LabelCopyPath, LabelDelete}},
		{"a failed delete can be retried", deleteFailed, "✕ stuck (delete failed)", TrayFailed,
			[]string{LabelOpenAgent, LabelCopyPath, LabelCopyAttach, LabelCopyWorkspaceMCPConfig, LabelRestartAgent, LabelDelete}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := oneProject(tt.ws)
			m := BuildMenu(s, allActions(new([]string)))
			it := find(m, tt.label)
			if it == nil {
				t.Fatalf("no item %q in\n%s", tt.label, strings.Join(labels(m), "\n"))
			}
			var enabled []string
			for _, sub := range it.ChildMenu.Items {
				if !sub.IsSeparator && !sub.Disabled {
					enabled = append(enabled, sub.Label)
				}
			}
			if !slices.Equal(enabled, tt.enabled) {
				t.Errorf("enabled items = %q, want %q", enabled, tt.enabled)
			}
			if got := Overall(s); got != tt.icon {
				t.Errorf("Overall = %q, want %q", got, tt.icon)
			}
		})
	}
}

func TestBuildMenuWithoutProjectsOffersAddProjectOnly(t *testing.T) {
	m := BuildMenu(State{CanCopyMCPConfig: true, CanRestartAgents: true}, allActions(new([]string)))
	want := []string{
		"CodeHydra: no projects (off)",
		"---",
		LabelNoProjects + " (off)",
		"---",
		LabelNewWorkspace + " (off)",
		LabelAddProject,
		LabelSettings,
		LabelCopyMCPConfig,
		"  " + LabelUserConfigScope + " (off)",
		"  ---",
		"  OpenCode",
		"  Claude Code",
		"  Claude Desktop",
		"---",
		LabelQuit,
	}
	if got := labels(m); !slices.Equal(got, want) {
		t.Errorf("menu =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := Overall(State{}); got != TrayIdle {
		t.Errorf("Overall = %q, want idle", got)
	}
}

func TestBuildMenuListsProjectsWithTheirWorkspacesInOrder(t *testing.T) {
	s := State{
		Projects: []ProjectState{
			{Project: workspace.Project{Name: "alpha", Path: "/src/alpha"}, Workspaces: []WorkspaceState{
				wsState("feature/login", uitest.AgentBusy), wsState("fix", uitest.AgentInput),
			}},
			{Project: workspace.Project{Name: "beta", Path: "/src/beta"}},
			{Project: workspace.Project{Name: "gamma", Path: "/src/gamma"}, Err: "cannot list the worktrees"},
		},
		CanCopyMCPConfig: true,
		CanRestartAgents: true,
	}
	want := []string{
		"CodeHydra: 2 workspaces, 1 busy, 1 needs input (off)",
		"---",
		"alpha",
		"  " + LabelNewWorkspaceHere,
		"  " + LabelOpenFolder,
		"  ---",
		"  " + LabelRemoveProject,
		"● feature/login (busy)",
		"  " + LabelOpenAgent,
		"  " + LabelCopyPath,
		"  " + LabelCopyAttach,
		"  " + LabelCopyWorkspaceMCPConfig,
		"    " + LabelWorkspaceConfigScope + " (off)",
		"    ---",
		"    OpenCode",
		"    Claude Code",
		"    Claude Desktop",
		"  ---",
		"  " + LabelOpenFolder,
		"  " + LabelOpenTerminal,
		"  " + LabelOpenEditor,
		"  ---",
		"  " + LabelHibernate + " (off)",
		"  " + LabelRestartAgent,
		"  " + LabelDelete,
		"? fix (needs input)",
		"  " + LabelOpenAgent,
		"  " + LabelCopyPath,
		"  " + LabelCopyAttach,
		"  " + LabelCopyWorkspaceMCPConfig,
		"    " + LabelWorkspaceConfigScope + " (off)",
		"    ---",
		"    OpenCode",
		"    Claude Code",
		"    Claude Desktop",
		"  ---",
		"  " + LabelOpenFolder,
		"  " + LabelOpenTerminal,
		"  " + LabelOpenEditor,
		"  ---",
		"  " + LabelHibernate + " (off)",
		"  " + LabelRestartAgent,
		"  " + LabelDelete,
		"---",
		"beta",
		"  " + LabelNewWorkspaceHere,
		"  " + LabelOpenFolder,
		"  ---",
		"  " + LabelRemoveProject,
		"    " + LabelNoWorkspaces + " (off)",
		"---",
		"gamma (cannot list workspaces)",
		"  " + LabelNewWorkspaceHere + " (off)",
		"  " + LabelOpenFolder,
		"  ---",
		"  " + LabelRemoveProject,
		"---",
		LabelNewWorkspace,
		LabelAddProject,
		LabelSettings,
		LabelCopyMCPConfig,
		"  " + LabelUserConfigScope + " (off)",
		"  ---",
		"  OpenCode",
		"  Claude Code",
		"  Claude Desktop",
		"---",
		LabelQuit,
	}
	a := allActions(new([]string))
	a.FolderActions = folderActionsRec(new([]string))
	if got := labels(BuildMenu(s, a)); !slices.Equal(got, want) {
		t.Errorf("menu =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := Overall(s); got != TrayInput {
		t.Errorf("Overall = %q, want input (input outranks busy)", got)
	}
}

func TestBuildMenuItemsCallTheirActionsWithTheirWorkspace(t *testing.T) {
	var calls []string
	s := oneProject(wsState("a", uitest.AgentIdle))
	m := BuildMenu(s, allActions(&calls))
	ws := "○ a (idle)"
	for _, path := range [][]string{
		{ws, LabelOpenAgent},
		{ws, LabelCopyPath},
		{ws, LabelCopyAttach},
		{ws, LabelCopyWorkspaceMCPConfig, "Claude Code"},
		{ws, LabelRestartAgent},
		{ws, LabelDelete},
		{LabelNewWorkspace},
		{LabelAddProject},
		{LabelSettings},
		{LabelCopyMCPConfig, "OpenCode"},
		{LabelCopyMCPConfig, "Claude Code"},
		{LabelCopyMCPConfig, "Claude Desktop"},
		{LabelQuit},
	} {
		it := find(m, path...)
		if it == nil || it.Action == nil {
			t.Fatalf("no action at %q", path)
		}
		it.Action()
	}
	want := []string{
		"open /wt/a",
		"copy /wt/a",
		"attach /wt/a",
		"mcp claude-code /wt/a",
		"restart /wt/a",
		"delete /wt/a",
		"new workspace",
		"add project",
		"settings",
		"mcp opencode",
		"mcp claude-code",
		"mcp claude-desktop",
		"quit",
	}
	if !slices.Equal(calls, want) {
		t.Errorf("calls =\n%s\nwant\n%s", strings.Join(calls, "\n"), strings.Join(want, "\n"))
	}
	if q := m.Items[len(m.Items)-1]; !q.IsQuit {
		t.Error("the last item is not marked IsQuit, so Fyne would add a second Quit")
	}
}

func TestBuildMenuDisablesWhatTheAppCannotDo(t *testing.T) {
	s := oneProject(wsState("a", uitest.AgentIdle))
	s.CanCopyMCPConfig, s.CanRestartAgents = false, false
	m := BuildMenu(s, allActions(new([]string)))
	for _, path := range [][]string{
		{"○ a (idle)", LabelRestartAgent},
		{LabelCopyMCPConfig},
		{LabelCopyMCPConfig, "OpenCode"},
		{"○ a (idle)", LabelCopyWorkspaceMCPConfig},
		{"○ a (idle)", LabelCopyWorkspaceMCPConfig, "Claude Code"},
	} {
		if it := find(m, path...); it == nil || !it.Disabled {
			t.Errorf("%q is not disabled", path)
		}
	}
	// Without actions nothing is clickable, but the structure stays.
	bare := BuildMenu(oneProject(wsState("a", uitest.AgentIdle)), Actions{})
	var walk func(*fyne.Menu)
	walk = func(m *fyne.Menu) {
		for _, it := range m.Items {
			if !it.IsSeparator && it.ChildMenu == nil && (!it.Disabled || it.Action != nil) {
				t.Errorf("item %q is enabled without an action", it.Label)
			}
			if it.ChildMenu != nil {
				walk(it.ChildMenu)
			}
		}
	}
	walk(bare)
}

func TestOverallRanksFailedAboveInputAboveBusy(t *testing.T) {
	tests := []struct {
		name string
		ws   []WorkspaceState
		want string
	}{
		{"all idle", []WorkspaceState{wsState("a", uitest.AgentIdle), wsState("b", uitest.AgentIdle)}, TrayIdle},
		{"some busy", []WorkspaceState{wsState("a", uitest.AgentIdle), wsState("b", uitest.AgentBusy)}, TrayBusy},
		{"input over busy", []WorkspaceState{wsState("a", uitest.AgentBusy), wsState("b", uitest.AgentInput)}, TrayInput},
		{"failed over input", []WorkspaceState{wsState("a", uitest.AgentFailed), wsState("b", uitest.AgentInput), wsState("c", uitest.AgentBusy)}, TrayFailed},
		{"starting is not busy", []WorkspaceState{wsState("a", uitest.AgentStarting)}, TrayIdle},
		{"retrying over busy", []WorkspaceState{wsState("a", uitest.AgentBusy), wsState("b", uitest.AgentRetrying)}, TrayInput},
		{"failed over retrying", []WorkspaceState{wsState("a", uitest.AgentRetrying), wsState("b", uitest.AgentFailed)}, TrayFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Overall(oneProject(tt.ws...)); got != tt.want {
				t.Errorf("Overall = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSummaryCountsWorkspacesByPhase(t *testing.T) {
	tests := []struct {
		name string
		s    State
		want string
	}{
		{"no projects", State{}, "CodeHydra: no projects"},
		{"no workspaces", oneProject(), "CodeHydra: no workspaces"},
		{"all idle", oneProject(wsState("a", uitest.AgentIdle)), "CodeHydra: 1 workspace, all idle"},
		{"mixed", oneProject(wsState("a", uitest.AgentBusy), wsState("b", uitest.AgentBusy), wsState("c", uitest.AgentInput), wsState("d", uitest.AgentFailed), wsState("e", uitest.AgentStarting), wsState("f", uitest.AgentIdle)),
			"CodeHydra: 6 workspaces, 2 busy, 1 needs input, 1 failed, 1 starting"},
		{"retrying apart from busy", oneProject(wsState("a", uitest.AgentBusy), wsState("b", uitest.AgentRetrying)),
			"CodeHydra: 2 workspaces, 1 busy, 1 retrying"},
		{"without agents", oneProject(wsState("a", workspace.NoAgent), wsState("b", uitest.AgentIdle)),
			"CodeHydra: 2 workspaces, 1 without agent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Summary(tt.s); got != tt.want {
				t.Errorf("Summary = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAgentURLAndAttachCommandCarryTheServerPassword(t *testing.T) {
	const password = "0123abcd"
	if got, want := AgentURL(4101, password), "http://opencode:0123abcd@127.0.0.1:4101/"; got != want {
		t.Errorf("AgentURL = %q, want %q", got, want)
	}
	u, err := url.Parse(AgentURL(4101, password))
	if err != nil {
		t.Fatal(err)
	}
	if pw, _ := u.User.Password(); u.User.Username() != "opencode" || pw != password || u.Host != "127.0.0.1:4101" {
		t.Errorf("AgentURL parses as user %q password %q host %q", u.User.Username(), pw, u.Host)
	}
	// As pasted into a shell: opencode attach <url> with flags that need
	// no quoting.
	got := strings.Fields(AttachCommand(4101, password))
	// The password is in the command's environment, never in its argv,
	// which every local user can read.
	want := []string{"OPENCODE_SERVER_USERNAME=opencode", "OPENCODE_SERVER_PASSWORD=" + password, "opencode", "attach", "http://127.0.0.1:4101"}
	if !slices.Equal(got, want) {
		t.Errorf("AttachCommand = %q, want %q", got, want)
	}
}

func TestAFailedAgentsReasonIsTheFirstLineOfItsSubmenu(t *testing.T) {
	long := workspace.AgentStatus{Type: workspace.AgentNone, State: workspace.AgentStateFailed,
		Detail: "not started: 20 agents run already (maxAgents in the settings);\nit starts when one of them stops, " + strings.Repeat("x", 100)}
	for _, tc := range []struct {
		name string
		st   workspace.AgentStatus
		want string // "" for no reason line
	}{
		{"failed", uitest.AgentFailed, "⚠ exited with status 1"},
		{"not found", uitest.AgentNotFound, "⚠ opencode not found"},
		{"a long reason, cut to one line", long, "⚠ not started: 20 agents run already (maxAgents in the settings); it starts when one of the…"},
		{"idle", uitest.AgentIdle, ""},
		{"starting", uitest.AgentStarting, ""},
		{"retrying, with opencode's reason and attempt", uitest.AgentRetrying, "⚠ retrying (attempt 3): Cannot connect to API"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := State{Projects: []ProjectState{{Project: workspace.Project{Name: "proj", Path: "/src/proj"}, Workspaces: []WorkspaceState{wsState("a", tc.st)}}}}
			m := BuildMenu(s, Actions{})
			var sub *fyne.Menu
			for _, it := range m.Items {
				if it.ChildMenu != nil && it.ChildMenu.Label == "a" {
					sub = it.ChildMenu
				}
			}
			if sub == nil {
				t.Fatalf("no submenu for a in %q", labels(m))
			}
			first := sub.Items[0]
			if tc.want == "" {
				if strings.HasPrefix(first.Label, "⚠") {
					t.Errorf("a reason line %q for an agent in state %s", first.Label, tc.st.State)
				}
				return
			}
			if first.Label != tc.want || !first.Disabled || !sub.Items[1].IsSeparator {
				t.Errorf("first item %q (disabled %v), want the disabled line %q then a separator", first.Label, first.Disabled, tc.want)
			}
		})
	}
}
