package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"codehydra/internal/paths"
	"codehydra/internal/testenv"
)

func TestCreateMakesAWorktreeOnANewBranchUnderTheRoot(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ev := record(t, m)
	head := testenv.Git(t, p.Path, "rev-parse", "HEAD")

	ws, err := m.Create(context.Background(), CreateOptions{ProjectPath: p.Path, Name: "feature/login"})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(p.Path))
	want := filepath.Join(m.opts.WorktreeRoot, "project-"+hex.EncodeToString(sum[:])[:8], "workspaces", "feature%login")
	if ws.Path != want {
		t.Fatalf("path = %s, want %s", ws.Path, want)
	}
	if ws.Name != "feature/login" || ws.Branch != "feature/login" || ws.ProjectPath != p.Path || ws.Head != head || ws.Detached {
		t.Fatalf("workspace = %+v", ws)
	}
	if got := testenv.Git(t, ws.Path, "symbolic-ref", "--short", "HEAD"); got != "feature/login" {
		t.Fatalf("worktree is on %q", got)
	}
	if got := testenv.Git(t, p.Path, "config", "branch.feature/login.codehydra.base"); got != "main" {
		t.Fatalf("base metadata = %q, want main", got)
	}
	if _, err := testenv.GitErr(p.Path, "config", "branch.feature/login.remote"); err == nil {
		t.Fatal("new branch tracks its base; it should have no upstream")
	}
	if got, err := m.Resolve(ws.Path); err != nil || got != ws {
		t.Fatalf("Resolve = %+v, %v", got, err)
	}
	if list, _ := m.Workspaces(p.Path); len(list) != 1 || list[0] != ws {
		t.Fatalf("Workspaces = %+v", list)
	}
	ev.waitFor(t, soon, "workspace-added", func(e Event) bool { return e.Kind == EventWorkspaceAdded && e.Workspace == ws })
}

func TestCreateDefaultsTheBaseToTheRemoteHeadBranch(t *testing.T) {
	t.Parallel()
	upstream := testenv.GitRepo(t, "project")
	remoteHead := testenv.Git(t, upstream, "rev-parse", "HEAD")
	clone := filepath.Join(realDir(t), "clone")
	testenv.Git(t, "", "clone", "-q", upstream, clone)
	testenv.CommitFile(t, clone, "local.txt", "local only\n", "local commit on main")

	m, _ := newManager(t, Options{})
	p, err := m.AddProject(context.Background(), clone)
	if err != nil {
		t.Fatal(err)
	}
	ws := create(t, m, p, "from-remote")
	if ws.Head != remoteHead {
		t.Fatalf("head = %s, want origin/main %s", ws.Head, remoteHead)
	}
	md, err := m.Metadata(context.Background(), ws.Path)
	if err != nil || md["base"] != "origin/main" {
		t.Fatalf("metadata = %v, %v; want base origin/main", md, err)
	}
}

func TestCreateStartsAtAnExplicitBase(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	testenv.Git(t, p.Path, "checkout", "-q", "-b", "develop")
	dev := testenv.CommitFile(t, p.Path, "dev.txt", "dev\n", "develop commit")
	testenv.Git(t, p.Path, "checkout", "-q", "main")

	ws, err := m.Create(context.Background(), CreateOptions{ProjectPath: p.Path, Name: "on-dev", Base: "develop"})
	if err != nil {
		t.Fatal(err)
	}
	if ws.Head != dev {
		t.Fatalf("head = %s, want %s", ws.Head, dev)
	}
	if got := testenv.Git(t, p.Path, "config", "branch.on-dev.codehydra.base"); got != "develop" {
		t.Fatalf("base = %q", got)
	}
}

func TestCreateReusesAnExistingBranchWithoutResettingIt(t *testing.T) {
	t.Parallel()
	for _, base := range []string{"", "main"} {
		t.Run("base="+base, func(t *testing.T) {
			m, p := setup(t)
			testenv.Git(t, p.Path, "checkout", "-q", "-b", "existing")
			tip := testenv.CommitFile(t, p.Path, "work.txt", "work\n", "work on existing")
			testenv.Git(t, p.Path, "checkout", "-q", "main")

			ws, err := m.Create(context.Background(), CreateOptions{ProjectPath: p.Path, Name: "existing", Base: base})
			if err != nil {
				t.Fatal(err)
			}
			if ws.Head != tip || testenv.Git(t, p.Path, "rev-parse", "existing") != tip {
				t.Fatalf("branch moved: head %s, want %s", ws.Head, tip)
			}
			if !exists(filepath.Join(ws.Path, "work.txt")) {
				t.Fatal("worktree does not show the branch's own commit")
			}
			// It had no recorded base and gets none: its base is the
			// project's default, as for a worktree made outside the app.
			if got, _ := testenv.GitErr(p.Path, "config", "branch.existing.codehydra.base"); got != "" {
				t.Fatalf("recorded base = %q, want none recorded", got)
			}
			if md, err := m.Metadata(context.Background(), ws.Path); err != nil || md["base"] != "main" {
				t.Fatalf("metadata = %v, %v; want base main", md, err)
			}
			if !ws.BranchReused || !strings.Contains(ws.Note, "branch existing already existed and is reused") {
				t.Fatalf("the create does not say the branch is reused: %+v", ws)
			}
		})
	}
}

