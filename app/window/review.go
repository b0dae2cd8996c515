package window

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/widget"

	"codehydra/workspace"
)

// reviewDialog is the "Review changes" window of a workspace: the files it
// changed against its base, the diff of the chosen one (a tap on a line
// picks it for a comment), comments on files and lines, a summary, and
// Send to agent; then what became of the review, under the deliveries of
// the reviews sent before.
type reviewDialog struct {
	u   *UI
	win fyne.Window
	ws  workspace.Workspace
	ctx context.Context
	// stop ends the window's background work (the deliveries' refresh).
	stop context.CancelFunc

	head   *widget.Label
	reload *widget.Button
	files  *widget.List
	// changes are the files listed; chosen is the index of the one shown,
	// -1 for none.
	changes []workspace.FileChange
	chosen  int

	fileHead *widget.Label
	view     *diffView
	more     *widget.Button
	parser   patchParser
	// next is where the next page of the chosen file's patch starts, 0
	// when it has been read to its end; total is the patch's size.
	next, total int
	// lists and pages count the diffs asked for, so that a late answer
	// (for a file no longer chosen) is dropped.
	lists, pages int

	line        *field
	text        *entry
	add         *widget.Button
	comments    []workspace.ReviewComment
	commentList *fyne.Container
	summary     *entry
	send        *widget.Button
	status      *widget.Label
	deliveries  *widget.Label
	sending     bool
	// sent is the ID of the review sent from this window, whose state
	// the status line follows; polling is true while the deliveries are
	// read again in a while.
	sent    string
	polling bool
}

// The Review window's sizes.
const (
	reviewWidth, reviewHeight = 1040, 760
	// reviewPolling is how often the deliveries are read again while one
	// waits for the agent.
	reviewPolling = 2 * time.Second
)

// openReview opens the Review window of ws, or brings its open one
// forward (and returns nil).
func (u *UI) openReview(ws workspace.Workspace) *reviewDialog {
	if u.deps.Landing == nil {
		u.ShowError("Review changes", errNoLanding)
		return nil
	}
	var d *reviewDialog
	u.window(Spec{Kind: KindReview, Workspace: ws}, func() (fyne.Window, func()) {
		d = u.newReviewDialog(ws)
		return d.win, d.stop
	})
	return d
}

// errNoLanding is what a review or merge window says in an app that cannot
// review or land.
var errNoLanding = errors.New("this CodeHydra cannot review or merge workspaces")

