package window

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"codehydra/app/internal/uitest"
	"codehydra/internal/settings"
	"codehydra/internal/testenv"
	"codehydra/workspace"
)

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
	m := uitest.RealManager(t, repo)
	h := newHarness(t, Deps{Workspaces: m})
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
		kind Program
		set  func(s *settings.Settings)
		want []string
	}{
		{Terminal, func(s *settings.Settings) { s.TerminalCommand = script + ` --title "a b"` }, []string{folder, "--title", "a b"}},
		{Terminal, func(s *settings.Settings) { s.TerminalCommand = script + " --dir={path}" }, []string{folder, "--dir=" + folder}},
		{Editor, func(s *settings.Settings) { s.EditorCommand = script + " -n" }, []string{folder, "-n", folder}},
		{Editor, func(s *settings.Settings) { s.EditorCommand = script + " --goto {path}/README.md" }, []string{folder, "--goto", folder + "/README.md"}},
	} {
		os.Remove(out)
		store := settings.NewStore(filepath.Join(t.TempDir(), "settings.json"))
		if err := store.Update(tc.set); err != nil {
			t.Fatal(err)
		}
		h := newHarness(t, Deps{Workspaces: uitest.NewWorkspaces(), Settings: store})
		h.u.OpenIn(tc.kind, "Open", folder)
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
		name, terminal, editor string
		kind                   Program
		want                   []string
	}{
		{"no terminal at all", "", "", Terminal, []string{"No terminal was found", "terminalCommand"}},
		{"no editor at all", "", "", Editor, []string{"No editor was found", "editorCommand"}},
		{"a set command that is not there", "no-such-terminal -x", "", Terminal, []string{`"no-such-terminal"`, "not on PATH", "terminalCommand"}},
		{"a set path that is not there", "/nonexistent/term", "", Terminal, []string{"/nonexistent/term", "does not exist", "terminalCommand"}},
		{"a set command that fails at once", failing, "", Terminal, []string{"failed at once", "exit status 3", "cannot open display", "terminalCommand"}},
		{"a folder opener that is missing", "", script, FileManager, []string{"xdg-open is not installed", "Copy path"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := settings.NewStore(filepath.Join(t.TempDir(), "settings.json"))
			if err := store.Update(func(s *settings.Settings) { s.TerminalCommand, s.EditorCommand = tc.terminal, tc.editor }); err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, Deps{Workspaces: uitest.NewWorkspaces(), Settings: store, Getenv: func(string) string { return "" }})
			h.u.OpenIn(tc.kind, "Open it", t.TempDir())
			var text string
			h.waitFor("an error window", func() bool {
				text = h.app.Texts("CodeHydra: Open it")
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
	h := newHarness(t, Deps{Workspaces: uitest.NewWorkspaces(), Settings: settings.NewStore(filepath.Join(t.TempDir(), "settings.json")), Getenv: func(string) string { return "" }})
	h.u.OpenIn(FileManager, "Open folder", t.TempDir())
	var text string
	h.waitFor("an error window", func() bool {
		text = h.app.Texts("CodeHydra: Open folder")
		return text != ""
	})
	for _, want := range []string{"The file manager (xdg-open) failed at once", "no method available", "Copy path", "xdg-mime default"} {
		if !strings.Contains(text, want) {
			t.Errorf("the error says %q, want it to hold %q", text, want)
		}
	}
}
