package workspace

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"codehydra/internal/testenv"
)

func TestDiscoverFindsWorktreesMadeOutsideTheApp(t *testing.T) {
	t.Parallel()
	repo := testenv.GitRepo(t, "project")
	root := realDir(t)
	onBranch := filepath.Join(root, "on-branch")
	testenv.Git(t, repo, "worktree", "add", "-q", "-b", "feature/x", onBranch)
	detached := filepath.Join(root, "detached")
	testenv.Git(t, repo, "worktree", "add", "-q", "--detach", detached)
	missing := filepath.Join(root, "missing")
	testenv.Git(t, repo, "worktree", "add", "-q", "-b", "missing", missing)
	if err := os.RemoveAll(missing); err != nil {
		t.Fatal(err)
	}
	head := testenv.Git(t, repo, "rev-parse", "HEAD")

	m, _ := newManager(t, Options{Projects: []string{repo}})
	if err := m.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, err := m.Workspaces(repo)
	if err != nil {
		t.Fatal(err)
	}
	want := []Workspace{
		{Name: "detached", Path: detached, ProjectPath: repo, Head: head, Detached: true},
		{Name: "feature/x", Branch: "feature/x", Path: onBranch, ProjectPath: repo, Head: head},
	}
	if len(got) != len(want) {
		t.Fatalf("workspaces = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("workspace %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestParseWorktreeList(t *testing.T) {
	t.Parallel()
	out := "worktree /r\x00HEAD aaa\x00branch refs/heads/main\x00\x00" +
		"worktree /w1\x00HEAD bbb\x00detached\x00\x00" +
		"worktree /w2\x00HEAD ccc\x00branch refs/heads/a/b\x00locked on usb\x00\x00" +
		"worktree /w3\x00HEAD ddd\x00branch refs/heads/c\x00prunable gitdir file points to non-existent location\x00\x00"
	got := parseWorktreeList(out)
	want := []worktreeEntry{
		{Path: "/r", Head: "aaa", Branch: "main"},
		{Path: "/w1", Head: "bbb", Detached: true},
		{Path: "/w2", Head: "ccc", Branch: "a/b", Locked: true, LockReason: "on usb"},
		{Path: "/w3", Head: "ddd", Branch: "c", Prunable: true},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// runManager runs m.Run until the test ends.
func runManager(t *testing.T, m *Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// noticeWithin is how soon Run must notice an outside change with the
// default poll interval (2 s), plus slack for a loaded machine.
const noticeWithin = 2*time.Second + 2*time.Second

func TestRunNoticesWorktreesAddedAndRemovedOutsideTheApp(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ev := record(t, m)
	runManager(t, m)

	wt := filepath.Join(realDir(t), "outside")
	testenv.Git(t, p.Path, "worktree", "add", "-q", "-b", "outside", wt)
	ev.waitFor(t, noticeWithin, "workspace-added", func(e Event) bool {
		return e.Kind == EventWorkspaceAdded && e.Workspace.Path == wt && e.Workspace.Branch == "outside"
	})
	if _, err := m.Resolve(wt); err != nil {
		t.Fatalf("resolve after discovery: %v", err)
	}

	testenv.Git(t, p.Path, "worktree", "remove", wt)
	ev.waitFor(t, noticeWithin, "workspace-removed", func(e Event) bool {
		return e.Kind == EventWorkspaceRemoved && e.Workspace.Path == wt
	})
	if _, err := m.Resolve(wt); CodeOf(err) != CodeWorkspaceNotFound {
		t.Fatalf("resolve after removal: %v", err)
	}
}

func TestRunNoticesAWorktreeFolderDeletedByHand(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	m.opts.PollInterval = 20 * time.Millisecond
	ws := create(t, m, p, "by-hand")
	ev := record(t, m)
	runManager(t, m)
	if err := os.RemoveAll(ws.Path); err != nil {
		t.Fatal(err)
	}
	ev.waitFor(t, noticeWithin, "workspace-removed", func(e Event) bool {
		return e.Kind == EventWorkspaceRemoved && e.Workspace.Path == ws.Path
	})
}

func TestRunPublishesNothingForTheAppsOwnChanges(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	m.opts.PollInterval = 5 * time.Millisecond
	ev := record(t, m)
	runManager(t, m)
	for _, name := range []string{"a", "b", "c"} {
		ws := create(t, m, p, name)
		if err := m.Delete(context.Background(), ws.Path, DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Let the watcher look at the final state at least once.
	m.refresh(context.Background(), projectOf(t, m, p.Path), true)
	ev.sync(t, m)
	added, removed := 0, 0
	var kinds []EventKind
	for _, e := range ev.all() {
		kinds = append(kinds, e.Kind)
		switch e.Kind {
		case EventWorkspaceAdded:
			added++
		case EventWorkspaceRemoved:
			removed++
		}
	}
	if added != 3 || removed != 3 {
		t.Fatalf("added %d, removed %d events; want 3 each: %v", added, removed, kinds)
	}
}

func TestRunReturnsWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	m, _ := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(soon):
		t.Fatal("Run did not return after its context ended")
	}
}

func TestWorktreesSignatureChangesOnlyWithWorktrees(t *testing.T) {
	t.Parallel()
	repo := testenv.GitRepo(t, "project")
	common := filepath.Join(repo, ".git")
	s0 := worktreesSignature(common)
	testenv.CommitFile(t, repo, "other", "x", "unrelated commit")
	if s := worktreesSignature(common); s != s0 {
		t.Fatal("a commit in the main checkout changed the signature")
	}
	wt := filepath.Join(realDir(t), "wt")
	testenv.Git(t, repo, "worktree", "add", "-q", "-b", "wt", wt)
	s1 := worktreesSignature(common)
	if s1 == s0 {
		t.Fatal("adding a worktree did not change the signature")
	}
	testenv.Git(t, wt, "checkout", "-q", "-b", "switched")
	s2 := worktreesSignature(common)
	if s2 == s1 {
		t.Fatal("switching the branch of a worktree did not change the signature")
	}
	os.RemoveAll(wt)
	if s := worktreesSignature(common); s == s2 {
		t.Fatal("deleting a worktree folder did not change the signature")
	}
}

// projectOf returns the manager's record of the project at path.
func projectOf(t *testing.T, m *Manager, path string) *project {
	t.Helper()
	p, err := m.lookupProject(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDiscoverListsAPathWithANewlineAsOneWorkspace(t *testing.T) {
	t.Parallel()
	repo := testenv.GitRepo(t, "project")
	// The injected path exists, so a parser fooled by the newline would
	// list it as a workspace.
	other := filepath.Join(realDir(t), "other")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	odd := filepath.Join(realDir(t), "a\nworktree "+other)
	testenv.Git(t, repo, "worktree", "add", "-q", "-b", "odd", odd)
	m, _ := newManager(t, Options{Projects: []string{repo}})
	if err := m.Load(context.Background()); err != nil {
		t.Fatal(err)
	}

	got, err := m.Workspaces(repo)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Path != odd || got[0].Branch != "odd" {
		t.Fatalf("workspaces = %+v, want one at %q on branch odd", got, odd)
	}
	if _, err := m.Resolve(other); CodeOf(err) != CodeWorkspaceNotFound {
		t.Errorf("Resolve(%s) = %v, want workspace-not-found", other, err)
	}
	pr := projectOf(t, m, repo)
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(pr.missing) != 0 {
		t.Errorf("missing worktrees = %+v, want none", pr.missing)
	}
}

// A worktree made outside the app at the path of a workspace the app is
// deleting is left alone while the delete runs, and noticed once it has
// ended, though nothing about the worktrees changes after that.
func TestRunNoticesAWorktreeMadeAtABusyPathOnceTheWorkEnds(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	m.opts.PollInterval = 10 * time.Millisecond
	ws := create(t, m, p, "busy")
	release, err := m.reserve("delete", pathKey(ws.Path))
	if err != nil {
		t.Fatal(err)
	}
	ev := record(t, m)
	testenv.Git(t, p.Path, "worktree", "remove", "--force", ws.Path)
	testenv.Git(t, p.Path, "worktree", "add", "-q", "-b", "again", ws.Path)
	// A poll that sees the change while the path is busy leaves it alone.
	m.poll(context.Background())
	ev.sync(t, m)
	for _, e := range ev.all() {
		if e.Workspace.Path == ws.Path {
			t.Fatalf("a poll while the delete runs published %+v", e)
		}
	}
	release()
	runManager(t, m)
	ev.waitFor(t, noticeWithin, "the worktree at the released path", func(e Event) bool {
		return e.Kind == EventStatusChanged && e.Workspace.Path == ws.Path && e.Workspace.Branch == "again"
	})
}