func (u *UI) newReviewDialog(ws workspace.Workspace) *reviewDialog {
	d := &reviewDialog{u: u, ws: ws, chosen: -1, win: u.app.NewWindow("Review changes: " + WorkspaceTitle(ws))}
	d.ctx, d.stop = context.WithCancel(u.ctx)

	d.head = widget.NewLabelWithStyle("Reading the changes…", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	d.head.Wrapping = fyne.TextWrapWord
	d.reload = widget.NewButton("Reload", d.load)
	d.files = widget.NewList(
		func() int { return len(d.changes) },
		func() fyne.CanvasObject {
			l := widget.NewLabel("")
			l.Truncation = fyne.TextTruncateEllipsis
			return l
		},
		func(i widget.ListItemID, o fyne.CanvasObject) { o.(*widget.Label).SetText(FileLine(d.changes[i])) },
	)
	d.files.OnSelected = func(i widget.ListItemID) { d.choose(i) }

	d.fileHead = widget.NewLabelWithStyle("Choose a file to see its diff.", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	d.fileHead.Truncation = fyne.TextTruncateEllipsis
	d.view = newDiffView()
	d.view.onPick = d.pickLine
	d.more = widget.NewButton("Show more of the diff", d.loadMore)
	d.more.Hide()

	d.line = newField(validateLines)
	d.line.SetPlaceHolder("whole file")
	d.text = newEntry()
	d.text.MultiLine = true
	d.text.Wrapping = fyne.TextWrapWord
	d.text.SetMinRowsVisible(2)
	d.text.SetPlaceHolder("Your comment on the chosen file and line")
	d.text.OnChanged = func(string) { d.refreshButtons() }
	d.line.onEdit = func(string) { d.refreshButtons() }
	d.add = widget.NewButton("Add comment", d.addComment)
	d.commentList = container.NewVBox()
	d.summary = newEntry()
	d.summary.MultiLine = true
	d.summary.Wrapping = fyne.TextWrapWord
	d.summary.SetMinRowsVisible(3)
	d.summary.SetPlaceHolder("Summary: what the agent should do next")
	d.summary.OnChanged = func(string) { d.refreshButtons() }
	d.send = widget.NewButton("Send to agent", d.submit)
	d.send.Importance = widget.HighImportance
	d.status = statusLabel()
	d.deliveries = statusLabel()

	lineLabel := widget.NewLabel("Line:")
	commentRow := container.NewBorder(nil, nil,
		container.NewHBox(lineLabel, container.NewGridWrap(fyne.NewSize(110, d.line.MinSize().Height), d.line.entry)),
		d.add, d.text)
	diffPane := container.NewBorder(d.fileHead,
		container.NewVBox(d.more, commentRow, d.line.reason,
			widget.NewLabel("Tap a line of the diff to pick it, or type a line or a range (12-15); empty comments on the whole file.")),
		nil, nil, d.view)
	split := container.NewHSplit(d.files, diffPane)
	split.Offset = 0.28

	closeButton := widget.NewButton("Close", d.win.Close)
	comments := container.NewVScroll(d.commentList)
	comments.SetMinSize(fyne.NewSize(0, 96))
	bottom := container.NewVBox(
		widget.NewSeparator(),
		widget.NewLabelWithStyle("Comments", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		comments,
		d.summary,
		d.status,
		d.deliveries,
		container.NewHBox(layout.NewSpacer(), closeButton, d.send),
	)
	d.win.SetContent(container.NewBorder(container.NewBorder(nil, nil, nil, d.reload, d.head), bottom, nil, nil, split))
	d.win.Resize(fyne.NewSize(reviewWidth, reviewHeight))
	answerEscape(d.win, d.win.Close, d.line.entry, d.text, d.summary)

	d.showComments()
	d.refreshButtons()
	d.load()
	d.showDeliveries(u.deps.Landing.Reviews(ws.Path))
	return d
}

// load reads the list of changed files, and the chosen file's diff again.
func (d *reviewDialog) load() {
	d.reload.Disable()
	d.lists++
	seq := d.lists
	d.u.background(func(context.Context) {
		// One byte of patch: only the list is wanted here.
		diff, err := d.u.deps.Landing.Diff(d.ctx, d.ws.Path, workspace.DiffOptions{MaxBytes: 1})
		d.u.do(func() {
			d.reload.Enable()
			if seq != d.lists {
				return
			}
			if err != nil {
				say(d.head, "Could not read the changes: "+UserMessage(err), true)
				d.head.TextStyle = fyne.TextStyle{}
				return
			}
			d.showFiles(diff)
		})
	})
}

// showFiles lists the files of diff, keeping the chosen one chosen.
func (d *reviewDialog) showFiles(diff workspace.Diff) {
	was := ""
	if d.chosen >= 0 && d.chosen < len(d.changes) {
		was = d.changes[d.chosen].Path
	}
	d.changes = diff.Files
	d.head.Importance = widget.MediumImportance
	d.head.TextStyle = fyne.TextStyle{Bold: true}
	d.head.SetText(ChangesHead(d.ws, diff))
	d.files.UnselectAll()
	d.chosen = -1
	d.files.Refresh()
	for i, f := range d.changes {
		if f.Path == was || (was == "" && i == 0) {
			d.files.Select(i)
			return
		}
	}
	d.view.setLines(nil)
	d.more.Hide()
	d.fileHead.SetText("No file changed.")
	d.refreshButtons()
}

// ChangesHead is the first line of the Review window: the branch, its base
// and what changed, e.g. "feat against main: 3 files changed, +12 −4".
func ChangesHead(ws workspace.Workspace, diff workspace.Diff) string {
	name := ws.Name
	if ws.Branch != "" && ws.Branch != ws.Name {
		name += " (branch " + ws.Branch + ")"
	}
	if len(diff.Files) == 0 {
		return fmt.Sprintf("%s against %s: nothing changed.", name, diff.Base)
	}
	add, del := 0, 0
	for _, f := range diff.Files {
		add += f.Additions
		del += f.Deletions
	}
	more := ""
	if diff.FilesTruncated {
		more = fmt.Sprintf(" (only the first %d are listed)", len(diff.Files))
	}
	return fmt.Sprintf("%s against %s: %s changed%s, +%d −%d", name, diff.Base, plural(len(diff.Files), "file"), more, add, del)
}

// FileLine is a changed file as the Review window lists it: its status,
// path and counts, e.g. "M app/menu.go  +12 −3", "B logo.png  binary".
func FileLine(f workspace.FileChange) string {
	mark := map[string]string{"added": "A", "modified": "M", "deleted": "D", "renamed": "R"}[f.Status]
	if mark == "" {
		mark = "?"
	}
	name := f.Path
	if f.OldPath != "" {
		name = f.OldPath + " → " + f.Path
	}
	switch {
	case f.Withheld:
		return fmt.Sprintf("%s %s  withheld", mark, name)
	case f.Binary:
		return fmt.Sprintf("%s %s  binary", mark, name)
	}
	return fmt.Sprintf("%s %s  +%d −%d", mark, name, f.Additions, f.Deletions)
}

// choose shows the diff of the i-th file.
func (d *reviewDialog) choose(i int) {
	if i < 0 || i >= len(d.changes) {
		return
	}
	d.chosen = i
	f := d.changes[i]
	d.line.SetText("")
	d.view.setLines(nil)
	d.more.Hide()
	d.pages++
	d.parser = patchParser{}
	d.next, d.total = 0, 0
	d.refreshButtons()
	switch {
	case f.Withheld:
		d.fileHead.SetText(f.Path + ": withheld (on the deny list); its change is not shown, but you can comment on the file.")
		return
	case f.Binary:
		d.fileHead.SetText(f.Path + ": a binary file; it differs, and has no text to show.")
		return
	}
	d.fileHead.SetText(FileLine(f) + "  (reading…)")
	d.readPage(0)
}

// readPage reads the chosen file's patch from offset and adds it to the
// view.
func (d *reviewDialog) readPage(offset int) {
	f := d.changes[d.chosen]
	d.pages++
	seq := d.pages
	d.more.Disable()
	d.u.background(func(context.Context) {
		diff, err := d.u.deps.Landing.Diff(d.ctx, d.ws.Path, workspace.DiffOptions{File: f.Path, Offset: offset})
		d.u.do(func() {
			if seq != d.pages {
				return
			}
			d.more.Enable()
			if err != nil {
				d.fileHead.SetText(f.Path + ": could not read its diff: " + UserMessage(err))
				return
			}
			d.showPage(f, diff)
		})
	})
}

// showPage adds a page of the chosen file's patch.
func (d *reviewDialog) showPage(f workspace.FileChange, diff workspace.Diff) {
	d.next, d.total = diff.NextOffset, diff.TotalBytes
	d.view.appendLines(d.parser.add(diff.Patch, diff.NextOffset == 0))
	d.fileHead.SetText(FileLine(f))
	if d.next == 0 {
		d.more.Hide()
		return
	}
	d.more.SetText(fmt.Sprintf("Show more of the diff (%s of %s shown)", kib(d.next), kib(d.total)))
	d.more.Show()
}

func kib(n int) string { return fmt.Sprintf("%d KiB", (n+1023)/1024) }

// loadMore reads the next page of the chosen file's patch.
func (d *reviewDialog) loadMore() {
	if d.chosen >= 0 && d.next > 0 {
		d.readPage(d.next)
	}
}

// pickLine takes the line of the diff tapped as the comment's line.
func (d *reviewDialog) pickLine(i int) {
	if l := d.view.lines[i]; l.Line > 0 {
		d.line.SetText(strconv.Itoa(l.Line))
	}
}

// validateLines checks a comment's line: empty, a number, or a range
// "12-15", from 1.
func validateLines(s string) error {
	_, _, err := parseLines(s)
	return err
}

// parseLines reads a comment's lines: 0, 0 for the whole file.
func parseLines(s string) (line, end int, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, 0, nil
	}
	a, b, isRange := strings.Cut(s, "-")
	bad := errors.New("a line is a number from 1, or a range such as 12-15")
	if line, err = strconv.Atoi(strings.TrimSpace(a)); err != nil || line < 1 {
		return 0, 0, bad
	}
	if !isRange {
		return line, 0, nil
	}
	if end, err = strconv.Atoi(strings.TrimSpace(b)); err != nil || end < line {
		return 0, 0, errors.New("a range goes from its first line to a later one, such as 12-15")
	}
	if end == line {
		end = 0
	}
	return line, end, nil
}

// addComment adds the typed comment on the chosen file and line.
func (d *reviewDialog) addComment() {
	line, end, err := parseLines(d.line.Text)
	text := strings.TrimSpace(d.text.Text)
	if err != nil || text == "" || d.chosen < 0 {
		return
	}
	d.comments = append(d.comments, workspace.ReviewComment{File: d.changes[d.chosen].Path, Line: line, EndLine: end, Text: text})
	d.text.SetText("")
	d.showComments()
	d.refreshButtons()
}

// CommentPlace is where a comment is: "a.go", "a.go:12" or "a.go:12-15".
func CommentPlace(c workspace.ReviewComment) string {
	switch {
	case c.Line == 0:
		return c.File
	case c.EndLine > c.Line:
		return fmt.Sprintf("%s:%d-%d", c.File, c.Line, c.EndLine)
	}
	return fmt.Sprintf("%s:%d", c.File, c.Line)
}

// showComments lists the comments, each with Remove.
func (d *reviewDialog) showComments() {
	d.commentList.RemoveAll()
	if len(d.comments) == 0 {
		d.commentList.Add(widget.NewLabel("No comments yet: choose a file, pick a line, write, then Add comment."))
	}
	for i, c := range d.comments {
		l := widget.NewLabel(CommentPlace(c) + ": " + oneLine(c.Text))
		l.Truncation = fyne.TextTruncateEllipsis
		d.commentList.Add(container.NewBorder(nil, nil, nil, widget.NewButton("Remove", func() { d.removeComment(i) }), l))
	}
	d.commentList.Refresh()
}

// oneLine is s with its line breaks as spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func (d *reviewDialog) removeComment(i int) {
	if i < 0 || i >= len(d.comments) {
		return
	}
	d.comments = append(d.comments[:i:i], d.comments[i+1:]...)
	d.showComments()
	d.refreshButtons()
}

// refreshButtons enables what can be done now.
func (d *reviewDialog) refreshButtons() {
	_, _, lineErr := parseLines(d.line.Text)
	setEnabled(d.add, d.chosen >= 0 && lineErr == nil && strings.TrimSpace(d.text.Text) != "")
	setEnabled(d.send, !d.sending && (len(d.comments) > 0 || strings.TrimSpace(d.summary.Text) != ""))
}

// submit sends the comments and summary to the workspace's agent.
func (d *reviewDialog) submit() {
	if d.sending {
		return
	}
	r := workspace.Review{Summary: strings.TrimSpace(d.summary.Text), Comments: d.comments}
	if r.Summary == "" && len(r.Comments) == 0 {
		return
	}
	d.sending = true
	d.refreshButtons()
	say(d.status, "Sending the review…", false)
	d.u.background(func(context.Context) {
		l := d.u.deps.Landing
		delivery, err := l.SendReview(d.ws.Path, r)
		all := l.Reviews(d.ws.Path)
		d.u.do(func() {
			d.sending = false
			if err != nil {
				say(d.status, "The review was not sent: "+UserMessage(err)+"\nYour comments are kept; fix the cause and send again.", true)
				d.refreshButtons()
				return
			}
			d.comments = nil
			d.summary.SetText("")
			d.showComments()
			d.refreshButtons()
			d.sent = delivery.ID
			d.showSent(delivery)
			d.showDeliveries(all)
		})
	})
}

// DeliveryState says where a review is: waiting for the agent, delivered,
// or not delivered and why.
func DeliveryState(r workspace.ReviewDelivery) string {
	switch r.State {
	case workspace.DeliveryPending:
		return "waiting for the agent to be ready."
	case workspace.DeliveryDelivered:
		return "delivered to the agent."
	case workspace.DeliveryFailed:
		return "not delivered: " + r.Error
	}
	return string(r.State)
}

// DeliveryLine is a review sent before, as the window lists it.
func DeliveryLine(r workspace.ReviewDelivery) string {
	from := ""
	if r.From != "" && r.From != "user" {
		from = " by " + baseName(r.From)
	}
	return fmt.Sprintf("• %s%s, %s: %s", r.Sent.Local().Format("Jan 2 15:04"), from, plural(r.Comments, "comment"), DeliveryState(r))
}

// showDeliveries lists the reviews sent, and reads them again in a while
// as long as one waits for the agent.
func (d *reviewDialog) showDeliveries(all []workspace.ReviewDelivery) {
	if len(all) == 0 {
		say(d.deliveries, "", false)
		return
	}
	lines := []string{"Reviews sent to this agent:"}
	pending := false
	for _, r := range all {
		lines = append(lines, DeliveryLine(r))
		pending = pending || r.State == workspace.DeliveryPending
		if r.ID == d.sent {
			d.showSent(r)
		}
	}
	say(d.deliveries, strings.Join(lines, "\n"), false)
	if pending && !d.polling {
		d.polling = true
		d.u.background(func(context.Context) {
			select {
			case <-d.ctx.Done():
				return
			case <-time.After(reviewPolling):
			}
			all := d.u.deps.Landing.Reviews(d.ws.Path)
			d.u.do(func() {
				d.polling = false
				d.showDeliveries(all)
			})
		})
	}
}

// showSent says what became of the review sent from this window.
func (d *reviewDialog) showSent(r workspace.ReviewDelivery) {
	say(d.status, "Review sent: "+DeliveryState(r), r.State == workspace.DeliveryFailed)
}
