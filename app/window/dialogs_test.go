package window

import (
	"context"
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

// openCreateLoaded opens the create dialog and waits for its project's
// branches.
func openCreateLoaded(t *testing.T, h *harness) *createDialog {
	t.Helper()
	d := h.u.openCreate("")
	if d == nil {
		t.Fatal("no create dialog")
	}
	h.waitFor("the branches", func() bool { return !d.loading && d.projectPath != "" })
	return d
}

func TestCreateDialogValidatesTheNameAsItIsTyped(t *testing.T) {
	f := uitest.NewWorkspaces()
	f.AddWorkspace("proj", "taken")
	h := newHarness(t, Deps{Workspaces: f})
	d := openCreateLoaded(t, h)

	if got := d.base.Selected; got != "main" {
		t.Errorf("base = %q, want the default base main preselected", got)
	}
	if !slices.Equal(d.base.Options, []string{"develop", "main"}) {
		t.Errorf("base options = %q, want the project's branches", d.base.Options)
	}
	tests := []struct {
		name    string
		typed   string
		wantErr string // "" = valid
		canGo   bool
	}{
		{"empty is no error yet", "", "", false},
		{"space", "my feature", "is not valid", false},
		{"dot dot", "a..b", `must not contain ".."`, false},
		{"leading dash", "-x", "is not valid", false},
		{"lock suffix", "x.lock", `".lock"`, false},
		{"too long", strings.Repeat("a", workspace.MaxNameLength+1), "use at most", false},
		{"taken", "taken", "already has a workspace named taken", false},
		{"fine", "feature/login", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d.name.SetText("")
			test.Type(d.name, tt.typed)
			if tt.wantErr == "" && d.name.reason.Text != "" || !strings.Contains(d.name.reason.Text, tt.wantErr) {
				t.Errorf("name error = %q, want %q", d.name.reason.Text, tt.wantErr)
			}
			if d.create.Disabled() == tt.canGo {
				t.Errorf("Create enabled = %v, want %v", !d.create.Disabled(), tt.canGo)
			}
		})
	}
}

func TestCreateDialogShowsTheManagersErrorAndStaysOpen(t *testing.T) {
	f := uitest.NewWorkspaces()
	f.AddWorkspace("proj", "a")
	f.FailCreate(workspace.Errorf(workspace.CodeConflict, "branch main is checked out in the project's main checkout; choose another name"))
	h := newHarness(t, Deps{Workspaces: f})
	d := openCreateLoaded(t, h)

	d.name.SetText("main")
	test.Tap(d.create)
	h.waitFor("the error", func() bool { return !d.busy && d.status.Text != "" })
	if want := "Could not create the workspace: branch main is checked out"; !strings.HasPrefix(d.status.Text, want) {
		t.Errorf("status = %q, want it to start with %q", d.status.Text, want)
	}
	if !h.windowOpen("New workspace") || d.create.Disabled() {
		t.Error("after a failure the window must stay open with Create enabled")
	}
	if got := f.Created(); len(got) != 1 || got[0] != (workspace.CreateOptions{ProjectPath: "/src/proj", Name: "main", Base: "main"}) {
		t.Errorf("Create got %+v", got)
	}
}

func TestCreateDialogSaysAsYouTypeThatAnExistingBranchIsReusedAndKeepsItsBase(t *testing.T) {
	repo := testenv.GitRepo(t, "repo")
	testenv.Git(t, repo, "branch", "develop")
	testenv.Git(t, repo, "branch", "kept")
	testenv.Git(t, repo, "config", "branch.kept.codehydra.base", "develop")
	testenv.Git(t, repo, "config", "branch.kept.codehydra.note", "mine")
	m := uitest.RealManager(t, repo)
	h := newHarness(t, Deps{Workspaces: m, Agents: uitest.NewAgents()})
	d := openCreateLoaded(t, h)

	for _, tc := range []struct {
		typed  string
		reused bool
	}{
		{"kept", true},
		{"brand-new", false},
		{"main", false}, // checked out in the main checkout: Create refuses it
	} {
		d.name.SetText("")
		test.Type(d.name, tc.typed)
		says := strings.Contains(d.reuse.Text, "Branch "+tc.typed+" exists") && strings.Contains(d.reuse.Text, "“Start from” does not apply")
		if says != tc.reused || (d.reuse.Text != "") != tc.reused {
			t.Errorf("typed %q: hint %q, want reused = %v", tc.typed, d.reuse.Text, tc.reused)
		}
		if d.base.Disabled() != tc.reused {
			t.Errorf("typed %q: Start from enabled = %v, want %v", tc.typed, !d.base.Disabled(), !tc.reused)
		}
	}

	d.name.SetText("")
	test.Type(d.name, "kept")
	test.Tap(d.create)
	h.waitFor("the window to close", func() bool { return d.created != nil && !h.windowOpen("New workspace") })
	if !d.created.BranchReused {
		t.Errorf("created %+v, want the branch reused", *d.created)
	}
	md, err := m.Metadata(context.Background(), d.created.Path)
	if err != nil || md["base"] != "develop" || md["note"] != "mine" {
		t.Errorf("metadata = %v, %v; want base develop and the note kept", md, err)
	}
}

