package app

import (
	"context"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"codehydra/app/internal/uitest"
	"codehydra/app/window"
	"codehydra/internal/settings"
	"codehydra/internal/testenv"
	"codehydra/workspace"
)

func TestTrayRebuildsTheMenuFromManagerEvents(t *testing.T) {
	f, ws, agents := uitest.OneWorkspace(uitest.AgentIdle)
	h := newHarness(t, Deps{Workspaces: f, Agents: agents, MCPConfig: func(string, string) (string, error) { return "{}", nil }})
	h.startTray()

	hasItem := func(label string) func() bool {
		return func() bool { return find(h.view.menu(), label) != nil }
	}
	h.waitFor("the idle workspace", hasItem("○ feat (idle)"))
	if got := h.view.tooltips[len(h.view.tooltips)-1]; got != "CodeHydra: 1 workspace, all idle" {
		t.Errorf("tooltip = %q", got)
	}

	agents.Set(ws.Path, uitest.AgentBusy)
	f.Publish(workspace.Event{Kind: workspace.EventAgentChanged, Workspace: ws})
	h.waitFor("the busy workspace", hasItem("● feat (busy)"))

	created, err := f.Create(h.tray.ctx, workspace.CreateOptions{ProjectPath: "/src/proj", Name: "second"})
	if err != nil {
		t.Fatal(err)
	}
	h.waitFor("the created workspace", hasItem("– second (no agent)"))
	agents.Set(created.Path, uitest.AgentStarting)
	f.Publish(workspace.Event{Kind: workspace.EventAgentChanged, Workspace: created})
	h.waitFor("its agent starting", hasItem("◌ second (starting)"))

	f.Publish(workspace.Event{Kind: workspace.EventDeleteProgress, Workspace: ws, Step: workspace.StepStopAgent})
	h.waitFor("the deleting workspace", hasItem("… feat (deleting)"))
	f.Publish(workspace.Event{Kind: workspace.EventDeleteFailed, Workspace: ws, Step: workspace.StepRemoveWorktree, Err: "busy"})
	h.waitFor("the failed delete", hasItem("✕ feat (delete failed)"))

	if err := f.Delete(h.tray.ctx, ws.Path, workspace.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the workspace gone", func() bool {
		m := h.view.menu()
		return find(m, "◌ second (starting)") != nil && !slices.ContainsFunc(labels(m), func(l string) bool { return strings.Contains(l, "feat") })
	})
}

func TestTrayIconFollowsTheOverallState(t *testing.T) {
	f := uitest.NewWorkspaces()
	a := f.AddWorkspace("proj", "a")
	b := f.AddWorkspace("proj", "b")
	agents := uitest.NewAgents()
	agents.Set(a.Path, uitest.AgentIdle)
	agents.Set(b.Path, uitest.AgentIdle)
	h := newHarness(t, Deps{Workspaces: f, Agents: agents})
	h.startTray()

	lastIcon := func() string {
		h.view.mu.Lock()
		defer h.view.mu.Unlock()
		if len(h.view.icons) == 0 {
			return ""
		}
		return h.view.icons[len(h.view.icons)-1].Name()
	}
	for _, step := range []struct {
		ws   workspace.Workspace
		st   workspace.AgentStatus
		icon string
	}{
		{a, uitest.AgentBusy, "codehydra-busy.png"},
		{b, uitest.AgentInput, "codehydra-input.png"},
		{a, uitest.AgentFailed, "codehydra-failed.png"},
		{a, uitest.AgentIdle, "codehydra-input.png"},
		{b, uitest.AgentIdle, "codehydra-idle.png"},
	} {
		agents.Set(step.ws.Path, step.st)
		f.Publish(workspace.Event{Kind: workspace.EventAgentChanged, Workspace: step.ws})
		h.waitFor(step.icon, func() bool { return lastIcon() == step.icon })
	}
}

// handDrivenTray is a tray over one idle workspace, loaded and shown once
// without its event loop, so that a test hands it events itself and
// counts rebuilds exactly.
func handDrivenTray(t *testing.T) (*harness, workspace.Workspace, *uitest.Agents) {
	t.Helper()
	f, ws, agents := uitest.OneWorkspace(uitest.AgentIdle)
	h := newHarness(t, Deps{Workspaces: f, Agents: agents})
	tr := h.tray
	tr.view = h.view
	tr.mu.Lock()
	tr.reload(h.tray.ctx)
	tr.mu.Unlock()
	tr.publish()
	return h, ws, agents
}

