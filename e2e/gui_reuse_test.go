package e2e

import (
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"codehydra/app"
	"codehydra/internal/testenv"
)

// TestGUINewWorkspaceOnAKeptBranchKeepsItsBaseAndDeleteKeepsItsMetadata
// drives the real binary's tray and dialogs (see
// TestGUITrayMenuSettingsNewWorkspaceAndQuit for the desktop): the New
// workspace dialog on a branch that exists says it is reused and leaves
// its recorded base alone although "Start from" shows the default; the
// delete dialog, whose "Keep the branch" is ticked for a branch that
// existed before, keeps the branch and its metadata.
func TestGUINewWorkspaceOnAKeptBranchKeepsItsBaseAndDeleteKeepsItsMetadata(t *testing.T) {
	bin, repo := guiSetup(t)
	testenv.Git(t, repo, "branch", "develop")
	testenv.Git(t, repo, "branch", "kept")
	testenv.Git(t, repo, "config", "branch.kept.codehydra.base", "develop")
	testenv.Git(t, repo, "config", "branch.kept.codehydra.note", "years of notes")
	metadata := func() string {
		out, _ := testenv.GitErr(repo, "config", "--get-regexp", `^branch\.kept\.codehydra\.`)
		return out
	}
	before := metadata()
	shots := guiShotDir(t)

	d := startGUIDesktop(t)
	conn := startGUIPanel(t, d)
	a := startGUIApp(t, bin, d, "--project", repo)
	tray := a.tray(conn)
	guiWaitUntil(t, 60*time.Second, "the tray menu to show the project", a.exited, func() (bool, string) {
		menu, err := tray.layout()
		if err != nil {
			return false, err.Error()
		}
		return menu.find(filepath.Base(repo)) != nil, menu.String()
	})

	// The New workspace dialog on the existing branch.
	tray.click(t, app.LabelNewWorkspace)
	dialog := d.waitWindow(t, "New workspace", a.exited)
	d.xdotool(t, "windowfocus", "--sync", dialog.id)
	d.xdotool(t, "type", "--delay", "20", "kept")
	// The reuse hint is a line more under the name: the window grows.
	guiWaitUntil(t, 20*time.Second, "the dialog to show that the branch is reused", a.exited, func() (bool, string) {
		now, err := d.findWindow("New workspace")
		if err != nil {
			return false, err.Error()
		}
		return now.rect.Dy() > dialog.rect.Dy()+20, fmt.Sprintf("height %d, was %d", now.rect.Dy(), dialog.rect.Dy())
	})
	shotDialog(t, d, "New workspace", filepath.Join(shots, "new-workspace-reused-branch.png"), a.exited)
	guiWaitUntil(t, 30*time.Second, "the New workspace dialog to create kept", a.exited, func() (bool, string) {
		list := testenv.Git(t, repo, "worktree", "list", "--porcelain") + "\n"
		if strings.Contains(list, "branch refs/heads/kept\n") {
			return true, ""
		}
		d.pressIfOpen(dialog, "Return")
		return false, list
	})
	if got := metadata(); got != before {
		t.Fatalf("creating on the kept branch changed its metadata from %q to %q", before, got)
	}

	// Delete… of that workspace: the branch existed before, so "Keep the
	// branch" is ticked.
	var del *trayItem
	guiWaitUntil(t, 30*time.Second, "the tray menu to show kept", a.exited, func() (bool, string) {
		menu, err := tray.layout()
		if err != nil {
			return false, err.Error()
		}
		if ws := trayWorkspace(menu, "kept"); ws != nil {
			del = ws.find(app.LabelDelete)
		}
		return del != nil && del.enabled, menu.String()
	})
	call := tray.conn.Object(tray.name, dbusmenuPath).Call(dbusmenuIface+".Event", 0, del.id, "clicked", dbus.MakeVariant(int32(0)), uint32(0))
	if call.Err != nil {
		t.Fatalf("click Delete… of kept: %v", call.Err)
	}
	delWin := d.waitWindow(t, "Delete workspace", a.exited)
	// The ticked box and its words are checked by the screenshot below;
	// what it does, by the branch and metadata left after the click.
	shotDialog(t, d, "Delete workspace", filepath.Join(shots, "delete-keep-branch.png"), a.exited)
	wsPath := strings.TrimSpace(testenv.Git(t, repo, "worktree", "list", "--porcelain"))
	guiWaitUntil(t, 30*time.Second, "the delete dialog to delete kept", a.exited, func() (bool, string) {
		list := testenv.Git(t, repo, "worktree", "list", "--porcelain") + "\n"
		if !strings.Contains(list, "branch refs/heads/kept\n") {
			return true, ""
		}
		if at, ok := redButton(t, d, delWin.rect, filepath.Join(shots, "delete-find-button.png")); ok {
			d.xdotool(t, "mousemove", "--sync", strconv.Itoa(at.X), strconv.Itoa(at.Y), "click", "1")
		}
		return false, list
	})
	if !branchKept(t, repo, "kept") {
		t.Fatalf("the delete with Keep the branch ticked deleted the branch (worktrees were %q)", wsPath)
	}
	if got := metadata(); got != before {
		t.Fatalf("the delete that kept the branch changed its metadata from %q to %q", before, got)
	}
}

// shotDialog takes a screenshot once the named window is drawn.
func shotDialog(t *testing.T, d *guiDesktop, name, path string, exited chan error) {
	t.Helper()
	guiWaitUntil(t, 20*time.Second, name+" to be drawn", exited, func() (bool, string) {
		win, err := d.findWindow(name)
		if err != nil {
			return false, err.Error()
		}
		st, err := d.screenshot(path, win.rect)
		if err != nil {
			return false, err.Error()
		}
		return st.drawn(), fmt.Sprintf("%s in the window's area of %s", st, path)
	})
	t.Logf("screenshot: %s", path)
}

func branchKept(t *testing.T, repo, branch string) bool {
	t.Helper()
	_, err := testenv.GitErr(repo, "rev-parse", "--verify", "-q", "refs/heads/"+branch)
	return err == nil
}

// redButton finds the dialog's one danger-red button (Delete) in a
// screenshot of the window's area and returns its centre on the screen.
func redButton(t *testing.T, d *guiDesktop, rect image.Rectangle, shot string) (image.Point, bool) {
	t.Helper()
	if _, err := d.screenshot(shot, rect); err != nil {
		return image.Point{}, false
	}
	f, err := os.Open(shot)
	if err != nil {
		return image.Point{}, false
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		return image.Point{}, false
	}
	var box image.Rectangle
	for y := rect.Min.Y; y < rect.Max.Y; y++ {
		for x := rect.Min.X; x < rect.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if r>>8 > 200 && g>>8 < 110 && b>>8 < 110 {
				box = box.Union(image.Rect(x, y, x+1, y+1))
			}
		}
	}
	if box.Dx() < 20 || box.Dy() < 10 {
		return image.Point{}, false
	}
	return image.Pt((box.Min.X+box.Max.X)/2, (box.Min.Y+box.Max.Y)/2), true
}