func TestCreateDialogWithoutProjectsSaysToAddOne(t *testing.T) {
	h := newHarness(t, Deps{Workspaces: uitest.NewWorkspaces()})
	d := h.u.openCreate("")
	d.name.SetText("feature")
	if !d.create.Disabled() {
		t.Error("Create is enabled without a project")
	}
	if !strings.Contains(d.status.Text, "Add project") {
		t.Errorf("status = %q, want a hint to add a project", d.status.Text)
	}
}

// The tray shows the workspace made as the manager reports it (app's
// TestTrayFollowsWhatTheWindowsDoToARealManager).
func TestCreateDialogMakesAWorkspaceFromTheChosenBase(t *testing.T) {
	repo := testenv.GitRepo(t, "repo")
	testenv.Git(t, repo, "branch", "develop")
	m := uitest.RealManager(t, repo)
	h := newHarness(t, Deps{Workspaces: m, Agents: uitest.NewAgents()})
	d := openCreateLoaded(t, h)
	if d.base.Selected != "main" || !slices.Contains(d.base.Options, "develop") {
		t.Fatalf("base %q of %q, want main preselected among the branches", d.base.Selected, d.base.Options)
	}
	d.base.SetSelected("develop")
	test.Type(d.name, "feature/login")
	test.Tap(d.create)
	h.waitFor("the window to close", func() bool { return d.created != nil && !h.windowOpen("New workspace") })
	if list, err := m.Workspaces(repo); err != nil || len(list) != 1 || list[0].Path != d.created.Path {
		t.Errorf("the manager's workspaces %+v, %v; want the one created", list, err)
	}
	if fi, err := os.Stat(d.created.Path); err != nil || !fi.IsDir() {
		t.Errorf("worktree %s: %v", d.created.Path, err)
	}
	md, err := m.Metadata(context.Background(), d.created.Path)
	if err != nil || md["base"] != "develop" {
		t.Errorf("metadata = %v, %v; want base develop", md, err)
	}
}

func TestDeleteDialogWarnsAboutUncommittedAndUnmergedWork(t *testing.T) {
	repo := testenv.GitRepo(t, "repo")
	m := uitest.RealManager(t, repo)
	ctx := context.Background()
	clean, err := m.Create(ctx, workspace.CreateOptions{ProjectPath: repo, Name: "clean"})
	if err != nil {
		t.Fatal(err)
	}
	dirty, err := m.Create(ctx, workspace.CreateOptions{ProjectPath: repo, Name: "dirty"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dirty.Path, "new.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.Git(t, dirty.Path, "add", "new.txt")
	testenv.Git(t, dirty.Path, "commit", "-q", "-m", "one")
	if err := os.WriteFile(filepath.Join(dirty.Path, "README.md"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Deps{Workspaces: m})

	dc := h.u.openDelete(clean)
	h.waitFor("the clean status", func() bool { return strings.HasPrefix(dc.warning.Text, "No uncommitted") })
	if dc.keepBranch.Checked {
		t.Error("keep branch is preselected for a workspace with nothing to lose")
	}

	dd := h.u.openDelete(dirty)
	h.waitFor("the dirty status", func() bool { return strings.Contains(dd.warning.Text, "uncommitted changes") })
	if !strings.Contains(dd.warning.Text, "1 commit not merged into main") {
		t.Errorf("warning = %q, want the unmerged commit", dd.warning.Text)
	}
	if !dd.keepBranch.Checked {
		t.Error("keep branch is not preselected though the branch has unmerged commits")
	}
}

func TestDeleteDialogFollowsTheStepsAndClosesWhenDone(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(map[bool]string{false: "delete branch", true: "keep branch"}[keep], func(t *testing.T) {
			repo := testenv.GitRepo(t, "repo")
			m := uitest.RealManager(t, repo)
			ws, err := m.Create(context.Background(), workspace.CreateOptions{ProjectPath: repo, Name: "feat"})
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, Deps{Workspaces: m})
			d := h.u.openDelete(ws)
			h.waitFor("the status", func() bool { return !strings.HasPrefix(d.warning.Text, "Checking") })
			d.keepBranch.SetChecked(keep)
			test.Tap(d.del)
			if !d.progress.Visible() || d.del.Text != "Delete" || !d.del.Disabled() {
				t.Error("a running delete must show progress and disable Delete")
			}
			h.waitFor("the window to close", func() bool { return !h.windowOpen("Delete workspace") })
			if d.progress.Value != 1 || d.step.Text != "Deleted." {
				t.Errorf("progress %v %q, want 1 and Deleted.", d.progress.Value, d.step.Text)
			}
			if _, err := os.Stat(ws.Path); !os.IsNotExist(err) {
				t.Errorf("worktree still there: %v", err)
			}
			branches := testenv.Git(t, repo, "branch", "--list", "feat")
			if keep != (branches != "") {
				t.Errorf("branch list %q with keepBranch %v", branches, keep)
			}
			if list, err := m.Workspaces(repo); err != nil || len(list) != 0 {
				t.Errorf("the manager's workspaces %+v, %v; want none", list, err)
			}
		})
	}
}

func TestDeleteDialogKeepsABranchThatExistedBeforeUnlessUnticked(t *testing.T) {
	for _, untick := range []bool{false, true} {
		t.Run(map[bool]string{false: "kept by default", true: "deleted when unticked"}[untick], func(t *testing.T) {
			repo := testenv.GitRepo(t, "repo")
			testenv.Git(t, repo, "branch", "mine")
			m := uitest.RealManager(t, repo)
			ws, err := m.Create(context.Background(), workspace.CreateOptions{ProjectPath: repo, Name: "mine"})
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, Deps{Workspaces: m})
			d := h.u.openDelete(ws)
			h.waitFor("the branch's origin", func() bool { return strings.Contains(d.keepBranch.Text, "existed before") })
			if !d.keepBranch.Checked {
				t.Fatal("a branch that existed before the workspace is not ticked to be kept")
			}
			if untick {
				d.keepBranch.SetChecked(false)
			}
			test.Tap(d.del)
			h.waitFor("the window to close", func() bool { return !h.windowOpen("Delete workspace") })
			if _, err := os.Stat(ws.Path); !os.IsNotExist(err) {
				t.Errorf("worktree still there: %v", err)
			}
			if kept := testenv.Git(t, repo, "branch", "--list", "mine") != ""; kept == untick {
				t.Errorf("branch kept = %v after the box was unticked = %v", kept, untick)
			}
		})
	}
}

