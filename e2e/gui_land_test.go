//go:build linux

package e2e

import (
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"codehydra/app"
	"codehydra/internal/testenv"
)

// TestGUIReviewMergeUpdateAndPullRequestFromTheTray runs the built app
// under Xvfb with xfce4-panel and the fake opencode, and walks issue 23's
// loop as a user would, with the mouse and keyboard: a child workspace
// with a commit says "ready for review"; its Review window shows the
// changed files and the diff, takes a comment on a line and a summary,
// and sends them to the child's agent (the review's record says
// delivered); its Merge window shows the preflight, and with "delete
// after" merges it into main, whose checkout (clean, with a commit of the
// user's) moves, and deletes the workspace and its branch. Then another
// workspace is updated from main, and its pull request is opened against
// a bare remote with a recording stand-in for gh. Screenshots of each
// window go to the shot folder.
func TestGUIReviewMergeUpdateAndPullRequestFromTheTray(t *testing.T) {
	bin, repo := guiSetup(t)
	testenv.CommitFile(t, repo, "app.py", "print(\"hello\")\n", "Add the app")
	feature := guiWorktree(t, repo, "feature-x")
	child := filepath.Join(t.TempDir(), "child")
	testenv.Git(t, repo, "worktree", "add", "-q", "-b", "child", child)
	testenv.WriteFile(t, filepath.Join(child, "app.py"), "print(\"hello, world\")\n")
	testenv.WriteFile(t, filepath.Join(child, "feature.txt"), "line one\nline two\nline three\n")
	testenv.Git(t, child, "add", "-A")
	testenv.Git(t, child, "commit", "-q", "-m", "child: feature and greeting")
	testenv.Git(t, repo, "config", "branch.child.codehydra.createdBy", feature)
	bare := filepath.Join(t.TempDir(), "remote.git")
	testenv.Git(t, "", "init", "-q", "--bare", bare)
	testenv.Git(t, repo, "remote", "add", "origin", bare)
	gh := testenv.NewGH(t, "https://forge.example/pr/7")
	testenv.WriteSettings(t, fmt.Sprintf(`{"opencodeBin": %q, "prCommand": %q}`,
		fakeOpencode(t), gh.Path+" pr create --head {branch} --base {base} --fill"))
	shots := guiShotDir(t)

	d := startGUIDesktop(t)
	conn := startGUIPanel(t, d)
	a := startGUIApp(t, bin, d, "--project", repo)
	tray := a.tray(conn)
	guiWaitUntil(t, 60*time.Second, "the child to say it is ready for review", a.exited, func() (bool, string) {
		menu, err := tray.layout()
		if err != nil {
			return false, err.Error()
		}
		c := trayWorkspace(menu, "child")
		return c != nil && strings.Contains(c.label, app.LabelReadyForReview), menu.String()
	})

	// Review: pick the changed line of app.py, comment on it, summarise,
	// send.
	tray.clickIn(t, "child", app.LabelReview)
	review := d.waitWindow(t, "Review changes: repo / child", a.exited)
	guiShot(t, d, filepath.Join(shots, "review.png"), review, a.exited)
	// The window reads the files and the first one's diff after it opens:
	// a tap before the line is drawn picks nothing (the comment would be
	// on the whole file).
	line1 := guiWindow{id: review.id, rect: image.Rect(320, 180, 540, 195).Add(review.rect.Min)}
	guiShot(t, d, filepath.Join(shots, "review.png"), line1, a.exited)
	d.click(t, review, 430, 187) // the diff's "+print(…)" line: line 1
	d.click(t, review, 690, 385) // the comment field
	d.xdotool(t, "type", "--delay", "15", "Greet the reader by name here")
	d.click(t, review, 978, 390) // Add comment
	d.click(t, review, 500, 640) // the summary
	d.xdotool(t, "type", "--delay", "15", "One change, then commit.")
	before := guiShotSettled(t, d, filepath.Join(shots, "review-written.png"), review, a.exited)
	d.clickBlue(t, review, filepath.Join(shots, "review-written.png")) // Send to agent
	record := filepath.Join(repo, ".git", "worktrees", "child", "codehydra-reviews", "r1.json")
	guiWaitUntil(t, 30*time.Second, "the review recorded and delivered", a.exited, func() (bool, string) {
		b, _ := os.ReadFile(record)
		return strings.Contains(string(b), `"state":"delivered"`), string(b)
	})
	if b, _ := os.ReadFile(record); !strings.Contains(string(b), `app.py:1\n\u003e Greet the reader by name here`) ||
		!strings.Contains(string(b), `\u003e One change, then commit.`) {
		t.Errorf("the review sent is not the comment on app.py:1 and the summary typed:\n%s", b)
	}
	guiShotChanged(t, d, filepath.Join(shots, "review-sent.png"), review, a.exited, before)
	d.click(t, review, 890, 738) // Close
	guiWaitUntil(t, 10*time.Second, "the Review window to close", a.exited, func() (bool, string) {
		return !d.hasWindow("Review changes: repo / child"), "still open"
	})

	// Merge, after the user committed on main, deleting the workspace
	// after.
	testenv.CommitFile(t, repo, "NOTES.md", "the user's notes\n", "user: notes")
	tray.clickIn(t, "child", "Merge into main…")
	merge := d.waitWindow(t, "Merge: repo / child", a.exited)
	shot := filepath.Join(shots, "merge.png")
	guiWaitUntil(t, 20*time.Second, "the preflight's verdict", a.exited, func() (bool, string) {
		// The window grows to fit the verdict.
		var err error
		if merge, err = d.findWindow("Merge: repo / child"); err != nil {
			return false, err.Error()
		}
		st, err := d.screenshot(shot, merge.rect)
		return err == nil && st.drawn() && d.hasBlue(shot, merge, 240), fmt.Sprintf("no enabled Merge button in %v", merge.rect)
	})
	d.click(t, merge, 19, 209) // Delete the workspace after a verified merge
	// The window may check again after the click, its Merge button off
	// meanwhile: wait for it to be on again.
	guiWaitUntil(t, 20*time.Second, "the Merge button after ticking delete-after", a.exited, func() (bool, string) {
		var err error
		if merge, err = d.findWindow("Merge: repo / child"); err != nil {
			return false, err.Error()
		}
		st, err := d.screenshot(shot, merge.rect)
		return err == nil && st.drawn() && d.hasBlue(shot, merge, merge.rect.Dy()/2), fmt.Sprintf("no enabled Merge button in %v", merge.rect)
	})
	d.clickBlue(t, merge, shot) // Merge
	guiWaitUntil(t, 60*time.Second, "the child merged, its worktree and branch deleted", a.exited, func() (bool, string) {
		_, statErr := os.Stat(child)
		_, branchErr := testenv.GitErr(repo, "rev-parse", "--verify", "--quiet", "refs/heads/child")
		return os.IsNotExist(statErr) && branchErr != nil, testenv.Git(t, repo, "worktree", "list")
	})
	guiShot(t, d, filepath.Join(shots, "merge-done.png"), merge, a.exited)
	if log := testenv.Git(t, repo, "log", "--format=%s", "main"); !strings.HasPrefix(log, "Merge branch 'child' into main\n") ||
		!strings.Contains(log, "child: feature and greeting") || !strings.Contains(log, "user: notes") {
		t.Errorf("main's log:\n%s", log)
	}
	unchanged(t, filepath.Join(repo, "feature.txt"), "line one\nline two\nline three\n")
	if st := testenv.Git(t, repo, "status", "--porcelain"); st != "" {
		t.Errorf("the user's checkout is not clean after the merge:\n%s", st)
	}

	// Update feature-x from main, then open its pull request.
	tray.clickIn(t, "feature-x", "Update from main")
	guiWaitUntil(t, 30*time.Second, "feature-x updated from main", a.exited, func() (bool, string) {
		head, main := testenv.Git(t, feature, "rev-parse", "HEAD"), testenv.Git(t, repo, "rev-parse", "main")
		return head == main, head + " " + main
	})
	tray.clickIn(t, "feature-x", app.LabelCreatePR)
	guiWaitUntil(t, 30*time.Second, "feature-x's pull request recorded", a.exited, func() (bool, string) {
		pr, _ := testenv.GitErr(repo, "config", "--get", "branch.feature-x.codehydra.pr")
		return pr == "https://forge.example/pr/7", pr
	})
	if got, want := testenv.Git(t, bare, "rev-parse", "refs/heads/feature-x"), testenv.Git(t, feature, "rev-parse", "HEAD"); got != want {
		t.Errorf("the remote's feature-x is %s, want the workspace's head %s", got, want)
	}
	calls := gh.Calls(t)
	if len(calls) != 1 || strings.Join(calls[0].Argv, " ") != "pr create --head feature-x --base main --fill" || calls[0].Cwd != feature {
		t.Errorf("gh was called %+v; want once, in %s, with pr create --head feature-x --base main --fill", calls, feature)
	}
	tray.click(t, app.LabelQuit)
	guiWaitExit(t, a.exited, "Quit")
}