func TestTrayDoesNotRebuildWhenNothingChanged(t *testing.T) {
	h, ws, agents := handDrivenTray(t)
	built := h.menusBuilt
	if n := built(); n != 1 {
		t.Fatalf("first show built %d menus", n)
	}

	for _, e := range []workspace.Event{
		{Kind: workspace.EventAgentChanged, Workspace: ws},
		{Kind: workspace.EventMetadataChanged, Workspace: ws},
		{Kind: workspace.EventWorkspaceAdded, Workspace: ws},
	} {
		h.tray.onEvents([]workspace.Event{e})
		if n := built(); n != 1 {
			t.Errorf("%s without a change rebuilt the menu (%d builds)", e.Kind, n)
		}
	}
	agents.Set(ws.Path, uitest.AgentBusy)
	h.tray.onEvents([]workspace.Event{{Kind: workspace.EventAgentChanged, Workspace: ws}})
	if n := built(); n != 2 {
		t.Errorf("a change built %d menus in all, want 2", n)
	}
	if find(h.view.menu(), "● feat (busy)") == nil {
		t.Errorf("menu after the change:\n%s", strings.Join(labels(h.view.menu()), "\n"))
	}
}

// A burst (a delete's steps, every agent reporting at startup) comes as
// one batch and costs one rebuild, not one per event.
func TestTrayRebuildsOnceForABatchOfEvents(t *testing.T) {
	h, ws, agents := handDrivenTray(t)
	if n := h.menusBuilt(); n != 1 {
		t.Fatalf("first show built %d menus", n)
	}
	agents.Set(ws.Path, uitest.AgentBusy)
	h.tray.onEvents([]workspace.Event{
		{Kind: workspace.EventAgentChanged, Workspace: ws},
		{Kind: workspace.EventDeleteProgress, Workspace: ws, Step: workspace.StepStopAgent},
		{Kind: workspace.EventDeleteProgress, Workspace: ws, Step: workspace.StepRemoveWorktree},
	})
	if n := h.menusBuilt(); n != 2 {
		t.Errorf("a batch of three changes built %d menus in all, want 2", n)
	}
	if w := h.tray.State().Projects[0].Workspaces[0]; !w.Deleting || w.DeleteStep != workspace.StepRemoveWorktree || w.Agent.State != uitest.AgentBusy.State {
		t.Errorf("after the batch the workspace is %+v, want busy and deleting at %s", w, workspace.StepRemoveWorktree)
	}
}

func TestTrayNotifiesOnFinishAndInputUnlessSwitchedOff(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
			f, ws, agents := uitest.OneWorkspace(uitest.AgentIdle)
			store := settings.NewStore(t.TempDir() + "/settings.json")
			if err := store.Update(func(s *settings.Settings) { s.Notifications = on }); err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, Deps{Workspaces: f, Agents: agents, Settings: store})
			h.startTray()

			for _, st := range []workspace.AgentStatus{uitest.AgentBusy, uitest.AgentInput, uitest.AgentIdle} {
				agents.Set(ws.Path, st)
				f.Publish(workspace.Event{Kind: workspace.EventAgentChanged, Workspace: ws})
				h.waitFor("the new status", func() bool {
					return find(h.view.menu(), WorkspaceLabel(WorkspaceState{Workspace: ws, Agent: st})) != nil
				})
			}
			var got []string
			for _, n := range h.app.Notifications() {
				got = append(got, n.Title)
			}
			want := []string{NoticeNeedsInput, NoticeFinished}
			if !on {
				want = nil
			}
			if !slices.Equal(got, want) {
				t.Errorf("notifications = %q, want %q", got, want)
			}
		})
	}
}

func TestTrayActionsOpenCopyAndRestart(t *testing.T) {
	f, ws, agents := uitest.OneWorkspace(uitest.AgentIdle)
	h := newHarness(t, Deps{Workspaces: f, Agents: agents, MCPConfig: func(c, ws string) (string, error) { return "config for " + c + " " + ws, nil }})
	h.startTray()
	h.waitFor("the menu", func() bool { return h.view.menu() != nil })
	m := h.view.menu()
	label := "○ feat (idle)"

	// Open agent in browser: agenturl_open_test.go.
	clip := h.app.Clipboard()
	find(m, label, LabelCopyPath).Action()
	if got := clip.Content(); got != ws.Path {
		t.Errorf("clipboard = %q, want the path", got)
	}
	find(m, label, LabelCopyAttach).Action()
	if got := clip.Content(); got != "OPENCODE_SERVER_USERNAME=opencode OPENCODE_SERVER_PASSWORD=pw-4101 opencode attach http://127.0.0.1:4101" {
		t.Errorf("clipboard = %q, want the attach command", got)
	}
	find(m, LabelCopyMCPConfig, "Claude Code").Action()
	if got := clip.Content(); got != "config for claude-code " {
		t.Errorf("clipboard = %q, want the user's Claude Code config", got)
	}
	find(m, label, LabelCopyWorkspaceMCPConfig, "OpenCode").Action()
	if got := clip.Content(); got != "config for opencode "+ws.Path {
		t.Errorf("clipboard = %q, want the workspace's OpenCode config", got)
	}
	notes := h.app.Notifications()
	if len(notes) != 2 || notes[0].Content != CopiedConfigNotice("claude-code", "").Content || notes[1].Content != CopiedConfigNotice("opencode", ws.Name).Content {
		t.Errorf("notifications %+v, want one confirmation per copy", notes)
	}
	if want := "Copied the OpenCode config for feat."; !strings.HasPrefix(notes[len(notes)-1].Content, want) {
		t.Errorf("the notification says %q, want it to start with %q", notes[len(notes)-1].Content, want)
	}
	find(m, label, LabelRestartAgent).Action()
	h.waitFor("the restart", func() bool { return slices.Equal(agents.Restarted(), []string{ws.Path}) })

	find(m, LabelSettings).Action()
	if !h.windowOpen("CodeHydra settings") {
		t.Error("Settings… did not open the settings window")
	}
	find(m, LabelQuit).Action()
	if h.app.Quits() != 1 {
		t.Error("Quit did not quit the app")
	}
}

