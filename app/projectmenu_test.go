package app

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"codehydra/app/internal/uitest"
	"codehydra/internal/testenv"
	"codehydra/workspace"
)

func folderActionsRec(calls *[]string) FolderActions {
	rec := func(what string) func(string) { return func(p string) { *calls = append(*calls, what+" "+p) } }
	return FolderActions{
		NewWorkspaceIn: rec("new in"),
		RemoveProject:  func(p workspace.Project) { *calls = append(*calls, "remove "+p.Path) },
		OpenFolder:     rec("folder"),
		OpenTerminal:   rec("terminal"),
		OpenEditor:     rec("editor"),
	}
}

func TestProjectAndFolderItemsCallTheirActionsWithTheirPath(t *testing.T) {
	var calls []string
	a := allActions(&calls)
	a.FolderActions = folderActionsRec(&calls)
	m := BuildMenu(oneProject(wsState("a", uitest.AgentIdle)), a)
	for _, path := range [][]string{
		{"proj", LabelNewWorkspaceHere},
		{"proj", LabelOpenFolder},
		{"proj", LabelRemoveProject},
		{"○ a (idle)", LabelOpenFolder},
		{"○ a (idle)", LabelOpenTerminal},
		{"○ a (idle)", LabelOpenEditor},
	} {
		it := find(m, path...)
		if it == nil || it.Action == nil || it.Disabled {
			t.Fatalf("no enabled action at %q in\n%s", path, strings.Join(labels(m), "\n"))
		}
		it.Action()
	}
	want := []string{"new in /src/proj", "folder /src/proj", "remove /src/proj", "folder /wt/a", "terminal /wt/a", "editor /wt/a"}
	if !slices.Equal(calls, want) {
		t.Errorf("calls = %q, want %q", calls, want)
	}
}

func TestFolderItemsAreOffWhileTheWorkspaceIsDeleted(t *testing.T) {
	deleting := wsState("going", uitest.AgentIdle)
	deleting.Deleting = true
	failed := wsState("d", uitest.AgentFailed)
	a := allActions(new([]string))
	a.FolderActions = folderActionsRec(new([]string))
	m := BuildMenu(oneProject(deleting, failed), a)
	for label, off := range map[string]bool{"… going (deleting)": true, "✕ d (failed)": false} {
		for _, item := range []string{LabelOpenFolder, LabelOpenTerminal, LabelOpenEditor} {
			if it := find(m, label, item); it == nil || it.Disabled != off {
				t.Errorf("%s / %s: disabled should be %v", label, item, off)
			}
		}
	}
}

func TestRemoveProjectAsksThenRemovesItAndLeavesItsWorktreesOnDisk(t *testing.T) {
	repo := testenv.GitRepo(t, "repo")
	wt := filepath.Join(t.TempDir(), "feat")
	testenv.Git(t, repo, "worktree", "add", "-q", "-b", "feat", wt)
	wt, _ = filepath.EvalSymlinks(wt)
	m := uitest.RealManager(t, repo)
	h := newHarness(t, Deps{Workspaces: m})
	h.startTray()
	h.waitFor("the project in the menu", func() bool { return find(h.view.menu(), "repo", LabelRemoveProject) != nil })

	find(h.view.menu(), "repo", LabelRemoveProject).Action()
	d := h.app.Window("Remove project")
	if d == nil {
		t.Fatal("Remove project… opened no confirmation")
	}
	text := h.app.Texts("Remove project")
	for _, want := range []string{"Remove the project repo", repo, wt, "agent stops", "Nothing is deleted", "stay on disk"} {
		if !strings.Contains(text, want) {
			t.Errorf("the confirmation does not say %q:\n%s", want, text)
		}
	}
	// Escape cancels.
	d.Canvas().OnTypedKey()(&fyne.KeyEvent{Name: fyne.KeyEscape})
	h.drain()
	if h.windowOpen("Remove project") || len(m.Projects()) != 1 {
		t.Fatalf("Escape: window open %v, projects %v", h.windowOpen("Remove project"), m.Projects())
	}

	find(h.view.menu(), "repo", LabelRemoveProject).Action()
	test.Tap(uitest.FindButton(h.app.Window("Remove project").Content(), "Remove project"))
	h.waitFor("the window to close", func() bool { return !h.windowOpen("Remove project") })
	if len(m.Projects()) != 0 {
		t.Errorf("projects = %v after Remove", m.Projects())
	}
	h.waitFor("the project to leave the menu", func() bool { return find(h.view.menu(), "repo") == nil })
	for _, f := range []string{filepath.Join(repo, "README.md"), filepath.Join(wt, "README.md")} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("remove touched the files: %v", err)
		}
	}
}
