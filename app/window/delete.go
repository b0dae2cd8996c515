package window

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/widget"

	"codehydra/workspace"
)

// deleteDialog is the "Delete workspace" window: what would be lost, a
// keep-branch choice, then the delete's progress, step by step, from the
// manager's delete-progress events, with Retry when a step fails, and
// Delete anyway when the project's teardown failed.
type deleteDialog struct {
	u   *UI
	win fyne.Window
	ws  workspace.Workspace

	// warning says what would be lost (the changed and untracked files,
	// unmerged commits) once the status is read.
	warning *widget.Label
	// openFolder shows the workspace's folder, to look before deleting.
	openFolder *widget.Button
	keepBranch *widget.Check
	progress   *widget.ProgressBar
	step       *widget.Label
	status     *widget.Label
	del        *widget.Button
	cancel     *widget.Button
	// anyway deletes in spite of a failed teardown (DeleteOptions.Force);
	// shown only after one.
	anyway *widget.Button

	// merged is the verified merge the delete follows (zero otherwise):
	// the workspace's commits are not lost then, even when they are not
	// in the target's history (a squash), as long as its HEAD is still
	// the head the merge verified. stillMerged says the check found it so
	// (mergeChecked: the check is done); only then is the workspace
	// treated as merged, and its delete expects that head. startClean
	// starts the delete as soon as the check finds no uncommitted change
	// (the Merge window's "delete after").
	merged                    mergedAt
	mergeChecked, stillMerged bool
	startClean                bool

	// branchKnown: the dialog has learned whether CodeHydra created the
	// branch. Only then does an unticked "Keep the branch" ask to delete a
	// branch that existed before the workspace; a Delete clicked before
	// that leaves such a branch, as the domain does by default.
	branchKnown, branchCreated bool

	running bool
	done    bool
	// failShown: a failure of the current attempt is on screen. Both the
	// delete-failed event and Delete's error report one failure; the
	// event's names the step, so it wins.
	failShown bool
	// stop ends the watch of the manager's events.
	stop context.CancelFunc
}

// mergedAt is a verified merge: the branch merged into and the
// workspace's head the merge verified (MergeResult.Head).
type mergedAt struct{ target, head string }

// openDelete opens the delete window of ws, or brings its open one forward
// (and returns nil).
func (u *UI) openDelete(ws workspace.Workspace) *deleteDialog {
	return u.openDeleteAfterMerge(ws, mergedAt{}, false)
}

// openDeleteAfterMerge opens the delete window of ws after the verified
// merge m (zero for none); start starts the delete as soon as the
// workspace is found to have no uncommitted change, which otherwise the
// window shows and waits for the user. An open delete window of ws is
// brought forward instead (and nil returned).
func (u *UI) openDeleteAfterMerge(ws workspace.Workspace, m mergedAt, start bool) *deleteDialog {
	var d *deleteDialog
	u.window(Spec{Kind: KindDelete, Workspace: ws}, func() (fyne.Window, func()) {
		d = u.newDeleteDialog(ws, m, start)
		// A delete that runs already (an agent's) or failed shows as such.
		switch p := u.deps.Tray.DeleteProgress(ws.Path); {
		case p.Running:
			d.showStep(p.Step)
		case p.Err != "":
			d.showFailure(p.Step, p.Err)
		}
		return d.win, d.stop
	})
	return d
}

func (u *UI) newDeleteDialog(ws workspace.Workspace, merged mergedAt, startClean bool) *deleteDialog {
	d := &deleteDialog{u: u, ws: ws, merged: merged, startClean: startClean, win: u.app.NewWindow("Delete workspace")}
	intro := widget.NewLabel(fmt.Sprintf("Delete workspace %s?\nIts folder %s is removed, with its agent.", WorkspaceTitle(ws), ws.Path))
	intro.Wrapping = fyne.TextWrapWord
	d.warning = statusLabel()
	say(d.warning, "Checking for work that would be lost…", false)
	d.keepBranch = widget.NewCheck("Keep the branch", nil)
	if ws.Branch == "" {
		d.keepBranch.Text = "Keep the branch (detached HEAD: there is none)"
		d.keepBranch.Disable()
	} else {
		d.keepBranch.Text = "Keep the branch " + ws.Branch + " and its metadata"
	}
	d.progress = widget.NewProgressBar()
	d.progress.Max = 1
	d.progress.Hide()
	d.step = widget.NewLabel("")
	d.step.Hide()
	d.status = statusLabel()
	d.del = widget.NewButton("Delete", d.submit)
	d.del.Importance = widget.DangerImportance
	d.cancel = widget.NewButton("Cancel", d.win.Close)
	d.anyway = widget.NewButton("Delete anyway", func() { d.start(true) })
	d.anyway.Importance = widget.DangerImportance
	d.anyway.Hide()
	d.openFolder = widget.NewButton("Open folder", d.showFolder)

	d.win.SetContent(container.NewVBox(
		intro, d.warning, d.keepBranch, d.progress, d.step, d.status,
		container.NewHBox(d.openFolder, layout.NewSpacer(), d.cancel, d.anyway, d.del),
	))
	d.win.Resize(fyne.NewSize(480, 0))
	answerEscape(d.win, d.win.Close)

	// Watch before anything can start a delete, so that no step is missed,
	// including those of a delete an agent started.
	ctx, stop := context.WithCancel(u.ctx)
	d.stop = stop
	u.follow(ctx, nil, d.onEvents)
	u.background(func(context.Context) {
		st, err := u.deps.Workspaces.Status(ctx, ws.Path)
		var c workspace.Changes
		if err == nil && st.IsDirty {
			c, err = u.deps.Workspaces.Changes(ctx, ws.Path)
		}
		still := err == nil && d.headIsMerged(ctx)
		u.do(func() {
			d.mergeChecked, d.stillMerged = true, still
			d.showStatus(st, c, err)
			d.offerKeepBranch()
		})
	})
	if ws.Branch != "" {
		u.background(func(context.Context) {
			created, err := u.deps.Workspaces.BranchCreated(ctx, ws.Path)
			u.do(func() { d.showBranchOrigin(created, err) })
		})
	}
	return d
}