func TestCreateOnAnExistingBranchKeepsItsRecordedBaseAndSaysTheAskedBaseDidNotApply(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	testenv.Git(t, p.Path, "branch", "develop")
	ws := create(t, m, p, "kept")
	if err := m.SetMetadata(context.Background(), ws.Path, "base", ptr("develop")); err != nil {
		t.Fatal(err)
	}
	if err := m.SetMetadata(context.Background(), ws.Path, "note", ptr("mine")); err != nil {
		t.Fatal(err)
	}
	deleteDone(t, m, ws.Path, DeleteOptions{KeepBranch: true})
	ev := record(t, m)

	again, err := m.Create(context.Background(), CreateOptions{ProjectPath: p.Path, Name: "kept", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if got := testenv.Git(t, p.Path, "config", "branch.kept.codehydra.base"); got != "develop" {
		t.Fatalf("recorded base = %q after a create that asked for main, want develop kept", got)
	}
	md, err := m.Metadata(context.Background(), again.Path)
	if err != nil || md["base"] != "develop" || md["note"] != "mine" {
		t.Fatalf("metadata = %v, %v; want base develop and the note kept", md, err)
	}
	if !again.BranchReused {
		t.Fatal("the create does not say the branch is reused")
	}
	for _, want := range []string{"reused", "recorded base develop", "base main that was asked for does not apply"} {
		if !strings.Contains(again.Note, want) {
			t.Errorf("note %q does not say %q", again.Note, want)
		}
	}
	added := ev.waitFor(t, soon, "workspace-added", func(e Event) bool { return e.Kind == EventWorkspaceAdded })
	if !added.Workspace.BranchReused || added.Workspace.Note != again.Note {
		t.Errorf("the workspace-added event does not say the branch is reused: %+v", added.Workspace)
	}
	// The registry keeps what the workspace is, not how it was made.
	for _, w := range m.AllWorkspaces() {
		if w.BranchReused || w.Note != "" {
			t.Errorf("listed workspace carries the create's note: %+v", w)
		}
	}
	// A new branch says nothing of the kind.
	if fresh := create(t, m, p, "fresh"); fresh.BranchReused || fresh.Note != "" {
		t.Errorf("a new branch's create says %+v", fresh)
	}
}

func TestCreateConflicts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		prepare func(t *testing.T, m *Manager, p Project) string // returns the name to create
		wantMsg string
	}{
		{"branch checked out in the main checkout", func(t *testing.T, m *Manager, p Project) string {
			return "main"
		}, "main checkout"},
		{"workspace on the branch exists", func(t *testing.T, m *Manager, p Project) string {
			create(t, m, p, "taken")
			return "taken"
		}, "already exists"},
		{"branch checked out in a worktree made outside", func(t *testing.T, m *Manager, p Project) string {
			testenv.Git(t, p.Path, "worktree", "add", "-q", "-b", "outside", filepath.Join(realDir(t), "o"))
			return "outside"
		}, "already exists"},
		{"a branch that is a folder of the new name", func(t *testing.T, m *Manager, p Project) string {
			testenv.Git(t, p.Path, "branch", "feature")
			return "feature/x"
		}, "clashes with an existing branch"},
		{"non-empty folder at the target", func(t *testing.T, m *Manager, p Project) string {
			root, _ := m.worktreeRoot()
			testenv.WriteFile(t, filepath.Join(worktreePath(root, p.Path, "busy-folder"), "keep.txt"), "mine")
			return "busy-folder"
		}, "not an empty folder"},
		{"file at the target", func(t *testing.T, m *Manager, p Project) string {
			root, _ := m.worktreeRoot()
			testenv.WriteFile(t, worktreePath(root, p.Path, "a-file"), "mine")
			return "a-file"
		}, "not an empty folder"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, p := setup(t)
			name := tt.prepare(t, m, p)
			branchBefore, _ := testenv.GitErr(p.Path, "rev-parse", "--verify", "-q", "refs/heads/"+name)
			_, err := m.Create(context.Background(), CreateOptions{ProjectPath: p.Path, Name: name})
			wantCode(t, err, CodeConflict)
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not say %q", err, tt.wantMsg)
			}
			branchAfter, _ := testenv.GitErr(p.Path, "rev-parse", "--verify", "-q", "refs/heads/"+name)
			if branchAfter != branchBefore {
				t.Errorf("branch %s changed from %q to %q", name, branchBefore, branchAfter)
			}
		})
	}
}

