//go:build unix

package testenv

import (
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// FullDisk passes on Room bytes to W, then fails like a write to a full
// disk.
type FullDisk struct {
	W    io.Writer
	Room int
}

func (d *FullDisk) Write(p []byte) (int, error) {
	if len(p) <= d.Room {
		n, err := d.W.Write(p)
		d.Room -= n
		return n, err
	}
	n, _ := d.W.Write(p[:d.Room])
	d.Room = 0
	return n, syscall.ENOSPC
}

// RefuseCreate fails like os.CreateTemp in a folder the user may not write
// to (EACCES), creating nothing. It has os.CreateTemp's signature, for
// atomicfile.Writer.CreateTemp.
func RefuseCreate(dir, pattern string) (*os.File, error) {
	return nil, &fs.PathError{Op: "open", Path: filepath.Join(dir, pattern), Err: syscall.EACCES}
}

// RefuseRename fails like os.Rename in a folder the user may not write to
// (EACCES), moving nothing. It has os.Rename's signature, for
// atomicfile.Writer.Rename.
func RefuseRename(oldpath, newpath string) error {
	return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: syscall.EACCES}
}

// ReadOnlyDir makes dir refuse new entries until the test ends: by its
// mode, or for root (whom modes do not stop) with the immutable attribute.
// Root without chattr, or without the right to use it (a container without
// CAP_LINUX_IMMUTABLE), skips the test, or fails it when RequireFaultsEnv
// is 1. Tests that can inject the failure instead use RefuseCreate and
// RefuseRename, which work for every user.
func ReadOnlyDir(t testing.TB, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
		return
	}
	if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
		CannotRun(t, RequireFaultsEnv, "running as root and cannot make %s immutable (chattr: %v %s)", dir, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("chattr", "-i", dir).Run() })
}
