//go:build unix

package instance

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"codehydra/internal/testenv"
)

func TestEnsureDir(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, dir string)
		// otherUser checks the folder as a user other than its owner, which
		// needs no root (for a real one, see
		// TestEnsureDirRejectsARealFolderOfAnotherUser).
		otherUser bool
		wantErr   string
	}{
		{name: "creates missing folder", prepare: func(*testing.T, string) {}},
		{name: "tightens a loose folder", prepare: func(t *testing.T, dir string) {
			if err := os.Mkdir(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "rejects a symlink", prepare: func(t *testing.T, dir string) {
			if err := os.Symlink(t.TempDir(), dir); err != nil {
				t.Fatal(err)
			}
		}, wantErr: "not a folder"},
		{name: "rejects a file", prepare: func(t *testing.T, dir string) {
			if err := os.WriteFile(dir, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, wantErr: "create folder"},
		{name: "rejects another user's folder", prepare: func(t *testing.T, dir string) {
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
		}, otherUser: true, wantErr: "another user"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "codehydra")
			tt.prepare(t, dir)
			ensure := EnsureDir
			if tt.otherUser {
				ensure = func(dir string) error { return ensureDirOf(dir, os.Getuid()+1) }
			}
			err := ensure(dir)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("EnsureDir = %v, want error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("EnsureDir: %v", err)
			}
			fi, err := os.Lstat(dir)
			if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
				t.Fatalf("folder = %v, %v; want a 0700 folder", fi.Mode(), err)
			}
		})
	}
}

// TestEnsureDirRejectsARealFolderOfAnotherUser checks a folder that another
// user really owns: one that root gives away, or for any other user the
// root folder, which root owns (refused before anything is changed).
func TestEnsureDirRejectsARealFolderOfAnotherUser(t *testing.T) {
	dir := "/"
	if os.Getuid() == 0 {
		dir = filepath.Join(t.TempDir(), "codehydra")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	} else if fi, err := os.Stat(dir); err != nil || int(fi.Sys().(*syscall.Stat_t).Uid) == os.Getuid() {
		testenv.CannotRun(t, testenv.RequireFaultsEnv, "found no folder owned by another user (%s: %v)", dir, err)
	}
	if err := EnsureDir(dir); err == nil || !strings.Contains(err.Error(), "another user") {
		t.Fatalf("EnsureDir(%s) = %v, want an error saying it belongs to another user", dir, err)
	}
}