// guiShotSettled takes a screenshot of win into path once two shots in a
// row agree (but for the blinking caret, see shotStats.differs): what was
// typed last is drawn.
func guiShotSettled(t *testing.T, d *guiDesktop, path string, win guiWindow, exited chan error) shotStats {
	t.Helper()
	var st, last shotStats
	guiWaitUntil(t, 20*time.Second, "a settled "+filepath.Base(path), exited, func() (bool, string) {
		last = st
		time.Sleep(300 * time.Millisecond)
		var err error
		if st, err = d.screenshot(path, win.rect); err != nil {
			return false, err.Error()
		}
		return st.drawn() && !st.differs(last), st.String()
	})
	return st
}

// clickIn clicks the item labelled label in the submenu of the workspace
// named ws.
func (m *trayMenu) clickIn(t *testing.T, ws, label string) {
	t.Helper()
	m.clickWhere(t, ws+" › "+label, func(menu trayItem) *trayItem {
		if w := trayWorkspace(menu, ws); w != nil {
			return w.find(label)
		}
		return nil
	})
}

// click clicks the point x, y of the window w (from its top left corner).
func (d *guiDesktop) click(t *testing.T, w guiWindow, x, y int) {
	t.Helper()
	d.xdotool(t, "mousemove", "--sync", fmt.Sprint(w.rect.Min.X+x), fmt.Sprint(w.rect.Min.Y+y), "click", "1")
	time.Sleep(300 * time.Millisecond)
}

