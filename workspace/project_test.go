package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"codehydra/internal/testenv"
)

func TestAddProjectRefusesWhatIsNotARepositoryWithCommits(t *testing.T) {
	t.Parallel()
	base := realDir(t)
	plain := filepath.Join(base, "plain")
	os.Mkdir(plain, 0o755)
	empty := filepath.Join(base, "empty")
	testenv.Git(t, "", "init", "-q", "-b", "main", empty)
	bare := filepath.Join(base, "bare.git")
	testenv.Git(t, "", "init", "-q", "--bare", bare)
	file := filepath.Join(base, "file")
	testenv.WriteFile(t, file, "x")
	repo := testenv.GitRepo(t, "project")
	sub := filepath.Join(repo, "sub")
	os.Mkdir(sub, 0o755)
	linked := filepath.Join(base, "linked")
	testenv.Git(t, repo, "worktree", "add", "-q", "-b", "linked", linked)

	tests := []struct {
		name, path, wantMsg string
	}{
		{"empty path", "", "empty"},
		{"relative path", "project", "not absolute"},
		{"missing folder", filepath.Join(base, "nope"), "does not exist"},
		{"a file", file, "not a folder"},
		{"not a repository", plain, "not a git repository"},
		{"no commits", empty, "no commits yet"},
		{"bare repository", bare, "bare"},
		{"inside the .git folder", filepath.Join(repo, ".git"), ".git folder"},
		{"subfolder of a repository", sub, "add " + repo + " instead"},
		{"linked worktree", linked, "linked worktree"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := newManager(t, Options{})
			_, err := m.AddProject(context.Background(), tt.path)
			wantCode(t, err, CodeInvalidInput)
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not say %q", err, tt.wantMsg)
			}
			if len(m.Projects()) != 0 {
				t.Errorf("project added despite the error")
			}
		})
	}
}

