package app

import (
	"context"
	"errors"
	"fmt"

	"fyne.io/fyne/v2"

	"codehydra/app/window"
	"codehydra/workspace"
)

// The tray's items for reviewing and landing a workspace's work. They are
// stable: tests drive the tray over D-Bus by these strings (the base
// branch's name completes those that take one).
const (
	LabelReview           = "Review changes…"
	LabelCreatePR         = "Create pull request"
	LabelCreatingPR       = "Creating pull request…"
	LabelReadyForReview   = "ready for review"
	labelMergeInto        = "Merge into %s…"
	labelUpdateFrom       = "Update from %s"
	labelUpdateFromMerge  = "Update from %s (merge)"
	labelUpdatingFrom     = "Updating from %s…"
	baseWhenUnknown       = "base"
	noticeUpdated         = "Workspace updated"
	noticeUpToDate        = "Workspace already up to date"
	noticePullRequest     = "Pull request created"
	titleCreatePR         = "Create pull request"
	titleUpdateFromPrefix = "Update from "
)

// LabelMergeInto is the Merge item of a workspace whose base is base,
// e.g. "Merge into main…".
func LabelMergeInto(base string) string { return fmt.Sprintf(labelMergeInto, orBase(base)) }

// LabelUpdateFrom is the item that rebases a workspace onto its base,
// e.g. "Update from main"; LabelUpdateFromMerge the one that merges the
// base in instead.
func LabelUpdateFrom(base string) string      { return fmt.Sprintf(labelUpdateFrom, orBase(base)) }
func LabelUpdateFromMerge(base string) string { return fmt.Sprintf(labelUpdateFromMerge, orBase(base)) }

// LabelUpdatingFrom replaces both update items while an update runs.
func LabelUpdatingFrom(base string) string { return fmt.Sprintf(labelUpdatingFrom, orBase(base)) }

func orBase(base string) string {
	if base == "" {
		return baseWhenUnknown
	}
	return base
}

// LandActions review and land a workspace's work from the tray; nil ones
// (no Landing in the app) leave their items out.
type LandActions struct {
	Review   func(ws workspace.Workspace)
	Merge    func(ws workspace.Workspace)
	Update   func(w WorkspaceState, mode workspace.UpdateMode)
	CreatePR func(w WorkspaceState)
}

// ReadyForReview says that a child workspace (one another workspace's
// agent created) has work to look at: its agent is idle and its branch has
// commits its base lacks.
func (w WorkspaceState) ReadyForReview() bool {
	return w.CreatedBy != "" && w.Phase() == PhaseIdle && w.Ahead > 0
}

// landItems are the submenu's review and landing items, with a separator
// after them; none when the app cannot land. A workspace being deleted
// offers none of them; one without a branch (detached HEAD) can be
// reviewed only.
func landItems(w WorkspaceState, a Actions) []*fyne.MenuItem {
	if a.Review == nil && a.Merge == nil && a.Update == nil && a.CreatePR == nil {
		return nil
	}
	ws := w.Workspace
	ok := !w.Deleting
	hasBranch := ok && ws.Branch != ""
	bind := func(on bool, fn func(workspace.Workspace)) func() {
		if !on || fn == nil {
			return nil
		}
		return func() { fn(ws) }
	}
	var update, updateMerge, pr func()
	if hasBranch && a.Update != nil && !w.Updating {
		update = func() { a.Update(w, workspace.UpdateRebase) }
		updateMerge = func() { a.Update(w, workspace.UpdateMerge) }
	}
	if hasBranch && a.CreatePR != nil && !w.CreatingPR {
		pr = func() { a.CreatePR(w) }
	}
	items := []*fyne.MenuItem{
		actionItem(LabelReview, bind(ok, a.Review)),
		actionItem(LabelMergeInto(w.Base), bind(hasBranch, a.Merge)),
	}
	if w.Updating {
		items = append(items, disabled(LabelUpdatingFrom(w.Base)))
	} else {
		items = append(items, actionItem(LabelUpdateFrom(w.Base), update), actionItem(LabelUpdateFromMerge(w.Base), updateMerge))
	}
	prLabel := LabelCreatePR
	if w.CreatingPR {
		prLabel = LabelCreatingPR
	}
	return append(items, actionItem(prLabel, pr), fyne.NewMenuItemSeparator())
}

