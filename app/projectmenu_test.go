package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"codehydra/internal/settings"
	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// RemoveProject drops the project and its workspaces, announcing them as
// the manager does.
func (f *fakeWorkspaces) RemoveProject(_ context.Context, path string) error {
	f.mu.Lock()
	i := slices.IndexFunc(f.projects, func(p workspace.Project) bool { return p.Path == path })
	if i < 0 {
		f.mu.Unlock()
		return workspace.Errorf(workspace.CodeProjectNotFound, "no project at %s; see the project list for the paths", path)
	}
	f.projects = slices.Delete(f.projects, i, i+1)
	gone := f.workspaces[path]
	delete(f.workspaces, path)
	f.mu.Unlock()
	for _, ws := range gone {
		f.Publish(workspace.Event{Kind: workspace.EventWorkspaceRemoved, ProjectPath: path, Workspace: ws})
	}
	f.Publish(workspace.Event{Kind: workspace.EventProjectRemoved, ProjectPath: path})
	return nil
}

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
	m := BuildMenu(oneProject(wsState("a", agentIdle)), a)
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
	deleting := wsState("going", agentIdle)
	deleting.Deleting = true
	failed := wsState("d", agentFailed)
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

// windowTexts are the labels of the open window titled title.
func windowTexts(h *harness, title string) string {
	for _, w := range h.app.Driver().AllWindows() {
		if w.Title() != title {
			continue
		}
		var out []string
		for _, o := range test.LaidOutObjects(w.Content()) {
			if l, ok := o.(*widget.Label); ok {
				out = append(out, l.Text)
			}
		}
		return strings.Join(out, "\n")
	}
	return ""
}

