//go:build unix

package opencode

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"codehydra/internal/atomicfile"
)

// When the OpenCode config cannot be written — a read-only folder, a full
// disk — WriteConfig says which file and why, and the previous file stays
// as it was (agents started later still read a whole config).

// fullDisk passes on room bytes, then fails like a write to a full disk.
type fullDisk struct {
	w    io.Writer
	room int
}

func (d *fullDisk) Write(p []byte) (int, error) {
	if len(p) <= d.room {
		n, err := d.w.Write(p)
		d.room -= n
		return n, err
	}
	n, _ := d.w.Write(p[:d.room])
	d.room = 0
	return n, syscall.ENOSPC
}

// readOnlyDir makes dir refuse new entries until the test ends: by its
// mode, or for root (whom modes do not stop) with the immutable attribute.
func readOnlyDir(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
		return
	}
	if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
		t.Skipf("running as root and cannot make %s immutable (chattr: %v %s)", dir, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("chattr", "-i", dir).Run() })
}

func TestWriteConfigFailuresKeepThePreviousFile(t *testing.T) {
	const previous = `{"previous": "config"}`
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) atomicfile.Writer
		want  error
	}{
		{"full disk", func(*testing.T, string) atomicfile.Writer {
			return atomicfile.Writer{Wrap: func(f io.Writer) io.Writer { return &fullDisk{w: f, room: 100} }}
		}, syscall.ENOSPC},
		{"read-only folder", func(t *testing.T, dir string) atomicfile.Writer {
			readOnlyDir(t, dir)
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