// landActions are the tray's LandActions: the windows open in window
// processes; an update or pull request runs in the background, its item
// off meanwhile, and ends in a notification, or a window when it failed.
func (t *Tray) landActions() LandActions {
	l := t.deps.Landing
	if l == nil {
		return LandActions{}
	}
	return LandActions{
		Review: func(ws workspace.Workspace) { t.win.Open(window.Spec{Kind: window.KindReview, Workspace: ws}) },
		Merge:  func(ws workspace.Workspace) { t.win.Open(window.Spec{Kind: window.KindMerge, Workspace: ws}) },
		Update: func(w WorkspaceState, mode workspace.UpdateMode) {
			path, base := w.Workspace.Path, w.Base
			t.flag(path, func(s *WorkspaceState) { s.Updating = true })
			t.background(func(ctx context.Context) {
				res, err := l.UpdateFromBase(ctx, path, mode)
				t.flag(path, func(s *WorkspaceState) { s.Updating = false })
				if err != nil {
					t.do(func() { t.win.ShowError(titleUpdateFromPrefix+orBase(base), err) })
					return
				}
				t.do(func() { t.sendNotices([]Notice{UpdateNotice(w.Workspace, res)}) })
			})
		},
		CreatePR: func(w WorkspaceState) {
			path := w.Workspace.Path
			t.flag(path, func(s *WorkspaceState) { s.CreatingPR = true })
			t.background(func(ctx context.Context) {
				pr, err := l.CreatePullRequest(ctx, path, workspace.PullRequestOptions{})
				t.flag(path, func(s *WorkspaceState) { s.CreatingPR = false })
				switch {
				case err != nil:
					t.do(func() { t.win.ShowError(titleCreatePR, err) })
				case pr.URL == "":
					t.do(func() { t.win.ShowError(titleCreatePR, noPullRequest(pr)) })
				default:
					t.do(func() { t.sendNotices([]Notice{PullRequestNotice(w.Workspace, pr)}) })
				}
			})
		},
	}
}

// flag sets or clears a flag of the workspace at path with set, and
// shows it.
func (t *Tray) flag(path string, set func(s *WorkspaceState)) {
	t.mu.Lock()
	t.update(path, set)
	t.mu.Unlock()
	t.publish()
}

// UpdateNotice tells how an update from the base went: the workspace's
// new head, or that it had all of its base already.
func UpdateNotice(ws workspace.Workspace, r workspace.UpdateResult) Notice {
	name := window.WorkspaceTitle(ws)
	if !r.Updated {
		return Notice{Title: noticeUpToDate, Content: fmt.Sprintf("%s already has all of %s.", name, r.Base)}
	}
	how := fmt.Sprintf("rebased onto %s", r.Base)
	if r.Mode == workspace.UpdateMerge {
		how = fmt.Sprintf("merged with %s", r.Base)
	}
	return Notice{Title: noticeUpdated, Content: fmt.Sprintf("%s was %s: its head is %s now (was %s).", name, how, shortCommit(r.NewHead), shortCommit(r.OldHead))}
}

// PullRequestNotice tells where the workspace's new pull request is.
func PullRequestNotice(ws workspace.Workspace, pr workspace.PullRequest) Notice {
	return Notice{Title: noticePullRequest, Content: fmt.Sprintf("%s → %s: %s", window.WorkspaceTitle(ws), pr.Base, pr.URL)}
}

// noPullRequest is why no pull request was opened: its Note, which says
// whether the branch was pushed, or what the answer tells when it has
// none.
func noPullRequest(pr workspace.PullRequest) error {
	switch {
	case pr.Note != "":
		return errors.New(pr.Note)
	case pr.Pushed:
		return fmt.Errorf("the branch %s was pushed to %s, but the pull request command printed no address", pr.Branch, pr.Remote)
	}
	return errors.New("nothing was pushed and no pull request was opened")
}

// shortCommit is a commit's abbreviated name.
func shortCommit(c string) string {
	if len(c) > 10 {
		return c[:10]
	}
	return c
}