func TestDeleteDialogProgressFollowsDeleteEvents(t *testing.T) {
	f := uitest.NewWorkspaces()
	ws := f.AddWorkspace("proj", "feat")
	h := newHarness(t, Deps{Workspaces: f})
	d := h.u.openDelete(ws)

	// A delete an agent started through MCP: only its events are seen.
	last := len(workspace.DeleteSteps) - 1
	for i, step := range workspace.DeleteSteps[:last] {
		f.Publish(workspace.Event{Kind: workspace.EventDeleteProgress, Workspace: ws, Step: step})
		want := float64(i) / float64(last)
		h.waitFor(string(step), func() bool { return d.step.Text == StepText(step) && d.progress.Value == want })
		if !d.del.Disabled() {
			t.Errorf("Delete is enabled during step %s", step)
		}
	}
	// Events of other workspaces do not move it.
	other := workspace.Workspace{Path: "/wt/other"}
	f.Publish(workspace.Event{Kind: workspace.EventDeleteProgress, Workspace: other, Step: workspace.StepDone})
	f.Publish(workspace.Event{Kind: workspace.EventDeleteProgress, Workspace: ws, Step: workspace.StepDone})
	h.waitFor("done", func() bool { return d.done })
	if h.windowOpen("Delete workspace") {
		t.Error("the window stays open after done")
	}
}

func TestDeleteDialogOffersRetryAfterAFailedStep(t *testing.T) {
	f := uitest.NewWorkspaces()
	ws := f.AddWorkspace("proj", "feat")
	f.FailDelete(workspace.StepRemoveWorktree)
	h := newHarness(t, Deps{Workspaces: f})
	d := h.u.openDelete(ws)

	test.Tap(d.del)
	h.waitFor("the failure", func() bool { return d.del.Text == "Retry" && !d.del.Disabled() })
	h.drain()
	for _, want := range []string{"Removing the worktree folder", "device busy", "press Retry"} {
		if !strings.Contains(d.status.Text, want) {
			t.Errorf("status = %q, want %q in it", d.status.Text, want)
		}
	}
	// remove-worktree is the third of the five steps before done.
	if d.progress.Value != 0.4 {
		t.Errorf("progress = %v, want it left at the failed step (0.4)", d.progress.Value)
	}
	if d.anyway.Visible() {
		t.Error("Delete anyway is offered after a failure that is not the teardown's")
	}
	test.Tap(d.del)
	h.waitFor("the retry to finish", func() bool { return d.done && !h.windowOpen("Delete workspace") })
	if len(f.Deletes()) != 2 {
		t.Errorf("%d deletes, want 2", len(f.Deletes()))
	}
}

