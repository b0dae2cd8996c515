//go:build unix

package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

func TestFullDiskPassesOnTheRoomThenFailsWithENOSPC(t *testing.T) {
	tests := []struct {
		name   string
		room   int
		writes []string
		want   string
	}{
		{"no room", 0, []string{"abc"}, ""},
		{"room inside a write", 2, []string{"abc", "d"}, "ab"},
		{"room across writes", 4, []string{"abc", "def"}, "abcd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got bytes.Buffer
			d := &FullDisk{W: &got, Room: tt.room}
			var err error
			for _, w := range tt.writes {
				if _, err = d.Write([]byte(w)); err != nil {
					break
				}
			}
			if !errors.Is(err, syscall.ENOSPC) || got.String() != tt.want {
				t.Fatalf("wrote %q, error %v; want %q and ENOSPC", got.String(), err, tt.want)
			}
		})
	}
}

func TestReadOnlyDirRefusesNewEntriesUntilTheTestEnds(t *testing.T) {
	dir := t.TempDir()
	t.Run("read-only", func(t *testing.T) {
		ReadOnlyDir(t, dir)
		if err := os.WriteFile(filepath.Join(dir, "new"), nil, 0o600); err == nil {
			t.Fatal("a new file was created in the read-only folder")
		}
	})
	if err := os.WriteFile(filepath.Join(dir, "new"), nil, 0o600); err != nil {
		t.Fatalf("the folder stayed read-only after the test: %v", err)
	}
}

func TestRefuseCreateAndRenameFailLikeAReadOnlyFolderAndTouchNothing(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old")
	if err := os.WriteFile(old, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if f, err := RefuseCreate(dir, ".file.tmp-*"); f != nil || !errors.Is(err, syscall.EACCES) || !errors.Is(err, os.ErrPermission) {
		t.Errorf("RefuseCreate = %v, %v; want no file and EACCES", f, err)
	}
	newPath := filepath.Join(dir, "new")
	if err := RefuseRename(old, newPath); !errors.Is(err, syscall.EACCES) || !errors.Is(err, os.ErrPermission) {
		t.Errorf("RefuseRename = %v; want EACCES", err)
	}
	es, err := os.ReadDir(dir)
	if err != nil || len(es) != 1 || es[0].Name() != "old" {
		t.Fatalf("folder holds %v, %v; want only old", es, err)
	}
}

// endRecorder records how a test was ended instead of ending it.
type endRecorder struct {
	testing.TB
	fatal, skip string
}

func (r *endRecorder) Helper()                        {}
func (r *endRecorder) Fatalf(format string, a ...any) { r.fatal = fmt.Sprintf(format, a...) }
func (r *endRecorder) Skipf(format string, a ...any)  { r.skip = fmt.Sprintf(format, a...) }

func TestCannotRunSkipsOnlyWhenTheVariableIsNotOne(t *testing.T) {
	const env = "CODEHYDRA_TEST_CANNOT_RUN"
	for _, value := range []string{"", "0", "1"} {
		t.Run("value "+value, func(t *testing.T) {
			t.Setenv(env, value)
			r := &endRecorder{TB: t}
			CannotRun(r, env, "no %s here", "tool")
			if value == "1" {
				if r.skip != "" || !strings.Contains(r.fatal, "no tool here") || !strings.Contains(r.fatal, env+"=1") {
					t.Fatalf("fatal %q, skip %q; want a failure that names the reason and %s", r.fatal, r.skip, env)
				}
				return
			}
			if r.fatal != "" || r.skip != "no tool here" {
				t.Fatalf("fatal %q, skip %q; want a skip with the reason", r.fatal, r.skip)
			}
		})
	}
}

func TestSyncBufferKeepsEveryConcurrentWrite(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("x"))
			}
		})
	}
	wg.Wait()
	if n := len(b.String()); n != 800 {
		t.Fatalf("got %d bytes, want 800", n)
	}
}

func TestGitRepoHasOneCommitOnMain(t *testing.T) {
	dir := GitRepo(t, "project")
	if filepath.Base(dir) != "project" {
		t.Errorf("repo folder = %s, want one named project", dir)
	}
	if got := Git(t, dir, "rev-parse", "--abbrev-ref", "HEAD"); got != "main" {
		t.Errorf("branch = %q, want main", got)
	}
	if got := Git(t, dir, "rev-list", "--count", "HEAD"); got != "1" {
		t.Errorf("commits = %s, want 1", got)
	}
	if got := Git(t, dir, "status", "--porcelain"); got != "" {
		t.Errorf("a new repo is dirty: %q", got)
	}
}

func TestCommitFileMakesItsFoldersAndReturnsTheNewHead(t *testing.T) {
	dir := GitRepo(t, "project")
	head := CommitFile(t, dir, filepath.Join("a", "b", "c.txt"), "content\n", "add c")
	if got := Git(t, dir, "rev-parse", "HEAD"); head != got || len(head) != 40 {
		t.Errorf("CommitFile returned %q, HEAD is %q", head, got)
	}
	if got := Git(t, dir, "log", "-1", "--format=%s"); got != "add c" {
		t.Errorf("last commit message = %q, want add c", got)
	}
	if got := Git(t, dir, "show", "HEAD:a/b/c.txt"); got != "content" {
		t.Errorf("committed content = %q, want content", got)
	}
	if got := Git(t, dir, "status", "--porcelain"); got != "" {
		t.Errorf("repo dirty after CommitFile: %q", got)
	}
}

func TestRealOpencodeTakesTheVariableElseTheMachinesInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("RealOpencode skips in -short mode")
	}
	bin := filepath.Join(t.TempDir(), "opencode")
	WriteFile(t, bin, "")
	t.Setenv(OpencodeEnv, bin)
	if got := RealOpencode(t); got != bin {
		t.Errorf("with %s set: %q, want %q", OpencodeEnv, got, bin)
	}

	home := t.TempDir()
	t.Setenv(OpencodeEnv, "")
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", "")
	installed := filepath.Join(home, ".local", "share", "codehydra", "tools", "node_modules", ".bin", "opencode")
	WriteFile(t, installed, "")
	if got := RealOpencode(t); got != installed {
		t.Errorf("without XDG_DATA_HOME: %q, want %q", got, installed)
	}

	t.Setenv("XDG_DATA_HOME", filepath.Join(home, "data"))
	t.Setenv(RequireOpencodeEnv, "")
	r := &endRecorder{TB: t}
	RealOpencode(r)
	want := filepath.Join(home, "data", "codehydra", "tools", "node_modules", ".bin", "opencode")
	if r.fatal != "" || !strings.Contains(r.skip, "not found at "+want) {
		t.Errorf("missing binary: fatal %q, skip %q; want a skip naming %s", r.fatal, r.skip, want)
	}
	t.Setenv(RequireOpencodeEnv, "1")
	r = &endRecorder{TB: t}
	RealOpencode(r)
	if !strings.Contains(r.fatal, "not found at "+want) {
		t.Errorf("missing binary with %s=1: fatal %q, want a failure naming %s", RequireOpencodeEnv, r.fatal, want)
	}
}
