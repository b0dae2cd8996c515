package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"codehydra/internal/testenv"
)

func branchExists(t *testing.T, repo, branch string) bool {
	t.Helper()
	_, err := testenv.GitErr(repo, "rev-parse", "--verify", "-q", "refs/heads/"+branch)
	return err == nil
}

func registered(t *testing.T, repo, path string) bool {
	t.Helper()
	return strings.Contains(testenv.Git(t, repo, "worktree", "list", "--porcelain"), "worktree "+path+"\n")
}

func TestDeleteRunsTheStepsInOrder(t *testing.T) {
	t.Parallel()
	agents := &fakeAgents{}
	m, p := setupWith(t, agents)
	ws := create(t, m, p, "doomed")
	testenv.Git(t, p.Path, "config", "branch.doomed.codehydra.note", "hi")
	ev := record(t, m)

	if err := m.Delete(context.Background(), ws.Path, DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if exists(ws.Path) || registered(t, p.Path, ws.Path) || branchExists(t, p.Path, "doomed") {
		t.Fatal("folder, worktree or branch left")
	}
	if out, _ := testenv.GitErr(p.Path, "config", "--get-regexp", `^branch\.doomed\.`); out != "" {
		t.Fatalf("metadata left: %q", out)
	}
	if !slices.Equal(agents.stopped, []string{ws.Path}) {
		t.Fatalf("stopped agents = %v", agents.stopped)
	}
	ev.waitFor(t, soon, "done", func(e Event) bool { return e.Step == StepDone })
	want := []string{
		"delete-progress:stop-agent", "delete-progress:teardown", "delete-progress:remove-worktree", "delete-progress:delete-branch",
		"delete-progress:remove-metadata", "workspace-removed", "delete-progress:done",
	}
	if got := ev.kinds(ws.Path); !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	if _, err := m.Resolve(ws.Path); CodeOf(err) != CodeWorkspaceNotFound {
		t.Fatalf("resolve after delete: %v", err)
	}
	if !exists(filepath.Join(p.Path, "README.md")) || !branchExists(t, p.Path, "main") {
		t.Fatal("main checkout touched")
	}
}

func TestDeleteKeepBranch(t *testing.T) {
	t.Parallel()
	for _, keep := range []bool{true, false} {
		t.Run(map[bool]string{true: "kept", false: "deleted"}[keep], func(t *testing.T) {
			m, p := setup(t)
			ws := create(t, m, p, "topic")
			tip := testenv.CommitFile(t, ws.Path, "work.txt", "w", "work")
			if err := m.Delete(context.Background(), ws.Path, DeleteOptions{KeepBranch: keep}); err != nil {
				t.Fatal(err)
			}
			if got := branchExists(t, p.Path, "topic"); got != keep {
				t.Fatalf("branch exists = %v, want %v", got, keep)
			}
			if keep && testenv.Git(t, p.Path, "rev-parse", "topic") != tip {
				t.Fatal("kept branch moved")
			}
			if exists(ws.Path) {
				t.Fatal("folder left")
			}
		})
	}
}

func TestDeleteDetachedHeadWorktreeDeletesNoBranch(t *testing.T) {
	t.Parallel()
	repo := testenv.GitRepo(t, "project")
	testenv.Git(t, repo, "branch", "other")
	wt := filepath.Join(realDir(t), "detached")
	testenv.Git(t, repo, "worktree", "add", "-q", "--detach", wt)
	m, _ := newManager(t, Options{})
	if _, err := m.AddProject(context.Background(), repo); err != nil {
		t.Fatal(err)
	}
	branches := testenv.Git(t, repo, "branch", "--format=%(refname)")
	ev := record(t, m)
	if err := m.Delete(context.Background(), wt, DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if exists(wt) || registered(t, repo, wt) {
		t.Fatal("worktree left")
	}
	if got := testenv.Git(t, repo, "branch", "--format=%(refname)"); got != branches {
		t.Fatalf("branches changed from %q to %q", branches, got)
	}
	ev.waitFor(t, soon, "done", func(e Event) bool { return e.Step == StepDone && e.Workspace.Path == wt })
}

func TestDeleteTouchesNothingOutsideTheWorktree(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "ws")

	outside := realDir(t)
	precious := filepath.Join(outside, "precious.txt")
	testenv.WriteFile(t, precious, "keep me")
	sibling := ws.Path + "2" // shares the prefix "…/ws"
	testenv.WriteFile(t, filepath.Join(sibling, "sibling.txt"), "keep me too")
	if err := os.Symlink(outside, filepath.Join(ws.Path, "link-to-dir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(precious, filepath.Join(ws.Path, "link-to-file")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(p.Path, filepath.Join(ws.Path, "link-to-project")); err != nil {
		t.Fatal(err)
	}
	testenv.WriteFile(t, filepath.Join(ws.Path, "untracked", "deep.txt"), "untracked")
	testenv.WriteFile(t, filepath.Join(ws.Path, "README.md"), "modified")

	if err := m.Delete(context.Background(), ws.Path, DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if exists(ws.Path) || registered(t, p.Path, ws.Path) {
		t.Fatal("worktree left")
	}
	for path, want := range map[string]string{
		precious:                              "keep me",
		filepath.Join(sibling, "sibling.txt"): "keep me too",
		filepath.Join(p.Path, "README.md"):    "hello\n",
	} {
		if b, err := os.ReadFile(path); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", path, b, err, want)
		}
	}
	if got := testenv.Git(t, p.Path, "status", "--porcelain"); got != "" {
		t.Errorf("main checkout changed: %q", got)
	}
}

func TestDeleteFinishesAWorktreeWhoseFolderWasRemovedByHand(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "gone")
	if err := os.RemoveAll(ws.Path); err != nil {
		t.Fatal(err)
	}
	ev := record(t, m)
	if err := m.Delete(context.Background(), ws.Path, DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if registered(t, p.Path, ws.Path) || branchExists(t, p.Path, "gone") {
		t.Fatal("worktree registration or branch left")
	}
	ev.waitFor(t, soon, "done", func(e Event) bool { return e.Step == StepDone })
}

func TestDeleteFinishesAWorktreeNoticedAsMissingByDiscovery(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "gone")
	if err := os.RemoveAll(ws.Path); err != nil {
		t.Fatal(err)
	}
	// Discovery moves it out of the workspaces; git still lists it.
	m.refresh(context.Background(), projectOf(t, m, p.Path), true)
	if len(m.AllWorkspaces()) != 0 {
		t.Fatalf("workspaces = %+v", m.AllWorkspaces())
	}
	if err := m.Delete(context.Background(), ws.Path, DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if registered(t, p.Path, ws.Path) || branchExists(t, p.Path, "gone") {
		t.Fatal("worktree registration or branch left")
	}
}

func TestASecondDeleteFinishesAfterTheBranchCouldNotBeDeleted(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "stuck")
	ev := record(t, m)
	lock := filepath.Join(p.Path, ".git", "refs", "heads", "stuck.lock")
	testenv.WriteFile(t, lock, "")

	err := m.Delete(context.Background(), ws.Path, DeleteOptions{})
	wantCode(t, err, CodeConflict)
	if !strings.Contains(err.Error(), "another git process holds "+lock) {
		t.Fatalf("error %q does not name the lock", err)
	}
	failed := ev.waitFor(t, soon, "delete-failed", func(e Event) bool { return e.Kind == EventDeleteFailed })
	if failed.Step != StepDeleteBranch || failed.Err == "" || failed.Workspace.Path != ws.Path {
		t.Fatalf("delete-failed = %+v", failed)
	}
	if exists(ws.Path) || !branchExists(t, p.Path, "stuck") {
		t.Fatal("want the worktree gone and the branch left")
	}

	os.Remove(lock)
	if err := m.Delete(context.Background(), ws.Path, DeleteOptions{}); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	if branchExists(t, p.Path, "stuck") {
		t.Fatal("second delete left the branch")
	}
	ev.waitFor(t, soon, "done", func(e Event) bool { return e.Step == StepDone })
	wantCode(t, m.Delete(context.Background(), ws.Path, DeleteOptions{}), CodeWorkspaceNotFound)
}

func TestASecondDeleteFinishesAfterTheMetadataCouldNotBeRemoved(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "cfg")
	ev := record(t, m)
	lock := filepath.Join(p.Path, ".git", "config.lock")
	testenv.WriteFile(t, lock, "")
	err := m.Delete(context.Background(), ws.Path, DeleteOptions{})
	wantCode(t, err, CodeConflict)
	failed := ev.waitFor(t, soon, "delete-failed", func(e Event) bool { return e.Kind == EventDeleteFailed })
	if failed.Step != StepRemoveMetadata {
		t.Fatalf("failed step = %s", failed.Step)
	}
	// The metadata goes last: what the failure left is a branchless
	// record of metadata, never a workspace without it.
	if exists(ws.Path) || branchExists(t, p.Path, "cfg") {
		t.Fatal("the worktree or the branch is left although only the metadata step failed")
	}
	if got := testenv.Git(t, p.Path, "config", "--get", "branch.cfg.codehydra.base"); got != "main" {
		t.Fatalf("base = %q after the failed metadata step, want it still there", got)
	}
	os.Remove(lock)
	if err := m.Delete(context.Background(), ws.Path, DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if out, _ := testenv.GitErr(p.Path, "config", "--get-regexp", `^branch\.cfg\.`); out != "" {
		t.Fatalf("left overs after the second delete: %q", out)
	}
}

func TestDeleteStopsWhenTheAgentCannotBeStopped(t *testing.T) {
	t.Parallel()
	agents := &fakeAgents{stopErr: errors.New("still running")}
	m, p := setupWith(t, agents)
	ws := create(t, m, p, "agent")
	ev := record(t, m)
	if err := m.Delete(context.Background(), ws.Path, DeleteOptions{}); err == nil {
		t.Fatal("delete succeeded")
	}
	failed := ev.waitFor(t, soon, "delete-failed", func(e Event) bool { return e.Kind == EventDeleteFailed })
	if failed.Step != StepStopAgent || !strings.Contains(failed.Err, "still running") {
		t.Fatalf("delete-failed = %+v", failed)
	}
	if !exists(ws.Path) || !branchExists(t, p.Path, "agent") {
		t.Fatal("workspace touched although its agent still runs")
	}
	agents.mu.Lock()
	agents.stopErr = nil
	agents.mu.Unlock()
	if err := m.Delete(context.Background(), ws.Path, DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestASecondConcurrentDeleteIsAConflict(t *testing.T) {
	t.Parallel()
	agents := &fakeAgents{entered: make(chan string, 1), gate: make(chan struct{})}
	m, p := setupWith(t, agents)
	ws := create(t, m, p, "twice")
	first := make(chan error, 1)
	go func() { first <- m.Delete(context.Background(), ws.Path, DeleteOptions{}) }()
	<-agents.entered // the first delete is inside its first step

	err := m.Delete(context.Background(), ws.Path, DeleteOptions{})
	wantCode(t, err, CodeConflict)
	if !strings.Contains(err.Error(), "already being deleted") {
		t.Fatalf("error %q", err)
	}
	close(agents.gate)
	if err := <-first; err != nil {
		t.Fatalf("first delete: %v", err)
	}
	if exists(ws.Path) {
		t.Fatal("folder left")
	}
}

func TestDeleteRefusesWhatIsNotAWorkspace(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "real")
	sub := filepath.Join(ws.Path, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		code Code
	}{
		{"main checkout", p.Path, CodeInvalidInput},
		{"main checkout with a trailing slash", p.Path + "/", CodeInvalidInput},
		{"unknown folder", realDir(t), CodeWorkspaceNotFound},
		{"missing folder", filepath.Join(realDir(t), "nope"), CodeWorkspaceNotFound},
		{"subfolder of a workspace", sub, CodeWorkspaceNotFound},
		{"sibling with a shared prefix", ws.Path + "2", CodeWorkspaceNotFound},
		{"relative", "real", CodeInvalidInput},
		{"dot-dot", ws.Path + "/../real", CodeInvalidInput},
		{"empty", "", CodeInvalidInput},
	}
	for _, tt := range tests {
		err := m.Delete(context.Background(), tt.path, DeleteOptions{})
		if CodeOf(err) != tt.code {
			t.Errorf("%s: got %v (%s), want %s", tt.name, err, CodeOf(err), tt.code)
		}
	}
	if !exists(filepath.Join(p.Path, "README.md")) || !exists(filepath.Join(ws.Path, "README.md")) {
		t.Fatal("files deleted")
	}
}

func TestDeleteRefusesALockedWorktree(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "locked")
	testenv.Git(t, p.Path, "worktree", "lock", "--reason", "on a usb disk", ws.Path)
	err := m.Delete(context.Background(), ws.Path, DeleteOptions{})
	wantCode(t, err, CodeConflict)
	if !strings.Contains(err.Error(), "git worktree unlock") || !strings.Contains(err.Error(), "on a usb disk") {
		t.Fatalf("error %q", err)
	}
	if !exists(filepath.Join(ws.Path, "README.md")) || !branchExists(t, p.Path, "locked") {
		t.Fatal("locked worktree touched")
	}
	testenv.Git(t, p.Path, "worktree", "unlock", ws.Path)
	if err := m.Delete(context.Background(), ws.Path, DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestDeleteFindsAWorktreeMadeOutsideBeforeTheWatcherDoes(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	wt := filepath.Join(realDir(t), "fresh")
	testenv.Git(t, p.Path, "worktree", "add", "-q", "-b", "fresh", wt)
	// The branch was not made by CodeHydra, so deleting it is asked for.
	if err := m.Delete(context.Background(), wt, DeleteOptions{DeleteBranch: true}); err != nil {
		t.Fatal(err)
	}
	if exists(wt) || branchExists(t, p.Path, "fresh") {
		t.Fatal("left overs")
	}
}

func TestDeleteRefusesAWorkspaceThatHoldsAProject(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "host")
	inner := filepath.Join(ws.Path, "inner")
	testenv.Git(t, "", "init", "-q", "-b", "main", inner)
	testenv.CommitFile(t, inner, "f", "x", "inner")
	if _, err := m.AddProject(context.Background(), inner); err != nil {
		t.Fatal(err)
	}
	wantCode(t, m.Delete(context.Background(), ws.Path, DeleteOptions{}), CodeConflict)
	if !exists(filepath.Join(inner, "f")) {
		t.Fatal("inner project deleted")
	}
}

// TestADeleteDoesNotFollowAFolderSwappedForASymlinkAfterItsChecks: the
// delete checked the worktree folder, then ran `git worktree remove
// --force`, which finds the worktree by its argument's real path. A
// symlink to another workspace swapped in between (as any process of the
// user can) had git remove that other workspace, its changes with it.
// The folder is now renamed aside, checked there, and removed through an
// os.Root: the swapped link is put back, and nothing is removed.
func TestADeleteDoesNotFollowAFolderSwappedForASymlinkAfterItsChecks(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	a, b := create(t, m, p, "a"), create(t, m, p, "b")
	testenv.WriteFile(t, filepath.Join(a.Path, "a-work.txt"), "a's work")
	testenv.WriteFile(t, filepath.Join(b.Path, "b-work.txt"), "b's work")
	moved := realDir(t) + "/a-moved"
	m.deleteStep = func(step, path string) {
		if step != stepBeforeRemoval || path != a.Path {
			return
		}
		if err := os.Rename(a.Path, moved); err != nil {
			t.Error(err)
		}
		if err := os.Symlink(b.Path, a.Path); err != nil {
			t.Error(err)
		}
	}
	wantCode(t, m.Delete(context.Background(), a.Path, DeleteOptions{}), CodeConflict)
	wantFile(t, filepath.Join(b.Path, "b-work.txt"), "b's work")
	if !registered(t, p.Path, b.Path) {
		t.Fatal("b is no longer a worktree")
	}
	wantFile(t, filepath.Join(moved, "a-work.txt"), "a's work")
	if target, err := os.Readlink(a.Path); err != nil || target != b.Path {
		t.Fatalf("the swapped link at %s = %q, %v; want it put back", a.Path, target, err)
	}
	if exists(stagedFolder(a.Path)) {
		t.Fatal("something was left set aside")
	}
}

// TestAWorktreeMadeAgainAtThePathDuringADeleteIsNotTakenForTheDeletedOne:
// a worktree made outside the app at the path of one being deleted, once
// its folder was gone, made the delete fail ("git still lists worktree")
// and left the new worktree without a workspace. The delete is done, and
// the new worktree shows up as a workspace of its own.
func TestAWorktreeMadeAgainAtThePathDuringADeleteIsNotTakenForTheDeletedOne(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "again")
	if _, err := TokenNonce(ws.Path); err != nil {
		t.Fatal(err)
	}
	m.deleteStep = func(step, path string) {
		if step == stepAfterRemoval && path == ws.Path {
			testenv.Git(t, p.Path, "worktree", "add", "-q", "-b", "made-again", ws.Path)
			testenv.WriteFile(t, filepath.Join(ws.Path, "new-work.txt"), "the new worktree's work")
		}
	}
	if err := m.Delete(context.Background(), ws.Path, DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if !registered(t, p.Path, ws.Path) {
		t.Fatal("the worktree made again is no longer registered")
	}
	wantFile(t, filepath.Join(ws.Path, "new-work.txt"), "the new worktree's work")
	m.poll(context.Background())
	got, err := m.Resolve(ws.Path)
	if err != nil || got.Branch != "made-again" {
		t.Fatalf("the worktree made again is %+v, %v; want a workspace on branch made-again", got, err)
	}
}

// TestADeleteFinishesAWorktreeWhoseParentFolderIsGone: the worktrees'
// folder removed by hand (or on a drive no longer there) left a delete
// that failed at every launch.
func TestADeleteFinishesAWorktreeWhoseParentFolderIsGone(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "gone-parent")
	if err := os.RemoveAll(filepath.Dir(ws.Path)); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(context.Background(), ws.Path, DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if registered(t, p.Path, ws.Path) {
		t.Fatal("git still lists the worktree")
	}
}

// TestAFolderSetAsideIsRemovedOnlyIfItIsStillTheWorktree: a delete
// killed after setting the folder aside is finished later; what sits at
// the set-aside name then is removed only if it is still that worktree.
func TestAFolderSetAsideIsRemovedOnlyIfItIsStillTheWorktree(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "aside")
	staged := stagedFolder(ws.Path)
	if err := os.Rename(ws.Path, staged); err != nil {
		t.Fatal(err)
	}
	// Something else now sits there: the user's folder.
	if err := os.Rename(staged, ws.Path+"-kept"); err != nil {
		t.Fatal(err)
	}
	testenv.WriteFile(t, filepath.Join(staged, "mine.txt"), "not a worktree")
	wantCode(t, m.Delete(context.Background(), ws.Path, DeleteOptions{}), CodeConflict)
	wantFile(t, filepath.Join(staged, "mine.txt"), "not a worktree")

	// The worktree itself set aside: the delete finishes and removes it.
	if err := os.RemoveAll(staged); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(ws.Path+"-kept", staged); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(context.Background(), ws.Path, DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if exists(staged) || registered(t, p.Path, ws.Path) {
		t.Fatal("the worktree set aside is left")
	}
}

// TestARemovalCutShortIsFinishedThoughTheFolderCannotBeCheckedAgain: a
// delete killed while removing the folder it set aside leaves a part of
// it, perhaps without its .git, which no check can recognise. The
// delete's record says the removal began (after the check), and the next
// delete finishes it; without that mark, such a folder is left alone.
func TestARemovalCutShortIsFinishedThoughTheFolderCannotBeCheckedAgain(t *testing.T) {
	t.Parallel()
	for _, removing := range []bool{true, false} {
		t.Run(fmt.Sprintf("removing=%v", removing), func(t *testing.T) {
			m, p := setup(t)
			ws := create(t, m, p, "cut")
			commonDir := filepath.Join(p.Path, ".git")
			staged := stagedFolder(ws.Path)
			testenv.WriteFile(t, filepath.Join(ws.Path, "left.txt"), "half removed")
			if err := os.Rename(ws.Path, staged); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(staged, ".git")); err != nil {
				t.Fatal(err)
			}
			if err := writePending(commonDir, pendingDelete{Path: ws.Path, Branch: ws.Branch, Removing: removing}); err != nil {
				t.Fatal(err)
			}
			err := m.Delete(context.Background(), ws.Path, DeleteOptions{})
			if !removing {
				wantCode(t, err, CodeConflict)
				wantFile(t, filepath.Join(staged, "left.txt"), "half removed")
				return
			}
			if err != nil {
				t.Fatalf("delete: %v", err)
			}
			if exists(staged) || registered(t, p.Path, ws.Path) {
				t.Fatal("what was left of the worktree is still there")
			}
		})
	}
}
