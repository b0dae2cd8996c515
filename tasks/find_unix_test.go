//go:build unix

package tasks

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A FIFO named Makefile must not hang the listing: opening it for
// reading would wait for a writer forever.
func TestFindDoesNotHangOnAFIFONamedMakefile(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "Makefile"), 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := Find(dir); done <- err }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Find hangs on a FIFO named Makefile")
	}
}
