package window

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"codehydra/app/internal/uitest"
	"codehydra/internal/testenv"
	"codehydra/workspace"
)

func TestPatchParserNumbersTheWorkspacesLinesAcrossHunksAndPages(t *testing.T) {
	patch := "diff --git a/a.go b/a.go\nindex 1..2 100644\n--- a/a.go\n+++ b/a.go\n" +
		"@@ -1,3 +1,3 @@ func a()\n one\n-two\n+TWO\n three\n" +
		"@@ -10,2 +10,3 @@\n ten\n+eleven\n eleven was twelve\n\\ No newline at end of file\n" +
		"diff --git a/b.go b/b.go\n--- a/b.go\n+++ b/b.go\n@@ -0,0 +1 @@\n+new\n"
	want := []diffLine{
		{'h', "diff --git a/a.go b/a.go", 0}, {'h', "index 1..2 100644", 0}, {'h', "--- a/a.go", 0}, {'h', "+++ b/a.go", 0},
		{'@', "@@ -1,3 +1,3 @@ func a()", 0}, {' ', "one", 1}, {'-', "two", 2}, {'+', "TWO", 2}, {' ', "three", 3},
		{'@', "@@ -10,2 +10,3 @@", 0}, {' ', "ten", 10}, {'+', "eleven", 11}, {' ', "eleven was twelve", 12}, {'\\', " No newline at end of file", 0},
		{'h', "diff --git a/b.go b/b.go", 0}, {'h', "--- a/b.go", 0}, {'h', "+++ b/b.go", 0}, {'@', "@@ -0,0 +1 @@", 0}, {'+', "new", 1},
	}
	for _, size := range []int{len(patch), 1, 7, 50} {
		var p patchParser
		var got []diffLine
		for off := 0; off < len(patch); off += size {
			end := min(off+size, len(patch))
			got = append(got, p.add(patch[off:end], end == len(patch))...)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("in pages of %d bytes:\n got %v\nwant %v", size, got, want)
		}
	}
}

func TestParseLinesTakesALineARangeOrTheWholeFile(t *testing.T) {
	for _, tc := range []struct {
		in        string
		line, end int
		bad       bool
	}{
		{"", 0, 0, false}, {"12", 12, 0, false}, {" 12-15 ", 12, 15, false}, {"7-7", 7, 0, false},
		{"0", 0, 0, true}, {"x", 0, 0, true}, {"15-12", 0, 0, true}, {"-3", 0, 0, true},
	} {
		line, end, err := parseLines(tc.in)
		if line != tc.line || end != tc.end || (err != nil) != tc.bad {
			t.Errorf("parseLines(%q) = %d, %d, %v", tc.in, line, end, err)
		}
	}
}

