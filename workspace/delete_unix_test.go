//go:build unix

package workspace

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"codehydra/internal/testenv"
)

// On Windows a git reading a worktree's admin files (the status cache's,
// an agent's) holds them a moment, and removing git's record of the
// worktree failed with "Sharing violation" (seen under wine in the exe
// test): the delete tries that removal again, as it does the folder's.
// Here the record's folder refuses changes until the delete's first wait
// (testenv.ReadOnlyDir: Unix modes, or the immutable attribute for root).
func TestADeleteTriesAgainToRemoveGitsRecordOfTheWorktree(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "held")
	admin := strings.TrimSpace(testenv.Git(t, ws.Path, "rev-parse", "--absolute-git-dir"))
	testenv.ReadOnlyDir(t, admin)
	waits := 0
	m.sleep = func(context.Context, time.Duration) error {
		waits++
		if waits == 1 {
			if os.Geteuid() == 0 {
				if out, err := exec.Command("chattr", "-i", admin).CombinedOutput(); err != nil {
					t.Errorf("chattr -i: %v %s", err, out)
				}
			} else if err := os.Chmod(admin, 0o700); err != nil {
				t.Error(err)
			}
		}
		return nil
	}
	if err := m.Delete(context.Background(), ws.Path, DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if waits == 0 {
		t.Fatal("the delete never waited: git's record was not held")
	}
	if exists(admin) || exists(ws.Path) || registered(t, p.Path, ws.Path) {
		t.Fatal("the worktree, or git's record of it, is left")
	}
}
