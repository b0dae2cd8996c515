package workspace

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"codehydra/internal/testenv"
)

// TestDeleteWithExpectHeadRefusesAWorkspaceThatMoved: a delete that
// expects a head removes nothing when the workspace, its agent stopped,
// is at another commit or has uncommitted files; at that head and clean,
// it deletes.
func TestDeleteWithExpectHeadRefusesAWorkspaceThatMoved(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "ws")
	ctx := context.Background()
	checked := testenv.CommitFile(t, ws.Path, "a.txt", "a\n", "checked work")
	testenv.CommitFile(t, ws.Path, "b.txt", "b\n", "later work")
	wantCode(t, m.Delete(ctx, ws.Path, DeleteOptions{ExpectHead: checked}), CodeConflict)
	if !exists(ws.Path) || !branchExists(t, p.Path, "ws") {
		t.Fatal("a delete expecting an older head removed the workspace")
	}
	head := testenv.Git(t, ws.Path, "rev-parse", "HEAD")
	if err := os.WriteFile(filepath.Join(ws.Path, "new.txt"), []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantCode(t, m.Delete(ctx, ws.Path, DeleteOptions{ExpectHead: head}), CodeConflict)
	if !exists(filepath.Join(ws.Path, "new.txt")) {
		t.Fatal("a delete expecting a clean workspace removed its untracked file")
	}
	if err := os.Remove(filepath.Join(ws.Path, "new.txt")); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(ctx, ws.Path, DeleteOptions{ExpectHead: head}); err != nil {
		t.Fatal(err)
	}
	if exists(ws.Path) || branchExists(t, p.Path, "ws") {
		t.Fatal("a delete at the expected head left the workspace")
	}
}
