package workspace

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"codehydra/internal/testenv"
)

// These pin two fixes found by the MCP race test (a delete while 20 calls
// of the workspace are in flight): calls that lose the race end in
// workspace-not-found, not in an internal error, and no metadata write
// lands behind the delete's back.

func TestAMetadataWriteDuringADeleteIsRefusedAndLeavesNothing(t *testing.T) {
	t.Parallel()
	agents := &fakeAgents{entered: make(chan string, 1), gate: make(chan struct{})}
	m, p := setupWith(t, agents)
	ws := create(t, m, p, "doomed")
	deleted := make(chan error, 1)
	go func() { deleted <- m.Delete(context.Background(), ws.Path, DeleteOptions{}) }()
	<-agents.entered // the delete runs (its first step is held)

	v := "written during the delete"
	wantCode(t, m.SetMetadata(context.Background(), ws.Path, "note", &v), CodeWorkspaceNotFound)
	wantCode(t, m.SetMetadata(context.Background(), ws.Path, "note", nil), CodeWorkspaceNotFound)
	close(agents.gate)
	if err := <-deleted; err != nil {
		t.Fatal(err)
	}
	// Before the fix the write landed, and `git branch -D` does not remove
	// branch.<name>.codehydra.*: a later workspace of the same name
	// inherited it.
	if out, _ := testenv.GitErr(p.Path, "config", "--get-regexp", `^branch\.doomed\.`); out != "" {
		t.Fatalf("metadata left after the delete: %q", out)
	}
	again := create(t, m, p, "doomed")
	md, err := m.Metadata(context.Background(), again.Path)
	if err != nil {
		t.Fatal(err)
	}
	if len(md) != 1 || md["base"] != "main" {
		t.Fatalf("a new workspace of the same name starts with %v", md)
	}
}

func TestACallWhoseWorkspaceVanishedIsNotFoundNotAnInternalError(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	// Each call resolves its workspace, then the folder goes (removed by
	// hand, no delete running) before the call's first git command; the
	// watcher has not noticed, so the manager still lists it.
	var vanishing atomic.Pointer[string]
	m.git.command = func(ctx context.Context, name string, arg ...string) *exec.Cmd {
		if dir := vanishing.Swap(nil); dir != nil {
			if err := os.RemoveAll(*dir); err != nil {
				t.Error(err)
			}
		}
		return exec.CommandContext(ctx, name, arg...)
	}
	v := "x"
	for _, call := range []struct {
		name string
		run  func(path string) error
	}{
		{"SetMetadata", func(path string) error { return m.SetMetadata(context.Background(), path, "note", &v) }},
		{"Metadata", func(path string) error { _, err := m.Metadata(context.Background(), path); return err }},
	} {
		ws := create(t, m, p, "vanishing-"+strings.ToLower(call.name))
		vanishing.Store(&ws.Path)
		if err := call.run(ws.Path); CodeOf(err) != CodeWorkspaceNotFound {
			t.Errorf("%s: %v (%s), want workspace-not-found", call.name, err, CodeOf(err))
		}
		if vanishing.Load() != nil {
			t.Errorf("%s ran no git command", call.name)
		}
		// A call that comes once the folder is gone is refused as it
		// resolves.
		if err := call.run(ws.Path); CodeOf(err) != CodeWorkspaceNotFound {
			t.Errorf("%s after the folder went: %v (%s), want workspace-not-found", call.name, err, CodeOf(err))
		}
	}
	// A failure in a folder that is still there stays what it is.
	other := create(t, m, p, "broken")
	if err := os.Remove(other.Path + "/.git"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Metadata(context.Background(), other.Path); CodeOf(err) == CodeWorkspaceNotFound {
		t.Fatalf("Metadata of a broken worktree: %v; want it not to look deleted", err)
	}
}