func TestMainWindowShowsTheMenuAsWidgets(t *testing.T) {
	f, _, agents := uitest.OneWorkspace(uitest.AgentBusy)
	h := newHarness(t, Deps{Workspaces: f, Agents: agents})
	h.tray.main = newMainWindow(h.app)
	h.tray.start()
	h.drain()

	var texts, buttons []string
	// actions are the Actions buttons by the label of their row.
	actions := map[string]*widget.Button{}
	for _, o := range test.LaidOutObjects(h.tray.main.win.Content()) {
		switch w := o.(type) {
		case *widget.Label:
			texts = append(texts, w.Text)
		case *widget.Button:
			buttons = append(buttons, w.Text)
			if w.Text == "Actions ▾" && len(texts) > 0 {
				actions[texts[len(texts)-1]] = w
			}
		}
	}
	for _, want := range []string{"CodeHydra: 1 workspace, 1 busy", "proj", "● feat (busy)", LabelCopyMCPConfig} {
		if !slices.Contains(texts, want) {
			t.Errorf("no text %q in %q", want, texts)
		}
	}
	for _, want := range []string{LabelNewWorkspace, LabelAddProject, LabelSettings, LabelQuit} {
		if !slices.Contains(buttons, want) {
			t.Errorf("no button %q in %q", want, buttons)
		}
	}
	for row, want := range map[string][]string{
		"● feat (busy)": {LabelOpenAgent, LabelOpenTerminal, LabelDelete},
		"proj":          {LabelNewWorkspaceHere, LabelRemoveProject},
	} {
		if actions[row] == nil {
			t.Fatalf("no Actions button for %q", row)
		}
		test.Tap(actions[row])
		overlay := h.tray.main.win.Canvas().Overlays().Top()
		if overlay == nil {
			t.Fatalf("Actions did not pop up the menu of %q", row)
		}
		markup := test.RenderObjectToMarkup(overlay)
		for _, label := range want {
			if !strings.Contains(markup, label) {
				t.Errorf("the popup of %q does not show %q:\n%s", row, label, markup)
			}
		}
		h.tray.main.win.Canvas().Overlays().Remove(overlay)
	}
}

