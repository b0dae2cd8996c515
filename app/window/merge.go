package window

import (
	"context"
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/widget"

	"codehydra/workspace"
)

// mergeDialog is the "Merge" window of a workspace: the strategy, "delete
// the workspace after", and the preflight's answer (read again when the
// strategy changes or the workspace's status does) before the Merge
// button, which is on only when the preflight says the merge can go. After
// the merge it shows the result and, once the merge is verified, deletes
// the workspace through the Delete window, or offers to.
type mergeDialog struct {
	u   *UI
	win fyne.Window
	ws  workspace.Workspace
	// stop ends the watch of the manager's events.
	stop context.CancelFunc

	head        *widget.Label
	strategy    *widget.RadioGroup
	deleteAfter *widget.Check
	preflight   *widget.Label
	verdict     *widget.Label
	recheck     *widget.Button
	status      *widget.Label
	merge       *widget.Button
	cancel      *widget.Button
	deleteWs    *widget.Button
	buttons     *fyne.Container

	// pf is the preflight of the chosen strategy, nil while it is read or
	// when it failed; checks counts the preflights asked for, so that a
	// late answer for another strategy is dropped.
	pf     *workspace.Preflight
	checks int
	// running while the merge runs; merged once it moved the target, and
	// verified once that was checked.
	running, merged, verified bool
	// target is the branch merged into, once the merge said it;
	// verifiedHead is the workspace's head the merge verified.
	target, verifiedHead string
	gone                 bool
}

// The strategies as the window offers them, in order.
var strategyChoices = []struct {
	label    string
	strategy workspace.Strategy
}{
	{"Merge commit", workspace.StrategyMerge},
	{"Squash into one commit", workspace.StrategySquash},
	{"Rebase, then fast-forward", workspace.StrategyRebase},
}

// openMerge opens the Merge window of ws, or brings its open one forward
// (and returns nil).
func (u *UI) openMerge(ws workspace.Workspace) *mergeDialog {
	if u.deps.Landing == nil {
		u.ShowError("Merge", errNoLanding)
		return nil
	}
	var d *mergeDialog
	u.window(Spec{Kind: KindMerge, Workspace: ws}, func() (fyne.Window, func()) {
		d = u.newMergeDialog(ws)
		return d.win, d.stop
	})
	return d
}

func (u *UI) newMergeDialog(ws workspace.Workspace) *mergeDialog {
	d := &mergeDialog{u: u, ws: ws, win: u.app.NewWindow("Merge: " + WorkspaceTitle(ws))}
	d.head = widget.NewLabelWithStyle(fmt.Sprintf("Merge %s into its base", branchName(ws)), fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	d.head.Wrapping = fyne.TextWrapWord
	labels := make([]string, len(strategyChoices))
	for i, c := range strategyChoices {
		labels[i] = c.label
	}
	d.strategy = widget.NewRadioGroup(labels, func(string) { d.check() })
	d.strategy.Required = true
	d.deleteAfter = widget.NewCheck("Delete the workspace after a verified merge (its folder, agent and branch)", nil)
	d.preflight = statusLabel()
	d.verdict = statusLabel()
	d.recheck = widget.NewButton("Check again", d.check)
	d.status = statusLabel()
	d.merge = widget.NewButton("Merge", d.submit)
	d.merge.Importance = widget.HighImportance
	d.cancel = widget.NewButton("Cancel", d.win.Close)
	d.deleteWs = widget.NewButton("Delete workspace…", func() { d.u.openDeleteAfterMerge(d.ws, mergedAt{d.target, d.verifiedHead}, false) })
	d.deleteWs.Hide()
	d.buttons = container.NewHBox(d.deleteWs, layout.NewSpacer(), d.cancel, d.merge)

	d.win.SetContent(container.NewVBox(
		d.head,
		widget.NewLabel("Strategy:"), d.strategy,
		d.deleteAfter,
		widget.NewSeparator(),
		container.NewBorder(nil, nil, nil, d.recheck, widget.NewLabelWithStyle("Before the merge", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})),
		d.preflight,
		d.verdict,
		d.status,
		d.buttons,
	))
	d.win.Resize(fyne.NewSize(560, 0))
	answerEscape(d.win, d.win.Close)

	ctx, stop := context.WithCancel(u.ctx)
	d.stop = stop
	u.follow(ctx, nil, d.onEvents)
	// Setting the first choice runs the first preflight.
	d.strategy.SetSelected(strategyChoices[0].label)
	return d
}

