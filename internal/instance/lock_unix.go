//go:build unix

package instance

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// ErrLocked is returned (wrapped) by Acquire when another process holds the
// lock.
var ErrLocked = errors.New("another instance holds the lock")

// Lock is a held single-instance lock. The kernel drops it when the process
// ends, however it ends, so a crash never leaves a stale lock behind.
type Lock struct {
	f *os.File
}

// Acquire takes the exclusive lock on the file at path without waiting,
// creating the file (0600) and its private folder as needed. It returns an
// error wrapping ErrLocked when another open of the file holds the lock —
// another process, or another Acquire in this one.
func Acquire(path string) (*Lock, error) {
	if err := EnsureDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	// Held takes the lock for an instant to learn that no one holds it; a
	// start that meets that instant tries again rather than taking the
	// command line for another instance.
	for attempt := 0; ; attempt++ {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || attempt >= heldRetries {
			break
		}
		time.Sleep(heldRetryDelay)
	}
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock %s: %w", path, ErrLocked)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return &Lock{f: f}, nil
}

// heldRetries and heldRetryDelay bound how long Acquire waits out a Held
// that holds the lock for an instant: 100 ms in all.
const (
	heldRetries    = 20
	heldRetryDelay = 5 * time.Millisecond
)

// Release drops the lock. The file stays: removing it would let a process
// that opened it just before lock a file no one else can find.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	if err != nil {
		return fmt.Errorf("release lock: %w", err)
	}
	return nil
}

// Held reports whether a process holds the lock at path now. It asks the
// lock itself, which the kernel drops when its holder ends, so a reused pid
// or a pid of another process never passes for the instance. A missing
// file is not held; Held creates nothing.
func Held(path string) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("open lock file: %w", err)
	}
	defer f.Close()
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	switch {
	case errors.Is(err, syscall.EWOULDBLOCK):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("check lock %s: %w", path, err)
	}
	// Taken for a moment: no one held it. Closing the file drops it.
	return false, nil
}

// Alive reports whether a process with the pid exists (kill(pid, 0); a
// process of another user counts as alive).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// EnsureDir creates dir with mode 0700 if needed and checks that it is a real
// folder (not a symlink) owned by this user, tightening its mode to 0700 if
// it is looser. This matters when the runtime folder falls back to a shared
// temp folder, where another user could have made it first.
func EnsureDir(dir string) error {
	return ensureDirOf(dir, os.Getuid())
}

// ensureDirOf is EnsureDir for the user uid; tests pass another uid to see
// a folder of their own as another user's, which needs no root.
func ensureDirOf(dir string, uid int) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create folder %s: %w (set XDG_RUNTIME_DIR to a private folder)", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("check folder %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a folder (it may be a symlink): remove it or set XDG_RUNTIME_DIR to a private folder", dir)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if ok && int(st.Uid) != uid {
		return fmt.Errorf("folder %s belongs to another user (uid %d): remove it or set XDG_RUNTIME_DIR to a private folder", dir, st.Uid)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("make folder %s private: %w", dir, err)
		}
	}
	return nil
}
