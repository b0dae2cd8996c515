package app

import (
	"slices"
	"strings"
	"testing"

	"codehydra/app/internal/uitest"
	"codehydra/workspace"
)

// recordingLandActions are LandActions that record what they were called with.
func recordingLandActions(calls *[]string) LandActions {
	rec := func(s string) { *calls = append(*calls, s) }
	return LandActions{
		Review: func(ws workspace.Workspace) { rec("review " + ws.Path) },
		Merge:  func(ws workspace.Workspace) { rec("merge " + ws.Path) },
		Update: func(w WorkspaceState, mode workspace.UpdateMode) {
			rec("update " + string(mode) + " " + w.Workspace.Path)
		},
		CreatePR: func(w WorkspaceState) { rec("pr " + w.Workspace.Path) },
	}
}

// landPart is the submenu's items from Review changes… to the separator
// after Create pull request, as labels() writes them.
func landPart(t *testing.T, w WorkspaceState, a Actions) []string {
	t.Helper()
	m := BuildMenu(oneProject(w), a)
	var sub []string
	for _, l := range labels(m) {
		if strings.HasPrefix(l, "  ") {
			sub = append(sub, strings.TrimPrefix(l, "  "))
		}
	}
	i := slices.IndexFunc(sub, func(l string) bool { return strings.HasPrefix(l, LabelReview) })
	if i < 0 {
		return nil
	}
	j := slices.Index(sub[i:], "---")
	return sub[i : i+j]
}

func TestWorkspaceSubmenuOffersReviewMergeUpdateAndPullRequestNamingTheBase(t *testing.T) {
	var calls []string
	a := allActions(&calls)
	a.LandActions = recordingLandActions(&calls)
	w := wsState("feat", uitest.AgentIdle)
	w.Base = "develop"

	want := []string{LabelReview, "Merge into develop…", "Update from develop", "Update from develop (merge)", LabelCreatePR}
	if got := landPart(t, w, a); !slices.Equal(got, want) {
		t.Fatalf("items %q, want %q", got, want)
	}
	m := BuildMenu(oneProject(w), a)
	label := WorkspaceLabel(w)
	for _, item := range want {
		find(m, label, item).Action()
	}
	if want := []string{"review /wt/feat", "merge /wt/feat", "update rebase /wt/feat", "update merge /wt/feat", "pr /wt/feat"}; !slices.Equal(calls, want) {
		t.Errorf("calls %q, want %q", calls, want)
	}

	// Before Restart agent and Delete…, after the folder items.
	sub := labels(find(m, label).ChildMenu)
	if i, j := slices.Index(sub, LabelOpenEditor+" (off)"), slices.Index(sub, LabelReview); i < 0 || j < i || sub[len(sub)-1] != LabelDelete {
		t.Errorf("submenu order %q", sub)
	}
}