// branchName names the workspace's branch for a sentence.
func branchName(ws workspace.Workspace) string {
	if ws.Branch == "" {
		return ws.Name + " (detached HEAD)"
	}
	return ws.Branch
}

// chosen is the strategy chosen.
func (d *mergeDialog) chosen() workspace.Strategy {
	for _, c := range strategyChoices {
		if c.label == d.strategy.Selected {
			return c.strategy
		}
	}
	return workspace.StrategyMerge
}

// onEvents reads the preflight again when the workspace's status changes
// (a file changed, a commit), and notes the workspace's removal.
func (d *mergeDialog) onEvents(batch []workspace.Event) {
	for _, e := range batch {
		if e.Workspace.Path != d.ws.Path {
			continue
		}
		switch e.Kind {
		case workspace.EventStatusChanged:
			d.u.do(func() {
				if !d.running && !d.merged && !d.gone {
					d.check()
				}
			})
		case workspace.EventWorkspaceRemoved:
			d.u.do(d.showGone)
		}
	}
}

// check reads the preflight of the chosen strategy; Merge is off until it
// answers that the merge can go.
func (d *mergeDialog) check() {
	if d.running || d.merged || d.gone {
		return
	}
	d.checks++
	seq := d.checks
	d.pf = nil
	d.refreshButtons()
	say(d.preflight, "Checking whether the merge can go…", false)
	say(d.verdict, "", false)
	strategy := d.chosen()
	d.u.background(func(ctx context.Context) {
		pf, err := d.u.deps.Landing.Preflight(ctx, d.ws.Path, workspace.MergeOptions{Strategy: strategy})
		d.u.do(func() {
			if seq != d.checks || d.running || d.merged {
				return
			}
			if err != nil {
				say(d.preflight, "Could not check the merge: "+UserMessage(err), true)
				return
			}
			d.showPreflight(pf)
		})
	})
}

// showPreflight shows what the merge would do, and whether it can.
func (d *mergeDialog) showPreflight(pf workspace.Preflight) {
	d.pf = &pf
	if pf.Target != "" {
		d.head.SetText(fmt.Sprintf("Merge %s into %s", branchName(d.ws), pf.Target))
	}
	say(d.preflight, strings.Join(PreflightLines(pf), "\n"), false)
	say(d.verdict, PreflightVerdict(pf), !pf.CanMerge)
	d.refreshButtons()
}

// shownNames is how many files a preflight line names.
const shownNames = 5

// names lists the first shownNames of files, and says how many more.
func names(files []string) string {
	if len(files) <= shownNames {
		return strings.Join(files, ", ")
	}
	return strings.Join(files[:shownNames], ", ") + " and " + plural(len(files)-shownNames, "more file")
}

// PreflightLines are a preflight's answer as the Merge window says it:
// what would be merged, what is in the way (uncommitted files, conflicts,
// the target's checkout), and whether the merge can go.
func PreflightLines(pf workspace.Preflight) []string {
	var lines []string
	target, branch := pf.Target, pf.Branch
	switch {
	case pf.UpToDate:
		lines = append(lines, fmt.Sprintf("Nothing to merge: %s has all of %s's commits.", target, branch))
	default:
		line := fmt.Sprintf("%s has %s that %s lacks", branch, plural(pf.Ahead, "commit"), target)
		if pf.Behind > 0 {
			line += fmt.Sprintf("; %s has %s that %s lacks", target, plural(pf.Behind, "commit"), branch)
		}
		lines = append(lines, line+".")
	}
	if len(pf.Uncommitted) > 0 {
		lines = append(lines, "Uncommitted changes in the workspace (only commits are merged: commit or discard them first): "+names(pf.Uncommitted)+".")
	}
	if len(pf.Conflicts) > 0 {
		lines = append(lines, fmt.Sprintf("Conflicts with %s in: %s.", target, names(pf.Conflicts)))
	} else if !pf.UpToDate {
		lines = append(lines, fmt.Sprintf("No conflicts with %s.", target))
	}
	switch {
	case pf.CheckedOutAt == "":
		lines = append(lines, fmt.Sprintf("%s is not checked out in any worktree.", target))
	case len(pf.TargetDirty) > 0:
		lines = append(lines, fmt.Sprintf("%s is checked out at %s, which has changes: %s. The merge would move %s under them.", target, pf.CheckedOutAt, names(pf.TargetDirty), target))
	default:
		lines = append(lines, fmt.Sprintf("%s is checked out at %s, which is clean: it moves with the merge.", target, pf.CheckedOutAt))
	}
	return lines
}