// reviewRepo is a real workspace "feat" with a committed change, a
// binary file and an untracked file, and the Review window's harness over
// it with a Landing whose diff is the real one.
func reviewRepo(t *testing.T) (*harness, *uitest.Landing, workspace.Workspace) {
	t.Helper()
	repo := testenv.GitRepo(t, "repo")
	testenv.CommitFile(t, repo, "a.txt", "one\ntwo\nthree\nfour\n", "a")
	m := uitest.RealManager(t, repo)
	ws, err := m.Create(context.Background(), workspace.CreateOptions{ProjectPath: repo, Name: "feat"})
	if err != nil {
		t.Fatal(err)
	}
	testenv.CommitFile(t, ws.Path, "a.txt", "one\nTWO\nthree\nfour\nfive\n", "change a")
	if err := os.WriteFile(filepath.Join(ws.Path, "logo.png"), []byte{0x89, 'P', 'N', 'G', 0, 1, 2}, 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.WriteFile(t, filepath.Join(ws.Path, "notes.md"), "# notes\n")
	l := uitest.NewLanding(m)
	return newHarness(t, Deps{Workspaces: m, Landing: l}), l, ws
}

// openReviewLoaded opens the Review window and waits for its first
// file's diff.
func openReviewLoaded(t *testing.T, h *harness, ws workspace.Workspace) *reviewDialog {
	t.Helper()
	d := h.u.openReview(ws)
	if d == nil {
		t.Fatal("no review window")
	}
	h.waitFor("the first file's diff", func() bool { return len(d.changes) > 0 && len(d.view.lines) > 0 })
	return d
}

func TestReviewWindowListsTheChangedFilesAndShowsTheChosenFilesDiff(t *testing.T) {
	h, _, ws := reviewRepo(t)
	d := openReviewLoaded(t, h, ws)

	var listed []string
	for _, f := range d.changes {
		listed = append(listed, FileLine(f))
	}
	want := []string{"M a.txt  +2 −1", "A logo.png  binary", "A notes.md  +1 −0"}
	if !reflect.DeepEqual(listed, want) {
		t.Errorf("files listed %q, want %q", listed, want)
	}
	if want := "feat against main: 3 files changed, +3 −1"; d.head.Text != want {
		t.Errorf("head %q, want %q", d.head.Text, want)
	}
	grid := d.view.Text()
	for _, line := range []string{"    2 +TWO", "      -two", "    5 +five", "@@ -1,4 +1,5 @@"} {
		if !strings.Contains(grid, line) {
			t.Errorf("the diff of a.txt lacks %q:\n%s", line, grid)
		}
	}

	d.files.Select(2)
	h.waitFor("the diff of notes.md", func() bool { return strings.Contains(d.view.Text(), "+# notes") })
	if strings.Contains(d.view.Text(), "TWO") {
		t.Errorf("the diff of notes.md still shows a.txt's:\n%s", d.view.Text())
	}
	d.files.Select(1)
	if len(d.view.lines) != 0 || !strings.Contains(d.fileHead.Text, "binary") {
		t.Errorf("a binary file shows %q and %d lines, want that it is binary and none", d.fileHead.Text, len(d.view.lines))
	}
}

func TestReviewWindowAddsAndRemovesCommentsAndSendsThemWithTheSummary(t *testing.T) {
	h, l, ws := reviewRepo(t)
	d := openReviewLoaded(t, h, ws)
	w := h.app.Window("Review changes: repo / feat")
	if w == nil {
		t.Fatal("no window titled after the workspace")
	}

	if !d.send.Disabled() || !d.add.Disabled() {
		t.Error("Send and Add must be off with nothing written")
	}
	// A tap on the line "+TWO" picks line 2 of a.txt.
	row := -1
	for i, l := range d.view.lines {
		if l.Kind == '+' && l.Text == "TWO" {
			row = i
		}
	}
	test.TapAt(d.view, d.view.PositionForCursorLocation(row, 3))
	if d.line.Text != "2" {
		t.Fatalf("tapping the line +TWO picked %q, want 2", d.line.Text)
	}
	test.Type(d.text, "Why upper case?")
	test.Tap(d.add)
	// A range, then a comment on the whole file.
	d.line.SetText("4-5")
	test.Type(d.text, "new line at the end")
	test.Tap(d.add)
	d.line.SetText("")
	test.Type(d.text, "drop this file")
	test.Tap(d.add)
	d.line.SetText("x")
	test.Type(d.text, "nowhere")
	if !d.add.Disabled() || d.line.reason.Text == "" {
		t.Errorf("a bad line: Add enabled %v, reason %q; want off and a reason", !d.add.Disabled(), d.line.reason.Text)
	}
	d.text.SetText("")
	d.line.SetText("")

	if got := h.app.Texts("Review changes: repo / feat"); !strings.Contains(got, "a.txt:2: Why upper case?") || !strings.Contains(got, "a.txt:4-5: new line at the end") {
		t.Errorf("the comments are not listed:\n%s", got)
	}
	remove := uitest.FindButton(d.commentList, "Remove")
	test.Tap(remove) // the first
	if len(d.comments) != 2 || d.comments[0].Text != "new line at the end" {
		t.Fatalf("after removing the first: %+v", d.comments)
	}

	test.Type(d.summary, "Keep the case; otherwise fine.")
	test.Tap(d.send)
	h.waitFor("the review sent", func() bool { return strings.Contains(d.status.Text, "waiting for the agent") })
	want := workspace.Review{Summary: "Keep the case; otherwise fine.", Comments: []workspace.ReviewComment{
		{File: "a.txt", Line: 4, EndLine: 5, Text: "new line at the end"},
		{File: "a.txt", Text: "drop this file"},
	}}
	if sent := l.Sent(); len(sent) != 1 || !reflect.DeepEqual(sent[0], want) {
		t.Errorf("SendReview got %+v, want %+v", sent, want)
	}
	if len(d.comments) != 0 || d.summary.Text != "" || !d.send.Disabled() {
		t.Error("a sent review must leave an empty draft")
	}
	if !strings.Contains(d.deliveries.Text, "2 comments: waiting for the agent") {
		t.Errorf("deliveries %q", d.deliveries.Text)
	}

	// The delivery is followed until the agent took it.
	l.Deliver(ws.Path, l.Reviews(ws.Path)[0].ID, workspace.DeliveryDelivered, "")
	h.waitFor("the delivery", func() bool { return strings.Contains(d.status.Text, "delivered to the agent") })
	if !strings.Contains(d.deliveries.Text, "2 comments: delivered to the agent") {
		t.Errorf("deliveries %q", d.deliveries.Text)
	}
}

func TestReviewWindowKeepsTheDraftAndSaysWhyWhenTheReviewIsNotSent(t *testing.T) {
	h, l, ws := reviewRepo(t)
	d := openReviewLoaded(t, h, ws)
	l.FailSend(workspace.Errorf(workspace.CodeConflict, "the agent of feat does not run; restart it"))
	test.Type(d.summary, "please rebase")
	test.Tap(d.send)
	h.waitFor("the failure", func() bool { return strings.Contains(d.status.Text, "not sent") })
	if !strings.Contains(d.status.Text, "the agent of feat does not run; restart it") || d.summary.Text != "please rebase" || d.send.Disabled() {
		t.Errorf("status %q, summary %q, send on %v: want the reason, the draft kept and Send on", d.status.Text, d.summary.Text, !d.send.Disabled())
	}
}

func TestReviewWindowPagesThroughABigPatch(t *testing.T) {
	repo := testenv.GitRepo(t, "repo")
	m := uitest.RealManager(t, repo)
	ws, err := m.Create(context.Background(), workspace.CreateOptions{ProjectPath: repo, Name: "feat"})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	const lines = 3000
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(&b, "line %04d of a file that is long enough to need pages\n", i)
	}
	testenv.WriteFile(t, filepath.Join(ws.Path, "big.txt"), b.String())
	h := newHarness(t, Deps{Workspaces: m, Landing: uitest.NewLanding(m)})
	d := openReviewLoaded(t, h, ws)

	if d.more.Hidden || d.next != workspace.DefaultDiffBytes {
		t.Fatalf("a patch over a page: more shown %v, next %d", !d.more.Hidden, d.next)
	}
	first := len(d.view.lines)
	for pages := 1; !d.more.Hidden; pages++ {
		if pages > 10 {
			t.Fatal("the pages do not end")
		}
		test.Tap(d.more)
		n := len(d.view.lines)
		h.waitFor("the next page", func() bool { return len(d.view.lines) > n })
	}
	body := slices.IndexFunc(d.view.lines, func(l diffLine) bool { return l.Kind == '@' }) + 1
	last := d.view.lines[len(d.view.lines)-1]
	if body == 0 || first >= lines || len(d.view.lines) != body+lines || last.Text != fmt.Sprintf("line %04d of a file that is long enough to need pages", lines) {
		t.Errorf("after the pages: %d lines (first page %d, hunk from %d), the last %+v", len(d.view.lines), first, body, last)
	}
	for i, l := range d.view.lines[body:] {
		if l.Kind != '+' || l.Line != i+1 || l.Text != fmt.Sprintf("line %04d of a file that is long enough to need pages", i+1) {
			t.Fatalf("line %d of the patch is %+v", body+i, l)
		}
	}
}

func TestReviewWindowSaysWhyTheChangesCannotBeRead(t *testing.T) {
	f, ws, _ := uitest.OneWorkspace(uitest.AgentIdle)
	h := newHarness(t, Deps{Workspaces: f, Landing: uitest.NewLanding(failingDiff{})})
	d := h.u.openReview(ws)
	h.waitFor("the error", func() bool { return strings.Contains(d.head.Text, "Could not read the changes") })
	if !strings.Contains(d.head.Text, "the workspace has no base") {
		t.Errorf("head %q", d.head.Text)
	}
}

type failingDiff struct{}

func (failingDiff) Diff(context.Context, string, workspace.DiffOptions) (workspace.Diff, error) {
	return workspace.Diff{}, workspace.Errorf(workspace.CodeInvalidInput, "the workspace has no base to compare with; set its metadata key base")
}
