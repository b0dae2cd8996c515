package instance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"codehydra/internal/testenv"
)

// On Windows EnsureDir checks only that the folder is a real one: its
// owner and access are the ACL's, inherited from %LOCALAPPDATA%.
func TestEnsureDirMakesARealFolder(t *testing.T) {
	for _, tt := range []struct {
		name    string
		prepare func(t *testing.T, dir string)
		wantErr string
	}{
		{name: "creates missing folder", prepare: func(*testing.T, string) {}},
		{name: "keeps an existing folder", prepare: func(t *testing.T, dir string) {
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "rejects a symlink", prepare: func(t *testing.T, dir string) {
			testenv.Symlink(t, t.TempDir(), dir)
		}, wantErr: "not a folder"},
		{name: "rejects a file", prepare: func(t *testing.T, dir string) {
			if err := os.WriteFile(dir, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, wantErr: "create folder"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "codehydra")
			tt.prepare(t, dir)
			err := EnsureDir(dir)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("EnsureDir = %v, want error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("EnsureDir: %v", err)
			}
			if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
				t.Fatalf("Lstat = %v, %v; want a folder", fi, err)
			}
		})
	}
}
