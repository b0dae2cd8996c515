package window

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"codehydra/app/internal/uitest"
	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// gitConfig reads one git config value of repo; ok is false when unset.
func gitConfig(t *testing.T, repo, name string) (value string, ok bool) {
	t.Helper()
	cmd := exec.Command("git", "config", "--get", name)
	cmd.Dir = repo
	out, err := cmd.Output()
	if err != nil {
		if ee, isExit := err.(*exec.ExitError); isExit && ee.ExitCode() == 1 {
			return "", false
		}
		t.Fatalf("git config --get %s: %v", name, err)
	}
	return strings.TrimSpace(string(out)), true
}

func TestMetadataEditorRoundTripsToGitConfig(t *testing.T) {
	repo := testenv.GitRepo(t, "repo")
	m := uitest.RealManager(t, repo)
	ctx := context.Background()
	ws, err := m.Create(ctx, workspace.CreateOptions{ProjectPath: repo, Name: "feat"})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Deps{Workspaces: m})
	w := h.u.openSettings()
	e := w.meta
	if len(e.choices) != 1 || e.workspace.Options[0] != "repo / feat" {
		t.Fatalf("workspace choices %q", e.workspace.Options)
	}
	e.selectWorkspace(ws.Path)
	h.waitFor("the base row", func() bool { _, ok := e.rowOf["base"]; return ok })
	if got := e.rowOf["base"].value.Text; got != "main" {
		t.Errorf("base = %q, want main", got)
	}
	if !e.rowOf["base"].del.Disabled() {
		t.Error("base can be deleted, which the manager refuses")
	}

	// Add.
	test.Type(e.key, "Note")
	test.Type(e.value, "hello world")
	test.Tap(e.set)
	h.waitFor("the note row", func() bool { _, ok := e.rowOf["note"]; return ok })
	if v, _ := gitConfig(t, repo, "branch.feat.codehydra.note"); v != "hello world" {
		t.Errorf("git config note = %q, want hello world", v)
	}
	if e.key.Text != "" || e.value.Text != "" || e.status.Text != "Saved Note." {
		t.Errorf("after a save: key %q value %q status %q", e.key.Text, e.value.Text, e.status.Text)
	}

	// Edit.
	test.Tap(e.rowOf["note"].edit)
	if e.key.Text != "note" || e.value.Text != "hello world" {
		t.Fatalf("Edit filled key %q value %q", e.key.Text, e.value.Text)
	}
	e.value.SetText("")
	test.Type(e.value, "changed")
	test.Tap(e.set)
	h.waitFor("the changed value", func() bool { r, ok := e.rowOf["note"]; return ok && r.value.Text == "changed" })
	if v, _ := gitConfig(t, repo, "branch.feat.codehydra.note"); v != "changed" {
		t.Errorf("git config note = %q, want changed", v)
	}

	// A change an agent makes shows up without reopening.
	owner := "agent-7"
	if err := m.SetMetadata(ctx, ws.Path, "owner", &owner); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the agent's key", func() bool { r, ok := e.rowOf["owner"]; return ok && r.value.Text == owner })

	// Delete.
	test.Tap(e.rowOf["note"].del)
	test.Tap(h.app.AskedQuestion("Delete note?").OK)
	h.waitFor("the note gone", func() bool { _, ok := e.rowOf["note"]; return !ok })
	if v, ok := gitConfig(t, repo, "branch.feat.codehydra.note"); ok {
		t.Errorf("git config note still %q", v)
	}

	// Reopening reads git again.
	w.win.Close()
	w = h.u.openSettings()
	w.meta.selectWorkspace(ws.Path)
	h.waitFor("the rows", func() bool { _, ok := w.meta.rowOf["owner"]; return ok })
	if _, ok := w.meta.rowOf["note"]; ok {
		t.Error("the deleted key is back")
	}
}

func TestMetadataEditorValidatesLikeWorkspaceSetMetadata(t *testing.T) {
	f := uitest.NewWorkspaces()
	ws := f.AddWorkspace("proj", "feat")
	h := newHarness(t, Deps{Workspaces: f})
	e := h.u.openSettings().meta

	e.key.SetText("note")
	e.value.SetText("x")
	if !e.set.Disabled() {
		t.Error("Set is enabled before a workspace is chosen")
	}
	e.selectWorkspace(ws.Path)
	h.waitFor("the rows", func() bool { return len(e.rowOf) > 0 })

	tests := []struct {
		name, key, value, want string
	}{
		{"empty key", "", "x", "the metadata key is empty"},
		{"key starting with a digit", "1note", "x", `metadata key "1note" is not valid`},
		{"key with underscore", "my_note", "x", "is not valid"},
		{"key too long", strings.Repeat("k", workspace.MaxMetadataKeyLength+1), "x", "use at most"},
		{"value with newline", "note", "a\nb", "single line"},
		{"value too long", "note", strings.Repeat("v", workspace.MaxMetadataValueLength+1), "use at most"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.key.SetText(tt.key)
			e.value.SetText(tt.value)
			if !e.set.Disabled() {
				t.Error("Set is enabled")
			}
			e.submit()
			if !strings.Contains(e.status.Text, tt.want) {
				t.Errorf("status = %q, want %q in it", e.status.Text, tt.want)
			}
		})
	}
	if md, _ := f.Metadata(context.Background(), ws.Path); len(md) != 1 {
		t.Errorf("metadata changed: %v", md)
	}
}

// The manager's order (by name, case-folded, then path) is the only one:
// the metadata editor lists workspaces as the manager does, as the tray
// does (app's TestTrayShowsTheManagersOrder). "Gamma" after "beta" is what
// a byte-wise sort gets wrong.
func TestMetadataEditorShowsTheManagersOrder(t *testing.T) {
	zoo, apps := testenv.GitRepo(t, "zoo"), testenv.GitRepo(t, "Apps")
	m := uitest.RealManager(t, zoo, apps)
	for _, name := range []string{"beta", "Gamma", "Alpha", "alpha2"} {
		if _, err := m.Create(context.Background(), workspace.CreateOptions{ProjectPath: zoo, Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	h := newHarness(t, Deps{Workspaces: m})
	e := h.u.openSettings().meta
	want := []string{"zoo / Alpha", "zoo / alpha2", "zoo / beta", "zoo / Gamma"}
	if got := e.workspace.Options; !slices.Equal(got, want) {
		t.Errorf("metadata editor offers %q, want %q", got, want)
	}
}