// primaryBlue is the colour of the theme's primary button (Send to agent,
// Merge) and of a chosen radio option.
var primaryBlue = [3]uint8{41, 111, 246}

// bluePixels finds the pixels of the primary colour in the window w of
// the screenshot shot, below the line top of the window: their count and
// centre (in the window).
func bluePixels(shot string, w guiWindow, top int) (n int, at image.Point) {
	f, err := os.Open(shot)
	if err != nil {
		return 0, at
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		return 0, at
	}
	for y := w.rect.Min.Y + top; y < w.rect.Max.Y; y++ {
		for x := w.rect.Min.X; x < w.rect.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if near(r>>8, primaryBlue[0]) && near(g>>8, primaryBlue[1]) && near(b>>8, primaryBlue[2]) {
				n++
				at = at.Add(image.Pt(x-w.rect.Min.X, y-w.rect.Min.Y))
			}
		}
	}
	if n > 0 {
		at = at.Div(n)
	}
	return n, at
}

func near(v uint32, want uint8) bool { return v+12 >= uint32(want) && v <= uint32(want)+12 }

// hasBlue says whether shot shows an enabled primary button in w below top.
func (d *guiDesktop) hasBlue(shot string, w guiWindow, top int) bool {
	n, _ := bluePixels(shot, w, top)
	return n > 500
}

// clickBlue clicks the enabled primary button in the lower half of w, as
// shot shows it.
func (d *guiDesktop) clickBlue(t *testing.T, w guiWindow, shot string) {
	t.Helper()
	n, at := bluePixels(shot, w, w.rect.Dy()/2)
	if n <= 500 {
		t.Fatalf("no enabled primary button in the lower half of %s", shot)
	}
	d.click(t, w, at.X, at.Y)
}
