package mcp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// Git's lock files held by someone else (an editor's git integration, a
// git command in a terminal): every call that needs one gets a conflict
// that names the file and says to try again, leaves nothing half made, and
// succeeds once the lock is gone. Calls that need no lock are not held up.

// holdLock creates a lock file as another git process would and returns a
// function that releases it.
func holdLock(t *testing.T, path string) func() {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	released := false
	release := func() {
		if !released {
			released = true
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(release)
	return release
}

func TestHeldGitLocksAreAConflictNamingTheFileAndARetrySucceeds(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.RateLimit, o.Burst = 1e6, 1e6 })
	ws := h.create("busy")
	cs := h.session(ws.Path)
	gitDir := filepath.Join(h.project, ".git")
	configLock := filepath.Join(gitDir, "config.lock")

	cases := 0
	defer func() {
		t.Logf("FIGURE git-locks: cases=%d failures=%d", cases, btoi(t.Failed()))
	}()
	conflict := func(t *testing.T, what string, res *sdk.CallToolResult, lock string) {
		t.Helper()
		code, msg := errCode(t, res)
		if code != workspace.CodeConflict || !strings.Contains(msg, lock) || !strings.Contains(msg, "try again") {
			t.Fatalf("%s with %s held: %s %q; want a conflict that names the lock and says to try again", what, filepath.Base(lock), code, msg)
		}
	}

	t.Run("config.lock: set metadata", func(t *testing.T) {
		cases++
		release := holdLock(t, configLock)
		conflict(t, "set metadata", call(t, cs, ToolSetMetadata, map[string]any{"key": "note", "value": "v1"}), configLock)
		// Reads need no lock.
		var md map[string]string
		okJSON(t, call(t, cs, ToolGetMetadata, nil), &md)
		release()
		if res := call(t, cs, ToolSetMetadata, map[string]any{"key": "note", "value": "v1"}); res.IsError {
			t.Fatalf("retry: %s", text(t, res))
		}
		okJSON(t, call(t, cs, ToolGetMetadata, nil), &md)
		if md["note"] != "v1" {
			t.Fatalf("metadata after the retry: %v", md)
		}
	})

	t.Run("config.lock: create", func(t *testing.T) {
		cases++
		release := holdLock(t, configLock)
		args := map[string]any{"projectPath": h.project, "name": "made-while-locked"}
		conflict(t, "create", call(t, h.session(""), ToolCreate, args), configLock)
		if out := testenv.Git(t, h.project, "branch", "--list", "made-while-locked"); out != "" {
			t.Fatalf("a failed create left its branch: %q", out)
		}
		if list := testenv.Git(t, h.project, "worktree", "list"); strings.Contains(list, "made-while-locked") {
			t.Fatalf("a failed create left its worktree:\n%s", list)
		}
		release()
		var made workspace.Workspace
		okJSON(t, call(t, h.session(""), ToolCreate, args), &made)
		if _, err := os.Stat(made.Path); err != nil {
			t.Fatalf("retry: %v", err)
		}
	})

	t.Run("ref lock: create", func(t *testing.T) {
		cases++
		lock := filepath.Join(gitDir, "refs", "heads", "ref-locked.lock")
		release := holdLock(t, lock)
		args := map[string]any{"projectPath": h.project, "name": "ref-locked"}
		conflict(t, "create", call(t, h.session(""), ToolCreate, args), lock)
		release()
		okJSON(t, call(t, h.session(""), ToolCreate, args), &workspace.Workspace{})
	})

	t.Run("index.lock: nothing of CodeHydra needs it", func(t *testing.T) {
		cases++
		// The main checkout's index and the workspace's own.
		admin := strings.TrimSpace(testenv.Git(t, ws.Path, "rev-parse", "--absolute-git-dir"))
		holdLock(t, filepath.Join(gitDir, "index.lock"))
		holdLock(t, filepath.Join(admin, "index.lock"))
		if err := os.WriteFile(filepath.Join(ws.Path, "new.txt"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		var st map[string]any
		okJSON(t, call(t, cs, ToolGetStatus, nil), &st)
		if st["isDirty"] != true {
			t.Fatalf("status with index.lock held: %v", st)
		}
		if res := call(t, cs, ToolSetMetadata, map[string]any{"key": "note", "value": "v2"}); res.IsError {
			t.Fatalf("set metadata with index.lock held: %s", text(t, res))
		}
		okJSON(t, call(t, h.session(""), ToolCreate, map[string]any{"projectPath": h.project, "name": "index-locked"}), &workspace.Workspace{})
	})

	t.Run("config.lock: delete", func(t *testing.T) {
		cases++
		doomed := h.create("doomed-locked")
		events, stop := h.mgr.Subscribe()
		defer stop()
		release := holdLock(t, configLock)
		// The workspace's own call, answered before the delete runs (the
		// user's waits and answers the failure).
		dcs := h.sessionAs(h.tokenOf(doomed.Path), doomed.Path)
		okJSON(t, call(t, dcs, ToolDelete, nil), &map[string]any{})
		failed := waitEvent(t, events, func(e workspace.Event) bool {
			return e.Kind == workspace.EventDeleteFailed && e.Workspace.Path == doomed.Path
		})
		if failed.Step != workspace.StepRemoveMetadata || !strings.Contains(failed.Err, configLock) {
			t.Fatalf("delete-failed = %+v", failed)
		}
		// The metadata goes last, after the worktree and the branch: the
		// failure left it, and nothing else, for the retry.
		if _, err := os.Stat(doomed.Path); !os.IsNotExist(err) {
			t.Fatalf("the worktree is still there although only the metadata step failed: %v", err)
		}
		if base := testenv.Git(t, h.project, "config", "--get", "branch.doomed-locked.codehydra.base"); base == "" {
			t.Fatal("the failed delete lost the metadata")
		}
		// The workspace is gone, so its token no longer calls; the next
		// launch finishes the delete.
		h.waitBackground()
		release()
		next := workspace.NewManager(workspace.Options{Projects: []string{h.project}, WorktreeRoot: t.TempDir()})
		if err := next.Load(context.Background()); err != nil {
			t.Fatal(err)
		}
		if out, _ := testenv.GitErr(h.project, "config", "--get-regexp", `^branch\.doomed-locked\.`); out != "" {
			t.Fatalf("the next launch left the branch's config %q", out)
		}
	})

	t.Run("ref lock: delete", func(t *testing.T) {
		cases++
		// The branch goes last: with its ref locked the worktree is gone
		// and the branch stays; the next launch deletes it.
		doomed := h.create("branch-locked")
		events, stop := h.mgr.Subscribe()
		defer stop()
		lock := filepath.Join(gitDir, "refs", "heads", "branch-locked.lock")
		release := holdLock(t, lock)
		okJSON(t, call(t, h.sessionAs(h.tokenOf(doomed.Path), doomed.Path), ToolDelete, nil), &map[string]any{})
		failed := waitEvent(t, events, func(e workspace.Event) bool {
			return e.Kind == workspace.EventDeleteFailed && e.Workspace.Path == doomed.Path
		})
		if failed.Step != workspace.StepDeleteBranch || !strings.Contains(failed.Err, lock) {
			t.Fatalf("delete-failed = %+v", failed)
		}
		release()
		next := workspace.NewManager(workspace.Options{Projects: []string{h.project}, WorktreeRoot: t.TempDir()})
		if err := next.Load(context.Background()); err != nil {
			t.Fatal(err)
		}
		if out := testenv.Git(t, h.project, "branch", "--list", "branch-locked"); out != "" {
			t.Fatalf("the next launch did not delete the branch: %q", out)
		}
		if _, err := os.Stat(ws.Path); err != nil {
			t.Fatalf("another workspace was touched: %v", err)
		}
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// waitEvent reads events until one matches.
func waitEvent(t *testing.T, events <-chan workspace.Event, match func(workspace.Event) bool) workspace.Event {
	t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case e := <-events:
			if match(e) {
				return e
			}
		case <-timeout:
			t.Fatal("no matching event within 15 s")
		}
	}
}
