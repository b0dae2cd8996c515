//go:build unix

package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"codehydra/internal/testenv"
)

// entries lists the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestAFullDiskLeavesThePreviousFileAndNoTempFile(t *testing.T) {
	data := []byte(strings.Repeat("new content\n", 1000))
	for _, room := range []int{0, 1, len(data) / 2, len(data) - 1} {
		t.Run(fmt.Sprintf("full after %d bytes", room), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "file.json")
			if err := os.WriteFile(path, []byte("old content"), 0o600); err != nil {
				t.Fatal(err)
			}
			w := Writer{Wrap: func(f io.Writer) io.Writer { return &testenv.FullDisk{W: f, Room: room} }}
			err := w.Write(path, data, 0o600)
			if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %v; want one that names %s and says the disk is full", err, path)
			}
			if b, _ := os.ReadFile(path); string(b) != "old content" {
				t.Fatalf("previous file = %q", b)
			}
			if names := entries(t, dir); len(names) != 1 {
				t.Fatalf("files left: %v", names)
			}
			if err := Write(path, data, 0o600); err != nil {
				t.Fatalf("write once there is room again: %v", err)
			}
		})
	}
}

// A folder the user may not write to refuses the temp file or its rename.
// The refusals are injected, so that they are tested for every user (modes
// do not stop root); the real read-only folder runs too where it can (see
// testenv.ReadOnlyDir).
func TestAReadOnlyFolderLeavesThePreviousFile(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) Writer
	}{
		{"temp file refused", func(*testing.T, string) Writer { return Writer{CreateTemp: testenv.RefuseCreate} }},
		{"rename refused", func(*testing.T, string) Writer { return Writer{Rename: testenv.RefuseRename} }},
		{"real read-only folder", func(t *testing.T, dir string) Writer {
			testenv.ReadOnlyDir(t, dir)
			return Writer{}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "file.json")
			if err := os.WriteFile(path, []byte("old content"), 0o600); err != nil {
				t.Fatal(err)
			}
			err := tt.setup(t, dir).Write(path, []byte("new"), 0o600)
			if !errors.Is(err, os.ErrPermission) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %v; want a permission error that names %s", err, path)
			}
			if b, _ := os.ReadFile(path); string(b) != "old content" {
				t.Fatalf("previous file = %q", b)
			}
			if names := entries(t, dir); len(names) != 1 {
				t.Fatalf("files left: %v", names)
			}
		})
	}
}