func TestRemoveProjectAsksThenRemovesItAndLeavesItsWorktreesOnDisk(t *testing.T) {
	repo := testenv.GitRepo(t, "repo")
	wt := filepath.Join(t.TempDir(), "feat")
	testenv.Git(t, repo, "worktree", "add", "-q", "-b", "feat", wt)
	wt, _ = filepath.EvalSymlinks(wt)
	m := realManager(t, repo)
	h := newHarness(t, Deps{Workspaces: m})
	h.startTray()
	h.waitFor("the project in the menu", func() bool { return find(h.view.menu(), "repo", LabelRemoveProject) != nil })

	find(h.view.menu(), "repo", LabelRemoveProject).Action()
	d := h.u.windows["remove-project:"+repo]
	if d == nil {
		t.Fatal("Remove project… opened no confirmation")
	}
	text := windowTexts(h, "Remove project")
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

	dlg := h.u.openRemoveProject(m.Projects()[0])
	test.Tap(dlg.remove)
	h.waitFor("the window to close", func() bool { return dlg.removed && !h.windowOpen("Remove project") })
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

func TestRemoveProjectNoteCountsWorkspacesAndListsAFewFolders(t *testing.T) {
	p := workspace.Project{Name: "p", Path: "/src/p"}
	if got := RemoveProjectNote(p, nil); !strings.Contains(got, "Nothing is deleted") || strings.Contains(got, "agent") {
		t.Errorf("no workspaces: %q", got)
	}
	var many []string
	for i := range 8 {
		many = append(many, fmt.Sprintf("/wt/%d", i))
	}
	got := RemoveProjectNote(p, many)
	for _, want := range []string{"its 8 workspaces, whose agents stop", "/wt/4", "… and 3 more"} {
		if !strings.Contains(got, want) {
			t.Errorf("note lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "/wt/5") {
		t.Errorf("note lists more than %d folders:\n%s", maxListedFolders, got)
	}
}

func TestAddProjectDialogSaysWhenTheProjectIsAlreadyAdded(t *testing.T) {
	repo := testenv.GitRepo(t, "repo")
	m := realManager(t, repo)
	h := newHarness(t, Deps{Workspaces: m})
	h.startTray()
	d := h.u.openAddProject()
	d.path.SetText(repo + "/")
	test.Tap(d.add)
	h.waitFor("an answer", func() bool { return !d.busy && d.status.Text != "" })
	if d.status.Text != AlreadyAddedNote(m.Projects()[0]) || !strings.Contains(d.status.Text, "already added") {
		t.Errorf("status = %q, want it to say the project is already added", d.status.Text)
	}
	if d.added != nil || !h.windowOpen("Add project") {
		t.Error("the dialog closed as if a project had been added")
	}
}

// recorder writes a script that records its arguments and folder into
// out, one per line, the folder first.
func recorder(t *testing.T) (script, out string) {
	t.Helper()
	dir := t.TempDir()
	script, out = filepath.Join(dir, "rec.sh"), filepath.Join(dir, "out")
	body := "#!/bin/sh\npwd > '" + out + ".tmp'\nfor a in \"$@\"; do printf '%s\\n' \"$a\" >> '" + out + ".tmp'; done\nmv '" + out + ".tmp' '" + out + "'\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script, out
}

func TestOpenTerminalAndEditorRunTheSetCommandInTheFolder(t *testing.T) {
	script, out := recorder(t)
	folder, _ := filepath.EvalSymlinks(t.TempDir())
	for _, tc := range []struct {
		kind string
		set  func(s *settings.Settings)
		want []string
	}{
		{openTerminal, func(s *settings.Settings) { s.TerminalCommand = script + ` --title "a b"` }, []string{folder, "--title", "a b"}},
		{openTerminal, func(s *settings.Settings) { s.TerminalCommand = script + " --dir={path}" }, []string{folder, "--dir=" + folder}},
		{openEditor, func(s *settings.Settings) { s.EditorCommand = script + " -n" }, []string{folder, "-n", folder}},
		{openEditor, func(s *settings.Settings) { s.EditorCommand = script + " --goto {path}/README.md" }, []string{folder, "--goto", folder + "/README.md"}},
	} {
		os.Remove(out)
		store := settings.NewStore(filepath.Join(t.TempDir(), "settings.json"))
		if err := store.Update(tc.set); err != nil {
			t.Fatal(err)
		}
		h := newHarness(t, Deps{Workspaces: newFake(), Settings: store})
		h.u.openIn(tc.kind, "Open", folder)
		var got []byte
		testenv.WaitFor(t, "the command to run", 10*time.Second, func() bool {
			var err error
			got, err = os.ReadFile(out)
			return err == nil
		})
		if lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n"); !slices.Equal(lines, tc.want) {
			t.Errorf("%s: ran with folder and argv %q, want %q", tc.kind, lines, tc.want)
		}
	}
}

func TestOpenTerminalSaysWhichSettingToSetWhenNothingCanRun(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	script, _ := recorder(t)
	failing := filepath.Join(t.TempDir(), "fail.sh")
	if err := os.WriteFile(failing, []byte("#!/bin/sh\necho 'cannot open display' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, terminal, editor, kind string
		want                         []string
	}{
		{"no terminal at all", "", "", openTerminal, []string{"No terminal was found", "terminalCommand"}},
		{"no editor at all", "", "", openEditor, []string{"No editor was found", "editorCommand"}},
		{"a set command that is not there", "no-such-terminal -x", "", openTerminal, []string{`"no-such-terminal"`, "not on PATH", "terminalCommand"}},
		{"a set path that is not there", "/nonexistent/term", "", openTerminal, []string{"/nonexistent/term", "does not exist", "terminalCommand"}},
		{"a set command that fails at once", failing, "", openTerminal, []string{"failed at once", "exit status 3", "cannot open display", "terminalCommand"}},
		{"a folder opener that is missing", "", script, openFolder, []string{"xdg-open is not installed", "Copy path"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := settings.NewStore(filepath.Join(t.TempDir(), "settings.json"))
			if err := store.Update(func(s *settings.Settings) { s.TerminalCommand, s.EditorCommand = tc.terminal, tc.editor }); err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, Deps{Workspaces: newFake(), Settings: store, Getenv: func(string) string { return "" }})
			h.u.openIn(tc.kind, "Open it", t.TempDir())
			var text string
			h.waitFor("an error window", func() bool {
				text = windowTexts(h, "CodeHydra: Open it")
				return text != ""
			})
			for _, want := range tc.want {
				if !strings.Contains(text, want) {
					t.Errorf("the error says %q, want it to hold %q", text, want)
				}
			}
			if strings.Contains(text, "exec:") {
				t.Errorf("the error shows a raw exec error: %q", text)
			}
		})
	}
}

// Windows' default terminal names cmd.exe by its full path: start would
// find a cmd.exe in the repository's folder first.
func TestTheWindowsTerminalIsCmdExeByItsFullPath(t *testing.T) {
	f := finder{goos: "windows", getenv: func(k string) string {
		if k == "SystemRoot" {
			return `C:\Windows`
		}
		return ""
	}, lookPath: func(p string) (string, error) { return p, nil }}
	l, err := f.terminal(`C:\work\repo`, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`C:\Windows/System32/cmd.exe`, "/c", "start", "", `C:\Windows/System32/cmd.exe`}
	if runtime.GOOS == "windows" {
		want[0], want[4] = `C:\Windows\System32\cmd.exe`, `C:\Windows\System32\cmd.exe`
	}
	if !slices.Equal(l.argv, want) {
		t.Fatalf("argv = %q, want %q", l.argv, want)
	}
}

// An xdg-open that cannot open folders says what to do instead.
func TestOpenFolderSaysTheWayOnWhenXdgOpenFails(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "xdg-open"), []byte("#!/bin/sh\necho 'xdg-open: no method available for opening' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	h := newHarness(t, Deps{Workspaces: newFake(), Settings: settings.NewStore(filepath.Join(t.TempDir(), "settings.json")), Getenv: func(string) string { return "" }})
	h.u.openIn(openFolder, "Open folder", t.TempDir())
	var text string
	h.waitFor("an error window", func() bool {
		text = windowTexts(h, "CodeHydra: Open folder")
		return text != ""
	})
	for _, want := range []string{"The file manager (xdg-open) failed at once", "no method available", "Copy path", "xdg-mime default"} {
		if !strings.Contains(text, want) {
			t.Errorf("the error says %q, want it to hold %q", text, want)
		}
	}
}
