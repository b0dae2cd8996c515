package window

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"codehydra/app/internal/uitest"
	"codehydra/internal/settings"
	"codehydra/internal/testenv"
	"codehydra/prepare"
	"codehydra/workspace"
)

// A real manager over a real repository whose teardown fails: the delete
// window says why, keeps the workspace, and Delete anyway deletes it.
func TestDeleteDialogSaysWhyTheTeardownFailedAndOffersDeleteAnyway(t *testing.T) {
	repo := testenv.GitRepo(t, "repo")
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(t.TempDir(), "runs")
	m := workspace.NewManager(workspace.Options{Projects: []string{repo}, WorktreeRoot: root,
		Teardowns: prepare.NewTeardowns(prepare.TeardownOptions{Setup: func(string) settings.ProjectSetup {
			return settings.ProjectSetup{Teardown: `sh -c "echo ran >> ` + runs + `; echo database still in use; exit 4"`}
		}})})
	if err := m.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	ws, err := m.Create(context.Background(), workspace.CreateOptions{ProjectPath: repo, Name: "feat"})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Deps{Workspaces: m})
	d := h.u.openDelete(ws)
	if d.anyway.Visible() {
		t.Fatal("Delete anyway is offered before any failure")
	}

	test.Tap(d.del)
	h.waitFor("the teardown's failure", func() bool { return d.anyway.Visible() && d.del.Text == "Retry" })
	h.drain()
	for _, want := range []string{"Running the project's teardown", "exit code 4", "database still in use", "Nothing was removed", "Delete anyway"} {
		if !strings.Contains(d.status.Text, want) {
			t.Errorf("status = %q, want %q in it", d.status.Text, want)
		}
	}
	if _, err := os.Stat(filepath.Join(ws.Path, ".git")); err != nil {
		t.Fatalf("the failed teardown's delete removed the worktree: %v", err)
	}

	test.Tap(d.anyway)
	h.waitFor("the window to close", func() bool { return !h.windowOpen("Delete workspace") })
	if _, err := os.Lstat(ws.Path); !os.IsNotExist(err) {
		t.Errorf("worktree still there after Delete anyway: %v", err)
	}
	if b, _ := os.ReadFile(runs); string(b) != "ran\nran\n" {
		t.Errorf("the teardown ran %q, want twice (Delete anyway runs it too)", b)
	}
}

// An agent's delete of its own workspace whose teardown failed: the
// window opened from the tray afterwards says so and offers Delete anyway.
func TestDeleteDialogOpenedAfterAnAgentsTeardownFailedOffersDeleteAnyway(t *testing.T) {
	f := uitest.NewWorkspaces()
	ws := f.AddWorkspace("proj", "feat")
	h := newHarness(t, Deps{Workspaces: f})
	h.tray.setDelete(ws.Path, DeleteProgress{Step: workspace.StepTeardown, Err: "teardown \"make down\" failed with exit code 2"})

	d := h.u.openDelete(ws)
	if !d.anyway.Visible() || d.del.Text != "Retry" || !strings.Contains(d.status.Text, "exit code 2") {
		t.Fatalf("dialog: Delete anyway shown %v, button %q, status %q", d.anyway.Visible(), d.del.Text, d.status.Text)
	}
	test.Tap(d.anyway)
	h.waitFor("the forced delete to finish", func() bool { return d.done })
	if dels := f.Deletes(); len(dels) != 1 || !dels[0].Force {
		t.Errorf("deletes %+v, want one forced", dels)
	}
}