// PreflightVerdict says whether the merge can go, and what stands in the
// way.
func PreflightVerdict(pf workspace.Preflight) string {
	switch {
	case pf.CanMerge:
		return "Ready to merge."
	case len(pf.Blockers) == 0:
		return "The merge cannot go."
	}
	return "The merge cannot go:\n  • " + strings.Join(pf.Blockers, "\n  • ")
}

// refreshButtons enables what can be done now.
func (d *mergeDialog) refreshButtons() {
	can := d.pf != nil && d.pf.CanMerge && !d.running && !d.merged && !d.gone
	setEnabled(d.merge, can)
	setEnabled(d.recheck, !d.running && !d.merged && !d.gone)
	setEnabled(d.strategy, !d.running && !d.merged && !d.gone)
	setEnabled(d.deleteAfter, !d.running && !d.merged && !d.gone)
}

// submit merges with the chosen strategy.
func (d *mergeDialog) submit() {
	if d.pf == nil || !d.pf.CanMerge || d.running || d.merged {
		return
	}
	d.running = true
	d.refreshButtons()
	say(d.status, "Merging…", false)
	o := workspace.MergeOptions{Strategy: d.chosen()}
	d.u.background(func(ctx context.Context) {
		res, err := d.u.deps.Landing.Merge(ctx, d.ws.Path, o)
		d.u.do(func() { d.showResult(res, err) })
	})
}

// showResult says what the merge did; a verified one deletes the
// workspace when asked to, or offers to.
func (d *mergeDialog) showResult(res workspace.MergeResult, err error) {
	d.running = false
	d.target = res.Preflight.Target
	if d.target == "" && d.pf != nil {
		d.target = d.pf.Target
	}
	if err != nil {
		say(d.status, "The merge failed: "+UserMessage(err)+"\nThe workspace is kept.", true)
		if res.Preflight.Target != "" {
			d.showPreflight(res.Preflight)
		}
		d.refreshButtons()
		if res.Preflight.Target == "" {
			d.check()
		}
		return
	}
	if !res.Merged {
		say(d.status, fmt.Sprintf("Nothing was merged: %s already has all of %s's work.", d.target, branchName(d.ws)), false)
		d.refreshButtons()
		return
	}
	d.merged = true
	say(d.verdict, "", false)
	d.cancel.SetText("Close")
	d.refreshButtons()
	moved := fmt.Sprintf("Merged %s into %s, which is at %s now.", branchName(d.ws), d.target, short(res.TargetHead))
	if !res.Verified {
		say(d.status, moved+"\nBut CodeHydra could not verify that "+d.target+" holds all of the workspace's work, so the workspace is kept: look at "+d.target+" before you delete it.", true)
		return
	}
	d.verified, d.verifiedHead = true, res.Head
	if d.deleteAfter.Checked {
		say(d.status, moved+" Verified: "+d.target+" holds all of its work.\nDeleting the workspace: the Delete window shows how it goes.", false)
		d.u.openDeleteAfterMerge(d.ws, mergedAt{d.target, d.verifiedHead}, true)
		return
	}
	say(d.status, moved+" Verified: "+d.target+" holds all of its work, so the workspace can go.", false)
	d.deleteWs.Show()
	d.buttons.Refresh()
}

// showGone notes that the workspace was deleted.
func (d *mergeDialog) showGone() {
	d.gone = true
	d.deleteWs.Hide()
	d.cancel.SetText("Close")
	d.refreshButtons()
	if d.merged {
		say(d.status, d.status.Text+"\nThe workspace is deleted.", false)
		return
	}
	say(d.status, "The workspace was deleted.", true)
}

// short is a commit's abbreviated name.
func short(commit string) string {
	if len(commit) > 10 {
		return commit[:10]
	}
	return commit
}