func TestLandItemsAreOffOrAbsentWhenTheyCannotRun(t *testing.T) {
	a := allActions(new([]string))
	a.LandActions = recordingLandActions(new([]string))
	deleting := wsState("feat", uitest.AgentIdle)
	deleting.Deleting, deleting.Base = true, "main"
	detached := wsState("feat", uitest.AgentIdle)
	detached.Workspace.Branch, detached.Base = "", "main"
	updating := wsState("feat", uitest.AgentIdle)
	updating.Updating, updating.CreatingPR, updating.Base = true, true, "main"
	noBase := wsState("feat", uitest.AgentIdle)

	for _, tc := range []struct {
		name string
		w    WorkspaceState
		a    Actions
		want []string
	}{
		{"deleting", deleting, a, []string{LabelReview + " (off)", "Merge into main… (off)", "Update from main (off)", "Update from main (merge) (off)", LabelCreatePR + " (off)"}},
		{"detached HEAD is reviewed only", detached, a, []string{LabelReview, "Merge into main… (off)", "Update from main (off)", "Update from main (merge) (off)", LabelCreatePR + " (off)"}},
		{"while an update and a pull request run", updating, a, []string{LabelReview, "Merge into main…", "Updating from main… (off)", LabelCreatingPR + " (off)"}},
		{"a base not read yet", noBase, a, []string{LabelReview, "Merge into base…", "Update from base", "Update from base (merge)", LabelCreatePR}},
		{"no Landing in the app", noBase, allActions(new([]string)), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := landPart(t, tc.w, tc.a); !slices.Equal(got, tc.want) {
				t.Errorf("items %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAChildWithIdleAgentAndCommitsAheadIsReadyForReview(t *testing.T) {
	child := func(a workspace.AgentStatus, ahead int) WorkspaceState {
		w := wsState("child", a)
		w.CreatedBy, w.Ahead = "/wt/parent", ahead
		return w
	}
	mine := wsState("mine", uitest.AgentIdle)
	mine.Ahead = 3
	unconfined := child(uitest.AgentIdle, 1)
	unconfined.Agent.Sandbox.Reason = "the sandbox is off in the settings"
	for _, tc := range []struct {
		w    WorkspaceState
		want string
	}{
		{child(uitest.AgentIdle, 2), "○ child (idle, ready for review)"},
		{child(uitest.AgentBusy, 2), "● child (busy)"},
		{child(uitest.AgentInput, 2), "? child (needs input)"},
		{child(uitest.AgentIdle, 0), "○ child (idle)"},
		{mine, "○ mine (idle)"},
		{unconfined, "○ child (idle, ready for review, unconfined)"},
	} {
		if got := WorkspaceLabel(tc.w); got != tc.want {
			t.Errorf("label %q, want %q", got, tc.want)
		}
	}
}

func TestTrayMarksAChildReadyForReviewFromItsCachedStatus(t *testing.T) {
	f := uitest.NewWorkspaces()
	parent := f.AddWorkspace("proj", "parent")
	child := f.AddWorkspace("proj", "child")
	f.SetMetadataQuietly(child.Path, workspace.MetadataCreatedBy, parent.Path)
	f.SetMetadataQuietly(child.Path, "base", "develop")
	agents := uitest.NewAgents()
	agents.SetDefault(uitest.AgentIdle)
	h := newHarness(t, Deps{Workspaces: f, Agents: agents, Landing: uitest.NewLanding(nil)})
	h.startTray()
	hasItem := func(path ...string) func() bool {
		return func() bool { return find(h.view.menu(), path...) != nil }
	}
	h.waitFor("the child", hasItem("○ child (idle)", "Merge into develop…"))

	f.SetStatus(child.Path, workspace.Status{Base: "develop", Ahead: 2})
	h.waitFor("the child ready for review", hasItem("○ child (idle, ready for review)"))
	// The parent is the user's: never ready for review, whatever its status.
	f.SetStatus(parent.Path, workspace.Status{Base: "main", Ahead: 5})
	agents.Set(child.Path, uitest.AgentBusy)
	f.Publish(workspace.Event{Kind: workspace.EventAgentChanged, Workspace: child})
	h.waitFor("the child at work", hasItem("● child (busy)"))
	if find(h.view.menu(), "○ parent (idle)", "Merge into main…") == nil {
		t.Errorf("menu:\n%s", strings.Join(labels(h.view.menu()), "\n"))
	}
}

func TestTrayUpdatesFromTheBaseInTheBackgroundAndSaysHowItWent(t *testing.T) {
	f, _, agents := uitest.OneWorkspace(uitest.AgentIdle)
	l := uitest.NewLanding(nil)
	h := newHarness(t, Deps{Workspaces: f, Agents: agents, Landing: l})
	h.startTray()
	label := "○ feat (idle)"
	h.waitFor("the menu", func() bool { return find(h.view.menu(), label, "Update from main") != nil })

	release := l.Block()
	find(h.view.menu(), label, "Update from main").Action()
	h.waitFor("the item off while it runs", func() bool {
		it := find(h.view.menu(), label, "Updating from main…")
		return it != nil && it.Disabled
	})
	release()
	h.waitFor("the notification", func() bool { return len(h.app.Notifications()) == 1 })
	n := h.app.Notifications()[0]
	if n.Title != noticeUpdated || n.Content != "proj / feat was rebased onto main: its head is 2222222222 now (was 1111111111)." {
		t.Errorf("notification %+v", n)
	}
	h.waitFor("the items back", func() bool { return find(h.view.menu(), label, "Update from main (merge)") != nil })

	// A conflict leaves the workspace as it was, and a window says where.
	l.OnUpdate(func(workspace.UpdateMode) (workspace.UpdateResult, error) {
		return workspace.UpdateResult{}, workspace.Errorf(workspace.CodeConflict, "merging main conflicts in menu.go and tray.go; the workspace is as it was")
	})
	find(h.view.menu(), label, "Update from main (merge)").Action()
	h.waitFor("the error window", func() bool { return h.windowOpen("CodeHydra: Update from main") })
	if got := h.app.Texts("CodeHydra: Update from main"); !strings.Contains(got, "conflicts in menu.go and tray.go") {
		t.Errorf("the window says %q", got)
	}
	if got := l.Updates(); !slices.Equal(got, []workspace.UpdateMode{workspace.UpdateRebase, workspace.UpdateMerge}) {
		t.Errorf("updates %q", got)
	}
}

func TestTrayCreatesAPullRequestAndSaysWhereOrWhyNot(t *testing.T) {
	f, ws, agents := uitest.OneWorkspace(uitest.AgentIdle)
	l := uitest.NewLanding(nil)
	h := newHarness(t, Deps{Workspaces: f, Agents: agents, Landing: l})
	h.startTray()
	label := "○ feat (idle)"
	h.waitFor("the menu", func() bool { return find(h.view.menu(), label, LabelCreatePR) != nil })

	find(h.view.menu(), label, LabelCreatePR).Action()
	h.waitFor("the notification", func() bool { return len(h.app.Notifications()) == 1 })
	if n := h.app.Notifications()[0]; n.Title != noticePullRequest || n.Content != "proj / feat → main: https://example.com/pr/1" {
		t.Errorf("notification %+v", n)
	}
	h.waitFor("the item back", func() bool { return find(h.view.menu(), label, LabelCreatePR) != nil })

	l.OnPullRequest(func() (workspace.PullRequest, error) {
		return workspace.PullRequest{Remote: "origin", Branch: "feat", Base: "main", Pushed: true, Note: "Pushed feat to origin, but no pull request was opened: gh is not on PATH and the settings' prCommand is not set."}, nil
	})
	find(h.view.menu(), label, LabelCreatePR).Action()
	h.waitFor("the window", func() bool { return h.windowOpen("CodeHydra: " + titleCreatePR) })
	if got := h.app.Texts("CodeHydra: " + titleCreatePR); !strings.Contains(got, "Pushed feat to origin, but no pull request was opened: gh is not on PATH") || strings.Contains(got, "no pull request was opened: Pushed") {
		t.Errorf("the window says %q", got)
	}
	if got := l.PullRequests(); !slices.Equal(got, []string{ws.Path, ws.Path}) {
		t.Errorf("pull requests %q", got)
	}
}

func TestTrayOpensTheReviewAndMergeWindows(t *testing.T) {
	f, _, agents := uitest.OneWorkspace(uitest.AgentIdle)
	h := newHarness(t, Deps{Workspaces: f, Agents: agents, Landing: uitest.NewLanding(nil)})
	h.startTray()
	label := "○ feat (idle)"
	h.waitFor("the menu", func() bool { return find(h.view.menu(), label, LabelReview) != nil })
	find(h.view.menu(), label, LabelReview).Action()
	find(h.view.menu(), label, "Merge into main…").Action()
	if !h.windowOpen("Review changes: proj / feat") || !h.windowOpen("Merge: proj / feat") {
		t.Error("the items open no windows")
	}
}