func TestCreateKeepsTheUserFileInAConflictingFolder(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	root, _ := m.worktreeRoot()
	keep := filepath.Join(worktreePath(root, p.Path, "x"), "keep.txt")
	testenv.WriteFile(t, keep, "mine")
	_, err := m.Create(context.Background(), CreateOptions{ProjectPath: p.Path, Name: "x"})
	wantCode(t, err, CodeConflict)
	if b, err := os.ReadFile(keep); err != nil || string(b) != "mine" {
		t.Fatalf("user file = %q, %v", b, err)
	}
}

func TestCreateIntoAnExistingEmptyFolder(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	root, _ := m.worktreeRoot()
	dir := worktreePath(root, p.Path, "empty")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ws := create(t, m, p, "empty")
	if ws.Path != dir || !exists(filepath.Join(dir, "README.md")) {
		t.Fatalf("workspace = %+v", ws)
	}
}

func TestCreateRejectsInvalidInput(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	tests := []struct {
		name string
		o    CreateOptions
		code Code
	}{
		{"bad name", CreateOptions{ProjectPath: p.Path, Name: "a..b"}, CodeInvalidInput},
		{"empty name", CreateOptions{ProjectPath: p.Path}, CodeInvalidInput},
		{"unknown base", CreateOptions{ProjectPath: p.Path, Name: "x", Base: "no-such-branch"}, CodeInvalidInput},
		{"option as base", CreateOptions{ProjectPath: p.Path, Name: "x", Base: "--orphan"}, CodeInvalidInput},
		{"unknown project", CreateOptions{ProjectPath: realDir(t), Name: "x"}, CodeProjectNotFound},
		{"relative project", CreateOptions{ProjectPath: "project", Name: "x"}, CodeInvalidInput},
	}
	for _, tt := range tests {
		_, err := m.Create(context.Background(), tt.o)
		if CodeOf(err) != tt.code {
			t.Errorf("%s: got %v (%s), want %s", tt.name, err, CodeOf(err), tt.code)
		}
	}
	if got := testenv.Git(t, p.Path, "branch", "--list", "x"); got != "" {
		t.Fatalf("branch x created: %q", got)
	}
	if len(m.AllWorkspaces()) != 0 {
		t.Fatal("a workspace was created")
	}
}

// failCheckout makes every `git worktree add` of m fail after git has
// done its work (CodeHydra's git runs no hooks, so a failing hook cannot
// do this).
func failCheckout(m *Manager) {
	m.git.command = func(ctx context.Context, name string, arg ...string) *exec.Cmd {
		if len(arg) >= 2 && arg[0] == "worktree" && arg[1] == "add" {
			return exec.CommandContext(ctx, "sh", append([]string{"-c", `"$0" "$@"; echo refusing checkout >&2; exit 1`, name}, arg...)...)
		}
		return exec.CommandContext(ctx, name, arg...)
	}
}

func TestCreateUndoesOnlyWhatItMade(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		existingBranch bool
		existingFolder bool
	}{
		{"new branch, new folder", false, false},
		{"existing branch", true, false},
		{"existing empty folder", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, p := setup(t)
			ev := record(t, m)
			var tip string
			if tt.existingBranch {
				testenv.Git(t, p.Path, "checkout", "-q", "-b", "undo")
				tip = testenv.CommitFile(t, p.Path, "b.txt", "b", "branch commit")
				testenv.Git(t, p.Path, "checkout", "-q", "main")
			}
			root, _ := m.worktreeRoot()
			dir := worktreePath(root, p.Path, "undo")
			if tt.existingFolder {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			failCheckout(m)

			_, err := m.Create(context.Background(), CreateOptions{ProjectPath: p.Path, Name: "undo"})
			if err == nil || !strings.Contains(err.Error(), "refusing checkout") {
				t.Fatalf("err = %v, want git's hook failure", err)
			}
			branch, _ := testenv.GitErr(p.Path, "rev-parse", "--verify", "-q", "refs/heads/undo")
			if tt.existingBranch && branch != tip {
				t.Errorf("existing branch now at %q, want %s", branch, tip)
			}
			if !tt.existingBranch && branch != "" {
				t.Errorf("branch made by the failed create is left at %s", branch)
			}
			if tt.existingFolder {
				entries, err := os.ReadDir(dir)
				if err != nil || len(entries) != 0 {
					t.Errorf("existing folder: %v entries, err %v; want it kept and empty", len(entries), err)
				}
			} else if exists(dir) {
				t.Errorf("folder %s left behind", dir)
			}
			if list := testenv.Git(t, p.Path, "worktree", "list", "--porcelain"); strings.Contains(list, "undo") {
				t.Errorf("worktree still registered:\n%s", list)
			}
			if len(m.AllWorkspaces()) != 0 {
				t.Errorf("workspaces = %+v", m.AllWorkspaces())
			}
			ev.sync(t, m)
			for _, e := range ev.all() {
				if e.Kind == EventWorkspaceAdded {
					t.Errorf("workspace-added published for a failed create")
				}
			}
		})
	}
}