func TestAddProjectDialogReportsWhatIsWrongWithThePath(t *testing.T) {
	repo := testenv.GitRepo(t, "repo")
	notRepo := t.TempDir()
	m := uitest.RealManager(t)
	h := newHarness(t, Deps{Workspaces: m})
	d := h.u.openAddProject()

	if !d.add.Disabled() {
		t.Error("Add is enabled with no path")
	}
	tests := []struct {
		path, want string
	}{
		{filepath.Join(notRepo, "missing"), "Could not add the project: "},
		{notRepo, "Could not add the project: "},
		{"relative/path", "Could not add the project: "},
	}
	for _, tt := range tests {
		d.path.SetText(tt.path)
		test.Tap(d.add)
		h.waitFor("the error for "+tt.path, func() bool { return !d.busy && d.status.Text != "" })
		if !strings.HasPrefix(d.status.Text, tt.want) || len(d.status.Text) <= len(tt.want) {
			t.Errorf("%s: status = %q", tt.path, d.status.Text)
		}
		if !h.windowOpen("Add project") {
			t.Fatalf("%s: the window closed on an error", tt.path)
		}
	}

	d.path.SetText("")
	test.Type(d.path, repo)
	if d.status.Text != "" {
		t.Errorf("typing did not clear the old error: %q", d.status.Text)
	}
	test.Tap(d.add)
	h.waitFor("the window to close", func() bool { return d.added != nil && !h.windowOpen("Add project") })
	if ps := m.Projects(); len(ps) != 1 || ps[0].Path != repo {
		t.Errorf("projects = %+v", ps)
	}
}

func TestAddProjectDialogExpandsTheHomeFolder(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err) // TestMain sets HOME
	}
	for in, want := range map[string]string{
		"~":          home,
		"~/src/x":    filepath.Join(home, "src", "x"),
		"/abs/~/x":   "/abs/~/x",
		"~other/x":   "~other/x",
		"relative/x": "relative/x",
	} {
		if got := expandHome(in); got != want {
			t.Errorf("expandHome(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDeleteDialogOpenedDuringADeleteShowsItsProgress(t *testing.T) {
	f := uitest.NewWorkspaces()
	ws := f.AddWorkspace("proj", "feat")
	h := newHarness(t, Deps{Workspaces: f})
	// The tray saw the delete's events (app's TestTrayTellsTheWindowsHowADeleteGoes).
	h.tray.setDelete(ws.Path, DeleteProgress{Running: true, Step: workspace.StepRemoveWorktree})

	d := h.u.openDelete(ws)
	if !d.del.Disabled() || d.step.Text != StepText(workspace.StepRemoveWorktree) || d.progress.Value != 0.4 {
		t.Errorf("dialog: Delete enabled %v, step %q, progress %v; want the running delete", !d.del.Disabled(), d.step.Text, d.progress.Value)
	}
	if again := h.u.openDelete(ws); again != nil {
		t.Error("a second Delete… opened a second window")
	}

	// One whose delete failed offers a retry, saying where it failed.
	stuck := f.AddWorkspace("proj", "stuck")
	h.tray.setDelete(stuck.Path, DeleteProgress{Step: workspace.StepDeleteBranch, Err: "branch is checked out"})
	d = h.u.openDelete(stuck)
	if d.del.Text != "Retry" || d.del.Disabled() || !strings.Contains(d.status.Text, "Deleting the branch") || !strings.Contains(d.status.Text, "branch is checked out") {
		t.Errorf("dialog of a failed delete: button %q (off %v), status %q; want Retry and why", d.del.Text, d.del.Disabled(), d.status.Text)
	}
}

// A reason under the name makes the window taller (the desktop driver
// grows it to fit, as the test does here); once the reason goes, the
// window is as short as its content, with no blank band under the buttons.
func TestCreateDialogShrinksBackWhenTheReasonGoes(t *testing.T) {
	f := uitest.NewWorkspaces()
	f.AddWorkspace("proj", "taken")
	h := newHarness(t, Deps{Workspaces: f})
	d := openCreateLoaded(t, h)
	test.Type(d.name, "fine")
	short := d.win.Content().MinSize().Height
	d.name.SetText("")
	test.Type(d.name, "a b")
	tall := d.win.Content().MinSize().Height
	if d.name.reason.Text == "" || tall <= short {
		t.Fatalf("reason %q, content height %v with it and %v without", d.name.reason.Text, tall, short)
	}
	d.win.Resize(fyne.NewSize(520, tall))
	d.name.SetText("")
	test.Type(d.name, "fine")
	if got := d.win.Canvas().Size().Height; got > short+1 {
		t.Fatalf("height after the reason went %v, want %v", got, short)
	}
}
