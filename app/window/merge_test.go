package window

import (
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"codehydra/app/internal/uitest"
	"codehydra/workspace"
)

// blocked is a preflight refused for uncommitted files, a conflict and a
// dirty checkout of the target.
func blocked(o workspace.MergeOptions) (workspace.Preflight, error) {
	return workspace.Preflight{Branch: "feat", Target: "main", Strategy: o.Strategy, Ahead: 2, Behind: 1,
		Uncommitted: []string{"wip.go"}, Conflicts: []string{"menu.go"}, CheckedOutAt: "/src/proj", TargetDirty: []string{"notes.txt"},
		Blockers: []string{"wip.go is not committed: commit or discard it first.", "/src/proj has changes in main's checkout."}}, nil
}

// openMergeChecked opens the Merge window and waits for its first
// preflight.
func openMergeChecked(t *testing.T, h *harness, ws workspace.Workspace) *mergeDialog {
	t.Helper()
	d := h.u.openMerge(ws)
	if d == nil {
		t.Fatal("no merge window")
	}
	h.waitFor("the preflight", func() bool { return d.pf != nil })
	return d
}

func TestMergeWindowShowsThePreflightAndKeepsMergeOffOnBlockers(t *testing.T) {
	f, ws, _ := uitest.OneWorkspace(uitest.AgentIdle)
	l := uitest.NewLanding(nil)
	l.OnPreflight(blocked)
	h := newHarness(t, Deps{Workspaces: f, Landing: l})
	d := openMergeChecked(t, h, ws)

	if !h.windowOpen("Merge: proj / feat") || d.head.Text != "Merge feat into main" {
		t.Errorf("window %v, head %q", h.windowOpen("Merge: proj / feat"), d.head.Text)
	}
	for _, want := range []string{
		"feat has 2 commits that main lacks; main has 1 commit that feat lacks.",
		"Uncommitted changes in the workspace (only commits are merged: commit or discard them first): wip.go.",
		"Conflicts with main in: menu.go.",
		"main is checked out at /src/proj, which has changes: notes.txt.",
	} {
		if !strings.Contains(d.preflight.Text, want) {
			t.Errorf("the preflight lacks %q:\n%s", want, d.preflight.Text)
		}
	}
	if want := "The merge cannot go:\n  • wip.go is not committed: commit or discard it first.\n  • /src/proj has changes in main's checkout."; d.verdict.Text != want || d.verdict.Importance != widget.DangerImportance {
		t.Errorf("verdict %q, want %q in red", d.verdict.Text, want)
	}
	if !d.merge.Disabled() {
		t.Error("Merge is on although the preflight has blockers")
	}
	test.Tap(d.merge)
	if len(l.Merges()) != 0 {
		t.Error("a refused preflight's Merge merged")
	}

	// Another strategy is checked again; once it can go, Merge is on.
	l.OnPreflight(func(o workspace.MergeOptions) (workspace.Preflight, error) {
		return workspace.Preflight{Branch: "feat", Target: "main", Strategy: o.Strategy, Ahead: 2, CheckedOutAt: "/src/proj", CanMerge: true}, nil
	})
	d.strategy.SetSelected("Squash into one commit")
	h.waitFor("the squash's preflight", func() bool { return d.pf != nil && d.pf.Strategy == workspace.StrategySquash })
	if got := l.Preflights(); len(got) != 2 || got[0].Strategy != workspace.StrategyMerge || got[1].Strategy != workspace.StrategySquash {
		t.Errorf("preflights asked %+v, want merge then squash", got)
	}
	if d.merge.Disabled() || !strings.Contains(d.preflight.Text, "/src/proj, which is clean: it moves with the merge.") || d.verdict.Text != "Ready to merge." {
		t.Errorf("Merge on %v, preflight:\n%s", !d.merge.Disabled(), d.preflight.Text)
	}
}