// The manager's order (by name, case-folded, then path) is the only one:
// the tray shows projects and workspaces as the manager lists them, as
// the metadata editor does (window's TestMetadataEditorShowsTheManagersOrder).
// "Gamma" after "beta" is what a byte-wise sort gets wrong.
func TestTrayShowsTheManagersOrder(t *testing.T) {
	zoo, apps := testenv.GitRepo(t, "zoo"), testenv.GitRepo(t, "Apps")
	m := uitest.RealManager(t, zoo, apps)
	for _, name := range []string{"beta", "Gamma", "Alpha", "alpha2"} {
		if _, err := m.Create(context.Background(), workspace.CreateOptions{ProjectPath: zoo, Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	h := newHarness(t, Deps{Workspaces: m})
	h.startTray()

	var got []string
	for _, it := range h.view.menu().Items {
		if p := it.Label; p != "" && !it.IsSeparator && !strings.HasPrefix(p, "CodeHydra:") {
			got = append(got, p)
		}
	}
	want := []string{"Apps", "    " + LabelNoWorkspaces, "zoo", "– Alpha (no agent)", "– alpha2 (no agent)", "– beta (no agent)", "– Gamma (no agent)"}
	if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
		t.Errorf("menu lists\n%s\nwant it to begin with\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestTraySaysWhenTheFixedMCPPortWasTaken(t *testing.T) {
	const notice = "MCP port 4777 is taken: using 38211; copy MCP configs again"
	for _, tc := range []struct {
		name   string
		notice string
	}{{"the port set up", ""}, {"another port", notice}} {
		t.Run(tc.name, func(t *testing.T) {
			f, _, agents := uitest.OneWorkspace(uitest.AgentIdle)
			h := newHarness(t, Deps{Workspaces: f, Agents: agents, MCP: uitest.MCP{InUse: 38211, Notice: tc.notice}})
			h.startTray()
			h.waitFor("the workspace", func() bool { return find(h.view.menu(), "○ feat (idle)") != nil })
			m := h.view.menu()
			warned := find(m, "⚠ "+notice)
			if (warned != nil) != (tc.notice != "") {
				t.Fatalf("warning item %v, want it only when the port was taken; menu %q", warned, labels(m))
			}
			if warned != nil && (!warned.Disabled || m.Items[1] != warned) {
				t.Errorf("the warning must be the disabled line under the summary: %q", labels(m))
			}
		})
	}
}

// The windows ask the tray which agents are in a turn (Quit, Restart now
// and Rotate token name them): working or waiting for an answer, in the
// menu's order.
func TestTrayTellsTheWindowsWhichAgentsAreBusy(t *testing.T) {
	f := uitest.NewWorkspaces()
	agents := uitest.NewAgents()
	for _, w := range []struct {
		name string
		st   workspace.AgentStatus
	}{
		{"a-idle", uitest.AgentIdle}, {"b-busy", uitest.AgentBusy}, {"c-input", uitest.AgentInput},
		{"d-failed", uitest.AgentFailed}, {"e-mixed", uitest.AgentMixed}, {"f-starting", uitest.AgentStarting},
	} {
		agents.Set(f.AddWorkspace("proj", w.name).Path, w.st)
	}
	h := newHarness(t, Deps{Workspaces: f, Agents: agents})
	h.startTray()
	if got, want := h.tray.BusyAgents(), []string{"b-busy", "c-input", "e-mixed"}; !slices.Equal(got, want) {
		t.Errorf("busy agents %q, want %q", got, want)
	}
}

// A delete window opened while a delete runs (an agent's) or after one
// failed shows it as the tray saw its events.
func TestTrayTellsTheWindowsHowADeleteGoes(t *testing.T) {
	f := uitest.NewWorkspaces()
	running, failed, still := f.AddWorkspace("proj", "running"), f.AddWorkspace("proj", "failed"), f.AddWorkspace("proj", "still")
	h := newHarness(t, Deps{Workspaces: f})
	h.startTray()
	f.Publish(workspace.Event{Kind: workspace.EventDeleteProgress, Workspace: running, Step: workspace.StepRemoveWorktree})
	f.Publish(workspace.Event{Kind: workspace.EventDeleteFailed, Workspace: failed, Step: workspace.StepDeleteBranch, Err: "busy"})
	h.waitFor("the tray to see both", func() bool {
		return find(h.view.menu(), "… running (deleting)") != nil && find(h.view.menu(), "✕ failed (delete failed)") != nil
	})
	for _, tc := range []struct {
		ws   workspace.Workspace
		want window.DeleteProgress
	}{
		{running, window.DeleteProgress{Running: true, Step: workspace.StepRemoveWorktree}},
		{failed, window.DeleteProgress{Step: workspace.StepDeleteBranch, Err: "busy"}},
		{still, window.DeleteProgress{}},
		{workspace.Workspace{Path: "/wt/proj/unknown"}, window.DeleteProgress{}},
	} {
		if got := h.tray.DeleteProgress(tc.ws.Path); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.ws.Path, got, tc.want)
		}
	}
}

// What the windows do goes through the manager, and the tray shows it as
// the manager reports it: a workspace created (its agent starting), one
// deleted, a project added.
func TestTrayFollowsWhatTheWindowsDoToARealManager(t *testing.T) {
	repo, other := testenv.GitRepo(t, "repo"), testenv.GitRepo(t, "other")
	m := uitest.RealManager(t, repo)
	agents := uitest.NewAgents()
	agents.SetDefault(uitest.AgentStarting)
	h := newHarness(t, Deps{Workspaces: m, Agents: agents})
	h.startTray()
	ctx := context.Background()

	ws, err := m.Create(ctx, workspace.CreateOptions{ProjectPath: repo, Name: "feature/login"})
	if err != nil {
		t.Fatal(err)
	}
	h.waitFor("the new workspace in the menu", func() bool {
		return find(h.view.menu(), "◌ feature/login (starting)") != nil
	})
	if err := m.Delete(ctx, ws.Path, workspace.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the menu without it", func() bool { return find(h.view.menu(), "    "+LabelNoWorkspaces) != nil })
	if _, err := m.AddProject(ctx, other); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the project in the menu", func() bool { return find(h.view.menu(), "other") != nil })
}