func TestAddProjectResolvesSymlinksAndIsIdempotent(t *testing.T) {
	t.Parallel()
	repo := testenv.GitRepo(t, "project")
	link := filepath.Join(realDir(t), "link")
	if err := os.Symlink(repo, link); err != nil {
		t.Fatal(err)
	}
	store := &fakeStore{}
	m, _ := newManager(t, Options{Store: store})
	ev := record(t, m)
	ctx := context.Background()

	p, err := m.AddProject(ctx, link+"/.")
	if err != nil {
		t.Fatal(err)
	}
	if p.Path != repo || p.Name != "project" {
		t.Fatalf("got %+v, want path %s name project", p, repo)
	}
	again, err := m.AddProject(ctx, repo)
	if err != nil || again != p {
		t.Fatalf("second add = %+v, %v; want %+v", again, err, p)
	}
	if got := m.Projects(); len(got) != 1 {
		t.Fatalf("projects = %+v, want one", got)
	}
	if store.count() != 1 || !slices.Equal(store.last(), []string{repo}) {
		t.Fatalf("saves = %v, want one save of [%s]", store.saves, repo)
	}
	ev.waitFor(t, soon, "project-added", func(e Event) bool { return e.Kind == EventProjectAdded && e.ProjectPath == repo })
	ev.sync(t, m)
	n := 0
	for _, e := range ev.all() {
		if e.Kind == EventProjectAdded {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d project-added events, want 1", n)
	}
}

func TestAddProjectPublishesItsExistingWorktrees(t *testing.T) {
	t.Parallel()
	repo := testenv.GitRepo(t, "project")
	wt := filepath.Join(realDir(t), "outside")
	testenv.Git(t, repo, "worktree", "add", "-q", "-b", "outside", wt)
	m, _ := newManager(t, Options{})
	ev := record(t, m)
	if _, err := m.AddProject(context.Background(), repo); err != nil {
		t.Fatal(err)
	}
	ev.waitFor(t, soon, "workspace-added", func(e Event) bool { return e.Kind == EventWorkspaceAdded && e.Workspace.Path == wt })
}

func TestAddProjectFailsWhenTheListCannotBeSaved(t *testing.T) {
	t.Parallel()
	store := &fakeStore{err: errors.New("disk full")}
	m, _ := newManager(t, Options{Store: store})
	_, err := m.AddProject(context.Background(), testenv.GitRepo(t, "project"))
	wantCode(t, err, CodeInternal)
	if len(m.Projects()) != 0 {
		t.Fatal("project kept although it was not saved")
	}
}

func TestRemoveProjectKeepsFilesAndForgetsIt(t *testing.T) {
	t.Parallel()
	store := &fakeStore{}
	m, _ := newManager(t, Options{Store: store})
	ctx := context.Background()
	p, err := m.AddProject(ctx, testenv.GitRepo(t, "project"))
	if err != nil {
		t.Fatal(err)
	}
	ws := create(t, m, p, "keep-me")
	ev := record(t, m)

	if err := m.RemoveProject(ctx, p.Path); err != nil {
		t.Fatal(err)
	}
	if len(m.Projects()) != 0 || len(m.AllWorkspaces()) != 0 {
		t.Fatalf("still listed: %+v %+v", m.Projects(), m.AllWorkspaces())
	}
	for _, f := range []string{filepath.Join(p.Path, "README.md"), filepath.Join(ws.Path, "README.md")} {
		if !exists(f) {
			t.Errorf("%s was deleted", f)
		}
	}
	if got := testenv.Git(t, p.Path, "branch", "--list", "keep-me"); got == "" {
		t.Error("branch deleted")
	}
	if len(store.last()) != 0 {
		t.Errorf("stored list = %v, want empty", store.last())
	}
	ev.waitFor(t, soon, "workspace-removed", func(e Event) bool { return e.Kind == EventWorkspaceRemoved && e.Workspace.Path == ws.Path })
	ev.waitFor(t, soon, "project-removed", func(e Event) bool { return e.Kind == EventProjectRemoved && e.ProjectPath == p.Path })

	wantCode(t, m.RemoveProject(ctx, p.Path), CodeProjectNotFound)
	wantCode(t, m.RemoveProject(ctx, "relative"), CodeInvalidInput)
}

func TestLoadSkipsProjectsThatAreGoneButKeepsThemStored(t *testing.T) {
	t.Parallel()
	repo := testenv.GitRepo(t, "project")
	wt := filepath.Join(realDir(t), "wt")
	testenv.Git(t, repo, "worktree", "add", "-q", "-b", "wt", wt)
	gone := filepath.Join(realDir(t), "unmounted")
	notRepo := realDir(t)
	store := &fakeStore{}
	m, logs := newManager(t, Options{Store: store, Projects: []string{gone, repo, notRepo, repo}})
	if err := m.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := m.Projects(); len(got) != 1 || got[0].Path != repo {
		t.Fatalf("projects = %+v, want only %s", got, repo)
	}
	if got := m.AllWorkspaces(); len(got) != 1 || got[0].Path != wt {
		t.Fatalf("workspaces = %+v, want %s", got, wt)
	}
	for _, p := range []string{gone, notRepo} {
		if !strings.Contains(logs.String(), p) {
			t.Errorf("skipping %s not logged:\n%s", p, logs)
		}
	}
	// A later save keeps the skipped projects.
	other := testenv.GitRepo(t, "project")
	if _, err := m.AddProject(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	if want := []string{gone, repo, notRepo, other}; !slices.Equal(store.last(), want) {
		t.Fatalf("stored = %v, want %v", store.last(), want)
	}
	// Removing a project that did not load drops it from the list.
	if err := m.RemoveProject(context.Background(), gone); err != nil {
		t.Fatal(err)
	}
	if want := []string{repo, notRepo, other}; !slices.Equal(store.last(), want) {
		t.Fatalf("stored = %v, want %v", store.last(), want)
	}
}

func TestProjectsAreSortedByNameCaseFoldedThenPath(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, Options{})
	ctx := context.Background()
	paths := map[string][]string{}
	for _, name := range []string{"zeta", "mid", "Alpha", "mid"} {
		dir := testenv.GitRepo(t, name)
		paths[name] = append(paths[name], dir)
		if _, err := m.AddProject(ctx, dir); err != nil {
			t.Fatal(err)
		}
	}
	// Two projects named mid: their paths decide.
	slices.Sort(paths["mid"])
	want := []string{paths["Alpha"][0], paths["mid"][0], paths["mid"][1], paths["zeta"][0]}
	var got []string
	for _, p := range m.Projects() {
		got = append(got, p.Path)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestWorkspacesAreSortedByNameCaseFoldedThenPath(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	for _, name := range []string{"Zed", "mid", "alpha", "Mid", "Beta"} {
		create(t, m, p, name)
	}
	ws, err := m.Workspaces(p.Path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range ws {
		got = append(got, w.Name)
	}
	// "Mid" and "mid" fold alike; their paths (.../Mid, .../mid) decide.
	if want := []string{"alpha", "Beta", "Mid", "mid", "Zed"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	var all []string
	for _, w := range m.AllWorkspaces() {
		all = append(all, w.Name)
	}
	if !slices.Equal(all, got) {
		t.Fatalf("AllWorkspaces = %v, want the order of Workspaces %v", all, got)
	}
}

func TestWorkspacesOfUnknownProjectIsProjectNotFound(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, Options{})
	_, err := m.Workspaces(realDir(t))
	wantCode(t, err, CodeProjectNotFound)
	_, err = m.Workspaces("")
	wantCode(t, err, CodeInvalidInput)
}

func TestBranchesListsLocalThenRemoteWithoutSymrefs(t *testing.T) {
	t.Parallel()
	upstream := testenv.GitRepo(t, "project")
	testenv.Git(t, upstream, "branch", "up-only")
	clone := filepath.Join(realDir(t), "clone")
	testenv.Git(t, "", "clone", "-q", upstream, clone)
	testenv.Git(t, clone, "branch", "local-only")
	m, _ := newManager(t, Options{})
	if _, err := m.AddProject(context.Background(), clone); err != nil {
		t.Fatal(err)
	}
	got, err := m.Branches(context.Background(), clone)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"local-only", "main", "origin/main", "origin/up-only"}
	if !slices.Equal(got, want) {
		t.Fatalf("branches = %v, want %v", got, want)
	}
}

func TestDefaultBase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("remote HEAD branch of a clone", func(t *testing.T) {
		upstream := testenv.GitRepo(t, "project")
		clone := filepath.Join(realDir(t), "clone")
		testenv.Git(t, "", "clone", "-q", upstream, clone)
		testenv.Git(t, clone, "checkout", "-q", "-b", "elsewhere")
		m, _ := newManager(t, Options{})
		if _, err := m.AddProject(ctx, clone); err != nil {
			t.Fatal(err)
		}
		if got, err := m.DefaultBase(ctx, clone); err != nil || got != "origin/main" {
			t.Fatalf("DefaultBase = %q, %v; want origin/main", got, err)
		}
	})
	t.Run("current branch of the main checkout without origin", func(t *testing.T) {
		repo := testenv.GitRepo(t, "project")
		testenv.Git(t, repo, "checkout", "-q", "-b", "develop")
		m, _ := newManager(t, Options{})
		if _, err := m.AddProject(ctx, repo); err != nil {
			t.Fatal(err)
		}
		if got, err := m.DefaultBase(ctx, repo); err != nil || got != "develop" {
			t.Fatalf("DefaultBase = %q, %v; want develop", got, err)
		}
	})
	t.Run("dangling origin HEAD falls back", func(t *testing.T) {
		upstream := testenv.GitRepo(t, "project")
		clone := filepath.Join(realDir(t), "clone")
		testenv.Git(t, "", "clone", "-q", upstream, clone)
		testenv.Git(t, clone, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/gone")
		m, _ := newManager(t, Options{})
		if _, err := m.AddProject(ctx, clone); err != nil {
			t.Fatal(err)
		}
		if got, err := m.DefaultBase(ctx, clone); err != nil || got != "main" {
			t.Fatalf("DefaultBase = %q, %v; want main", got, err)
		}
	})
	t.Run("detached main checkout without origin", func(t *testing.T) {
		repo := testenv.GitRepo(t, "project")
		testenv.Git(t, repo, "checkout", "-q", "--detach")
		m, _ := newManager(t, Options{})
		if _, err := m.AddProject(ctx, repo); err != nil {
			t.Fatal(err)
		}
		_, err := m.DefaultBase(ctx, repo)
		wantCode(t, err, CodeInvalidInput)
	})
	t.Run("unknown project", func(t *testing.T) {
		m, _ := newManager(t, Options{})
		_, err := m.DefaultBase(ctx, realDir(t))
		wantCode(t, err, CodeProjectNotFound)
	})
}