func TestMergeWindowMergesThenDeletesTheWorkspaceThroughTheDeleteWindow(t *testing.T) {
	f, ws, _ := uitest.OneWorkspace(uitest.AgentIdle)
	l := uitest.NewLanding(nil)
	h := newHarness(t, Deps{Workspaces: f, Landing: l})
	d := openMergeChecked(t, h, ws)

	d.strategy.SetSelected("Rebase, then fast-forward")
	h.waitFor("the rebase's preflight", func() bool { return d.pf != nil && d.pf.Strategy == workspace.StrategyRebase })
	d.deleteAfter.SetChecked(true)
	test.Tap(d.merge)
	h.waitFor("the delete", func() bool { return d.gone })
	if got := l.Merges(); len(got) != 1 || got[0] != (workspace.MergeOptions{Strategy: workspace.StrategyRebase}) {
		t.Errorf("merges %+v, want one rebase into the base", got)
	}
	if got := f.Deletes(); !slices.Equal(got, []workspace.DeleteOptions{{DeleteBranch: true, ExpectHead: uitest.MergedHead}}) {
		t.Errorf("deletes %+v, want the workspace and its branch deleted once", got)
	}
	for _, want := range []string{"Merged feat into main, which is at 0123456789 now. Verified", "The workspace is deleted."} {
		if !strings.Contains(d.status.Text, want) {
			t.Errorf("status lacks %q:\n%s", want, d.status.Text)
		}
	}
	if h.windowOpen("Delete workspace") || !d.merge.Disabled() {
		t.Error("the delete window must close when done, and Merge stay off")
	}
}

func TestMergeWindowOffersTheDeleteWhenNotAskedAndNeverAfterAnUnverifiedMerge(t *testing.T) {
	f, ws, _ := uitest.OneWorkspace(uitest.AgentIdle)
	l := uitest.NewLanding(nil)
	h := newHarness(t, Deps{Workspaces: f, Landing: l})
	d := openMergeChecked(t, h, ws)

	test.Tap(d.merge)
	h.waitFor("the result", func() bool { return d.merged })
	if d.deleteWs.Hidden || len(f.Deletes()) != 0 || h.windowOpen("Delete workspace") {
		t.Fatal("a verified merge without delete-after must offer the delete, not do it")
	}
	test.Tap(d.deleteWs)
	if !h.windowOpen("Delete workspace") {
		t.Fatal("Delete workspace… opens no delete window")
	}
	h.drain()
	if len(f.Deletes()) != 0 {
		t.Error("the offered delete started by itself")
	}
	h.app.CloseAll()

	// Not verified: the workspace stays, even when asked to go.
	l.OnMerge(func(o workspace.MergeOptions) (workspace.MergeResult, error) {
		return workspace.MergeResult{Merged: true, TargetHead: "abc", Preflight: workspace.Preflight{Target: "main"}}, nil
	})
	d = openMergeChecked(t, h, ws)
	d.deleteAfter.SetChecked(true)
	test.Tap(d.merge)
	h.waitFor("the result", func() bool { return d.merged })
	if !strings.Contains(d.status.Text, "could not verify") || d.status.Importance != widget.DangerImportance || !d.deleteWs.Hidden || h.windowOpen("Delete workspace") || len(f.Deletes()) != 0 {
		t.Errorf("an unverified merge: status %q, delete offered %v, deletes %v", d.status.Text, !d.deleteWs.Hidden, f.Deletes())
	}
}

func TestMergeWindowDeleteAfterWaitsForTheUserWhenNewWorkAppeared(t *testing.T) {
	f, ws, _ := uitest.OneWorkspace(uitest.AgentIdle)
	l := uitest.NewLanding(nil)
	h := newHarness(t, Deps{Workspaces: f, Landing: l})
	d := openMergeChecked(t, h, ws)
	// A file changed after the preflight, before the delete.
	l.OnMerge(func(o workspace.MergeOptions) (workspace.MergeResult, error) {
		f.SetStatus(ws.Path, workspace.Status{IsDirty: true, Ahead: 3})
		return workspace.MergeResult{Merged: true, Verified: true, TargetHead: "abc", Head: uitest.MergedHead, Preflight: workspace.Preflight{Target: "main"}}, nil
	})
	d.deleteAfter.SetChecked(true)
	test.Tap(d.merge)
	h.waitFor("the delete window's check", func() bool {
		w := h.app.Texts("Delete workspace")
		return strings.Contains(w, "uncommitted changes")
	})
	texts := h.app.Texts("Delete workspace")
	if !strings.Contains(texts, "the delete waits for you") || strings.Contains(texts, "not merged into") || len(f.Deletes()) != 0 {
		t.Errorf("deletes %v; the delete window says:\n%s", f.Deletes(), texts)
	}
}