func TestCreateUndoesTheWorktreeWhenTheMetadataCannotBeWritten(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	lock := filepath.Join(p.Path, ".git", "config.lock")
	testenv.WriteFile(t, lock, "")
	_, err := m.Create(context.Background(), CreateOptions{ProjectPath: p.Path, Name: "locked"})
	wantCode(t, err, CodeConflict)
	if !strings.Contains(err.Error(), "another git process holds "+lock+"; try again when it finishes") {
		t.Fatalf("error %q does not name the lock", err)
	}
	os.Remove(lock)
	if out, _ := testenv.GitErr(p.Path, "branch", "--list", "locked"); out != "" {
		t.Errorf("branch left: %q", out)
	}
	root, _ := m.worktreeRoot()
	if dir := worktreePath(root, p.Path, "locked"); exists(dir) {
		t.Errorf("folder %s left", dir)
	}
	// Nothing is in the way of a second try.
	create(t, m, p, "locked")
}

func TestCreateFailsCleanlyWhenTheFolderCannotBeMade(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	root, _ := m.worktreeRoot()
	// A file where the project's folder under the root belongs.
	blocker := filepath.Dir(filepath.Dir(worktreePath(root, p.Path, "x")))
	testenv.WriteFile(t, blocker, "in the way")
	_, err := m.Create(context.Background(), CreateOptions{ProjectPath: p.Path, Name: "x"})
	if err == nil {
		t.Fatal("create succeeded")
	}
	if out, _ := testenv.GitErr(p.Path, "branch", "--list", "x"); out != "" {
		t.Errorf("branch left: %q", out)
	}
	if b, _ := os.ReadFile(blocker); string(b) != "in the way" {
		t.Error("the file in the way was touched")
	}
}

func TestConcurrentCreatesOfOneNameLeaveOneWorkspace(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	const n = 4
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = m.Create(context.Background(), CreateOptions{ProjectPath: p.Path, Name: "race"})
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		} else if CodeOf(err) != CodeConflict {
			t.Errorf("got %v, want success or conflict", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d creates succeeded, want 1: %v", ok, errs)
	}
	if got := m.AllWorkspaces(); len(got) != 1 || !exists(got[0].Path) {
		t.Fatalf("workspaces = %+v", got)
	}
}

func TestCreateDefaultsTheRootToTheProjectsDir(t *testing.T) {
	// Not parallel: it changes the environment that paths reads.
	data := realDir(t)
	t.Cleanup(paths.Reload)
	t.Setenv("XDG_DATA_HOME", data)
	paths.Reload()
	m := NewManager(Options{})
	p, err := m.AddProject(context.Background(), testenv.GitRepo(t, "project"))
	if err != nil {
		t.Fatal(err)
	}
	ws := create(t, m, p, "dflt")
	if want := filepath.Join(data, "codehydra", "projects"); !strings.HasPrefix(ws.Path, want+string(filepath.Separator)) {
		t.Fatalf("path %s is not under %s", ws.Path, want)
	}
}

func TestReusableBranchesAreTheLocalBranchesCheckedOutNowhere(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	create(t, m, p, "busy")
	testenv.Git(t, p.Path, "branch", "free")
	testenv.Git(t, p.Path, "branch", "feature/free")
	got, err := m.ReusableBranches(context.Background(), p.Path)
	if err != nil {
		t.Fatal(err)
	}
	// main is the main checkout's, busy a workspace's.
	if want := []string{"feature/free", "free"}; !slices.Equal(got, want) {
		t.Fatalf("reusable branches = %q, want %q", got, want)
	}
}
