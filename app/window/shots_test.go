package window

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"

	"codehydra/workspace"
)

// TestReviewAndMergeWindowsRender draws both windows with Fyne's software
// painter in the default theme, filled as a user sees them; with
// CODEHYDRA_WINDOW_SHOTS set to a folder it saves them there as PNGs to
// look at.
func TestReviewAndMergeWindowsRender(t *testing.T) {
	h, l, ws := reviewRepo(t)
	h.app.Settings().SetTheme(theme.DefaultTheme())
	d := openReviewLoaded(t, h, ws)
	d.view.pick(7)
	test.Type(d.text, "Why upper case? The rest of the file is lower case.")
	test.Tap(d.add)
	d.line.SetText("")
	test.Type(d.text, "A test for the new line, please.")
	test.Tap(d.add)
	test.Type(d.summary, "Close: keep the case as it was, then add a test.")
	test.Tap(d.send)
	h.waitFor("the review sent", func() bool { return d.sent != "" })
	test.Type(d.text, "A test for this line, please.")
	l.Deliver(ws.Path, d.sent, workspace.DeliveryDelivered, "")
	h.waitFor("the delivery", func() bool { return strings.Contains(d.status.Text, "delivered") })
	d.view.pick(10)
	test.Tap(d.add)
	test.Type(d.text, "Say why five is needed")
	shot(t, d.win, "review.png")

	l.OnPreflight(blocked)
	m := openMergeChecked(t, h, ws)
	shot(t, m.win, "merge-blocked.png")
	m.win.Close()
	l.OnPreflight(func(o workspace.MergeOptions) (workspace.Preflight, error) {
		return workspace.Preflight{Branch: "feat", Target: "main", Strategy: o.Strategy, Ahead: 1, CheckedOutAt: filepath.Dir(ws.Path) + "/repo", CanMerge: true}, nil
	})
	m = openMergeChecked(t, h, ws)
	m.deleteAfter.SetChecked(true)
	shot(t, m.win, "merge-ready.png")
	l.OnMerge(func(o workspace.MergeOptions) (workspace.MergeResult, error) {
		return workspace.MergeResult{Merged: true, Verified: true, TargetHead: "0123456789abcdef", Preflight: workspace.Preflight{Target: "main"}}, nil
	})
	m.deleteAfter.SetChecked(false)
	test.Tap(m.merge)
	h.waitFor("the merge", func() bool { return m.merged })
	shot(t, m.win, "merge-done.png")
}

// shot draws w and checks that it drew something; it saves the PNG as
// name in $CODEHYDRA_WINDOW_SHOTS when that is set.
func shot(t *testing.T, w fyne.Window, name string) {
	t.Helper()
	// A real window is never smaller than its content; the test's is.
	w.Resize(w.Canvas().Size().Max(w.Content().MinSize()))
	img := w.Canvas().Capture()
	if b := img.Bounds(); b.Dx() < 300 || b.Dy() < 200 {
		t.Errorf("%s: drawn %v, too small to read", name, b)
	}
	dir := os.Getenv("CODEHYDRA_WINDOW_SHOTS")
	if dir == "" {
		return
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
}