func TestMergeWindowShowsAFailedMergeAndKeepsTheWorkspace(t *testing.T) {
	f, ws, _ := uitest.OneWorkspace(uitest.AgentIdle)
	l := uitest.NewLanding(nil)
	l.OnMerge(func(workspace.MergeOptions) (workspace.MergeResult, error) {
		return workspace.MergeResult{}, workspace.Errorf(workspace.CodeConflict, "main moved meanwhile and now conflicts in menu.go")
	})
	h := newHarness(t, Deps{Workspaces: f, Landing: l})
	d := openMergeChecked(t, h, ws)
	d.deleteAfter.SetChecked(true)
	test.Tap(d.merge)
	h.waitFor("the failure", func() bool { return strings.Contains(d.status.Text, "failed") })
	if !strings.Contains(d.status.Text, "The merge failed: main moved meanwhile and now conflicts in menu.go") || len(f.Deletes()) != 0 || d.merged {
		t.Errorf("status %q, deletes %v", d.status.Text, f.Deletes())
	}
	h.waitFor("the preflight again", func() bool { return d.pf != nil && !d.merge.Disabled() })
	if got := len(l.Preflights()); got != 2 {
		t.Errorf("%d preflights, want a second one after the failure", got)
	}
}

func TestMergeWindowSaysWhyThePreflightFailed(t *testing.T) {
	f, ws, _ := uitest.OneWorkspace(uitest.AgentIdle)
	l := uitest.NewLanding(nil)
	l.OnPreflight(func(workspace.MergeOptions) (workspace.Preflight, error) {
		return workspace.Preflight{}, workspace.Errorf(workspace.CodeInvalidInput, "the workspace has no base; set its metadata key base")
	})
	h := newHarness(t, Deps{Workspaces: f, Landing: l})
	d := h.u.openMerge(ws)
	h.waitFor("the failure", func() bool { return strings.Contains(d.preflight.Text, "Could not check") })
	if !strings.Contains(d.preflight.Text, "set its metadata key base") || !d.merge.Disabled() {
		t.Errorf("preflight %q, Merge on %v", d.preflight.Text, !d.merge.Disabled())
	}
}

// TestMergeWindowDeleteAfterKeepsAWorkspaceThatMovedSinceTheMerge: a
// commit in the workspace after the verified merge (its HEAD is no longer
// the head the merge verified) makes the delete window treat it as
// unmerged: no delete starts by itself, the commits are counted as not
// merged, and the user's delete expects no head.
func TestMergeWindowDeleteAfterKeepsAWorkspaceThatMovedSinceTheMerge(t *testing.T) {
	f, ws, _ := uitest.OneWorkspace(uitest.AgentIdle)
	l := uitest.NewLanding(nil)
	h := newHarness(t, Deps{Workspaces: f, Landing: l})
	d := openMergeChecked(t, h, ws)
	l.OnMerge(func(o workspace.MergeOptions) (workspace.MergeResult, error) {
		res := workspace.MergeResult{Merged: true, Verified: true, TargetHead: "abc", Head: uitest.MergedHead, Preflight: workspace.Preflight{Target: "main"}}
		// The agent commits once the merge is verified.
		f.SetStatus(ws.Path, workspace.Status{Ahead: 1})
		l.OnPreflight(func(o workspace.MergeOptions) (workspace.Preflight, error) {
			return workspace.Preflight{Branch: "feat", Head: "0123456789newer", Target: "main", Ahead: 1, CanMerge: true}, nil
		})
		return res, nil
	})
	d.deleteAfter.SetChecked(true)
	test.Tap(d.merge)
	h.waitFor("the delete window's check", func() bool {
		return strings.Contains(h.app.Texts("Delete workspace"), "moved since its merge into main")
	})
	h.drain()
	texts := h.app.Texts("Delete workspace")
	if !strings.Contains(texts, "1 commit not merged into") || !strings.Contains(texts, "the delete waits for you") || len(f.Deletes()) != 0 {
		t.Fatalf("deletes %v; the delete window says:\n%s", f.Deletes(), texts)
	}
	h.app.CloseAll()

	// The user deletes it anyway: the delete is not one after a merge.
	del := h.u.openDeleteAfterMerge(ws, mergedAt{"main", uitest.MergedHead}, false)
	h.waitFor("the delete window's check", func() bool { return del.mergeChecked })
	test.Tap(del.del)
	h.waitFor("the delete", func() bool { return len(f.Deletes()) == 1 })
	if got := f.Deletes()[0]; got.ExpectHead != "" || del.stillMerged {
		t.Errorf("the delete of a workspace that moved since its merge: %+v, treated as merged %v", got, del.stillMerged)
	}
}
