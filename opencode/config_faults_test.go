//go:build unix

package opencode

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"codehydra/internal/atomicfile"
	"codehydra/internal/testenv"
)

// When the OpenCode config cannot be written — a read-only folder, a full
// disk — WriteConfig says which file and why, and the previous file stays
// as it was (agents started later still read a whole config).

func TestWriteConfigFailuresKeepThePreviousFile(t *testing.T) {
	const previous = `{"previous": "config"}`
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) atomicfile.Writer
		want  error
	}{
		{"full disk", func(*testing.T, string) atomicfile.Writer {
			return atomicfile.Writer{Wrap: func(f io.Writer) io.Writer { return &testenv.FullDisk{W: f, Room: 100} }}
		}, syscall.ENOSPC},
		// The refusals of a read-only folder are injected, so that they
		// are tested for every user (modes do not stop root); the real
		// read-only folder runs too where it can (see testenv.ReadOnlyDir).
		{"temp file refused", func(*testing.T, string) atomicfile.Writer {
			return atomicfile.Writer{CreateTemp: testenv.RefuseCreate}
		}, os.ErrPermission},
		{"rename refused", func(*testing.T, string) atomicfile.Writer {
			return atomicfile.Writer{Rename: testenv.RefuseRename}
		}, os.ErrPermission},
		{"real read-only folder", func(t *testing.T, dir string) atomicfile.Writer {
			testenv.ReadOnlyDir(t, dir)
			return atomicfile.Writer{}
		}, os.ErrPermission},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "codehydra-mcp.json")
			if err := os.WriteFile(path, []byte(previous), 0o600); err != nil {
				t.Fatal(err)
			}
			err := writeConfigWith(tt.setup(t, dir), path)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), path) || !strings.HasPrefix(err.Error(), "write opencode config") {
				t.Fatalf("error %v; want %v naming %s", err, tt.want, path)
			}
			if b, _ := os.ReadFile(path); string(b) != previous {
				t.Fatalf("the previous config changed to %q", b)
			}
			if es, _ := os.ReadDir(dir); len(es) != 1 {
				t.Fatalf("files left in %s: %v", dir, es)
			}
		})
	}
}