// headIsMerged reads whether the workspace's HEAD is still the head the
// merge it follows verified: a commit since is work the merge did not
// land. False when no merge is followed or the head cannot be read.
func (d *deleteDialog) headIsMerged(ctx context.Context) bool {
	if d.merged.head == "" || d.u.deps.Landing == nil {
		return false
	}
	pf, err := d.u.deps.Landing.Preflight(ctx, d.ws.Path, workspace.MergeOptions{Target: d.merged.target})
	return err == nil && pf.Head == d.merged.head
}

// showBranchOrigin learns whether CodeHydra created the branch; see
// offerKeepBranch.
func (d *deleteDialog) showBranchOrigin(created bool, err error) {
	if err != nil || d.running || d.done {
		return
	}
	d.branchKnown, d.branchCreated = true, created
	d.offerKeepBranch()
}

// offerKeepBranch offers to keep, ticked, a branch that existed before
// the workspace: deleting the workspace does not take it unless the user
// unticks the box. After a verified merge that the workspace has not moved
// from since, the branch's work is in the target: it goes with the
// workspace unless the user ticks the box.
func (d *deleteDialog) offerKeepBranch() {
	if !d.branchKnown || d.branchCreated || d.running || d.done || d.merged.target != "" && !d.mergeChecked || d.stillMerged {
		return
	}
	d.keepBranch.Text = "Keep the branch " + d.ws.Branch + " and its metadata (it existed before this workspace)"
	d.keepBranch.SetChecked(true)
	d.keepBranch.Refresh()
}

// onEvents shows the steps and failures of this workspace's delete.
func (d *deleteDialog) onEvents(batch []workspace.Event) {
	for _, e := range batch {
		if e.Workspace.Path != d.ws.Path {
			continue
		}
		switch e.Kind {
		case workspace.EventDeleteProgress:
			d.u.do(func() { d.showStep(e.Step) })
		case workspace.EventDeleteFailed:
			d.u.do(func() { d.showFailure(e.Step, e.Err) })
		}
	}
}

// shownFiles is how many changed files the delete warning names.
const shownFiles = 5

// Warnings are what deleting a workspace with status st and changes c
// would lose; the first few changed and untracked files are named.
func Warnings(st workspace.Status, c workspace.Changes) []string {
	var w []string
	if st.IsDirty {
		w = append(w, "It has uncommitted changes: they will be lost."+fileList(c))
	}
	if st.Ahead > 0 {
		base := st.Base
		if base == "" {
			base = "its base"
		}
		them := "they are"
		if st.Ahead == 1 {
			them = "it is"
		}
		w = append(w, fmt.Sprintf("Its branch has %s not merged into %s: %s lost unless you keep the branch.",
			plural(st.Ahead, "commit"), base, them))
	}
	return w
}

// fileList names the first shownFiles files of c, one a line, changed
// ones first, and says how many more there are; "" when c lists none.
func fileList(c workspace.Changes) string {
	var lines []string
	for _, f := range c.Changed {
		lines = append(lines, "  • "+f+" (changed)")
	}
	for _, f := range c.Untracked {
		lines = append(lines, "  • "+f+" (untracked)")
	}
	if len(lines) == 0 {
		return ""
	}
	more := ""
	if len(lines) > shownFiles {
		more = "\n  and " + plural(len(lines)-shownFiles, "more file")
		lines = lines[:shownFiles]
	}
	return "\n" + strings.Join(lines, "\n") + more
}

// showFolder opens the workspace's folder in the file manager, saying so
// in the dialog when none can be opened.
func (d *deleteDialog) showFolder() {
	path := d.ws.Path
	d.u.background(func(context.Context) {
		failed := func(err error) {
			d.u.do(func() { say(d.status, err.Error()+" The folder is "+path+".", true) })
		}
		if err := d.u.openFolder(path, failed); err != nil {
			failed(err)
		}
	})
}

