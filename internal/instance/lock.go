package instance

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// ErrLocked is returned (wrapped) by Acquire when another process holds the
// lock.
var ErrLocked = errors.New("another instance holds the lock")

// errBusy is what tryLock returns when another open of the file holds the
// lock; each system's own error for that (EWOULDBLOCK,
// ERROR_LOCK_VIOLATION) becomes it.
var errBusy = errors.New("lock is busy")

// Lock is a held single-instance lock. The system drops it when the process
// ends, however it ends, so a crash never leaves a stale lock behind.
type Lock struct {
	f *os.File
}

// Acquire takes the exclusive lock on the file at path without waiting,
// creating the file (0600) and its private folder as needed. It returns an
// error wrapping ErrLocked when another open of the file holds the lock —
// another process, or another Acquire in this one.
func Acquire(path string) (*Lock, error) {
	return acquire(path, time.Sleep)
}

// acquire is Acquire with the pause between tries (tests release the lock
// in it).
func acquire(path string, pause func(time.Duration)) (*Lock, error) {
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
		err = tryLock(f)
		if !errors.Is(err, errBusy) || attempt >= heldRetries {
			break
		}
		pause(heldRetryDelay)
	}
	if err != nil {
		f.Close()
		if errors.Is(err, errBusy) {
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
	err := unlock(l.f)
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
// lock itself, which the system drops when its holder ends, so a reused pid
// or a pid of another process never passes for the instance. A missing
// file is not held; Held creates nothing.
//
// The lock file and its folder must be the user's own (see Read): a lock
// another user made and holds says nothing of CodeHydra.
func Held(path string) (bool, error) {
	for _, c := range []struct {
		p   string
		dir bool
	}{{filepath.Dir(path), true}, {path, false}} {
		if err := checkOwn(c.p, c.dir); errors.Is(err, fs.ErrNotExist) {
			return false, nil
		} else if err != nil {
			return false, err
		}
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("open lock file: %w", err)
	}
	defer f.Close()
	switch err := tryLock(f); {
	case errors.Is(err, errBusy):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("check lock %s: %w", path, err)
	}
	// Taken for a moment: no one held it. Dropped at once rather than
	// with the file, which Windows does "in time".
	_ = unlock(f)
	return false, nil
}
