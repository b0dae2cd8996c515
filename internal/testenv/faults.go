//go:build unix

package testenv

import (
	"io"
	"os"
	"os/exec"
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

// ReadOnlyDir makes dir refuse new entries until the test ends: by its
// mode, or for root (whom modes do not stop) with the immutable attribute.
// It skips the test when running as root without chattr.
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
		t.Skipf("running as root and cannot make %s immutable (chattr: %v %s)", dir, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("chattr", "-i", dir).Run() })
}