func (d *deleteDialog) showStatus(st workspace.Status, c workspace.Changes, err error) {
	if err != nil {
		say(d.warning, "Could not check for uncommitted changes or unmerged commits ("+UserMessage(err)+"); look before you delete.", true)
		return
	}
	var moved []string
	switch {
	case d.stillMerged:
		// The merge verified that the target holds the branch's work.
		st.Ahead = 0
		if !st.IsDirty {
			say(d.warning, "Its work is merged into "+d.merged.target+" (verified); nothing is lost.", false)
			if d.startClean && !d.running && !d.done {
				d.submit()
			}
			return
		}
	case d.merged.target != "":
		moved = []string{"It has moved since its merge into " + d.merged.target + " was verified (or that cannot be read): what it has now is not known to be merged."}
	}
	if w := append(moved, Warnings(st, c)...); len(w) > 0 {
		if d.merged.target != "" && d.startClean {
			w = append(w, "So the delete waits for you: these changes are not in what was merged.")
		}
		say(d.warning, strings.Join(w, "\n"), true)
		if st.Ahead > 0 && d.ws.Branch != "" && !d.running {
			d.keepBranch.SetChecked(true)
		}
		return
	}
	say(d.warning, "No uncommitted changes and no unmerged commits.", false)
}

// submit starts the delete, or retries it after a failure.
func (d *deleteDialog) submit() { d.start(false) }

// start starts the delete; force deletes although the project's teardown
// fails.
func (d *deleteDialog) start(force bool) {
	if d.running || d.done {
		return
	}
	d.running = true
	d.failShown = false
	d.anyway.Hide()
	opts := workspace.DeleteOptions{KeepBranch: d.keepBranch.Checked, DeleteBranch: (d.branchKnown || d.stillMerged) && !d.keepBranch.Checked, Force: force}
	if d.stillMerged {
		// Work done since the check is not lost: the delete, once the
		// agent is stopped, refuses a workspace that moved.
		opts.ExpectHead = d.merged.head
	}
	d.del.Disable()
	d.keepBranch.Disable()
	d.cancel.SetText("Close")
	say(d.status, "", false)
	d.showStep(workspace.StepStopAgent)
	d.u.background(func(ctx context.Context) {
		err := d.u.deps.Workspaces.Delete(ctx, d.ws.Path, opts)
		d.u.do(func() {
			if err == nil {
				d.showStep(workspace.StepDone)
				return
			}
			d.showFailure("", UserMessage(err))
		})
	})
}

// StepText says what a delete step does.
func StepText(s workspace.DeleteStep) string {
	switch s {
	case workspace.StepStopAgent:
		return "Stopping the agent…"
	case workspace.StepTeardown:
		return "Running the project's teardown…"
	case workspace.StepRemoveMetadata:
		return "Removing the workspace's metadata…"
	case workspace.StepRemoveWorktree:
		return "Removing the worktree folder…"
	case workspace.StepDeleteBranch:
		return "Deleting the branch…"
	case workspace.StepDone:
		return "Deleted."
	}
	return string(s)
}

// StepFraction is how far a delete is when step starts, 0 to 1.
func StepFraction(s workspace.DeleteStep) float64 {
	i := slices.Index(workspace.DeleteSteps, s)
	if i < 0 {
		return 0
	}
	return float64(i) / float64(len(workspace.DeleteSteps)-1)
}

func (d *deleteDialog) showStep(s workspace.DeleteStep) {
	if d.done {
		return
	}
	d.running = true
	d.del.Disable()
	d.keepBranch.Disable()
	d.progress.Show()
	d.step.Show()
	d.progress.SetValue(StepFraction(s))
	d.step.SetText(StepText(s))
	if s == workspace.StepDone {
		d.done = true
		d.win.Close()
	}
}

// showFailure reports a failed delete (step is "" when it failed before
// any step) and offers a retry; after a failed teardown, which removed
// nothing, also a delete without it.
func (d *deleteDialog) showFailure(step workspace.DeleteStep, msg string) {
	if d.done || (step == "" && d.failShown) {
		return
	}
	d.running, d.failShown = false, true
	where := ""
	if step != "" {
		where = " at step “" + strings.TrimSuffix(StepText(step), "…") + "”"
	}
	next := "Fix the cause, then press Retry."
	if step == workspace.StepTeardown {
		next = "Nothing was removed. Fix the teardown and press Retry, or press Delete anyway to delete it although the teardown failed."
		d.anyway.Show()
	}
	say(d.status, fmt.Sprintf("The delete failed%s: %s\n%s", where, msg, next), true)
	d.del.SetText("Retry")
	d.del.Enable()
	if d.ws.Branch != "" {
		d.keepBranch.Enable()
	}
}
