//go:build unix

package instance

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// tryLock takes flock(2)'s exclusive lock on f without waiting; errBusy
// when another open of the file holds it.
func tryLock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return errBusy
		}
		return err
	}
}

func unlock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

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
	fi, err := makeRealDir(dir)
	if err != nil {
		return err
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

// ownerOf is fi's owner, and whether it is this user.
func ownerOf(fi fs.FileInfo) (uid int, mine bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return -1, false
	}
	return int(st.Uid), int(st.Uid) == os.Getuid()
}

// othersMayWrite says whether group or others may write fi.
func othersMayWrite(fi fs.FileInfo) bool { return fi.Mode().Perm()&0o022 != 0 }
