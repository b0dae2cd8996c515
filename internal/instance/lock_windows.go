package instance

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/windows"
)

// tryLock takes LockFileEx's exclusive lock on the first byte of f without
// waiting; errBusy when another handle holds it. Windows drops the lock
// when the handle is closed or its process ends.
func tryLock(f *os.File) error {
	var ol windows.Overlapped
	err := windows.LockFileEx(windows.Handle(f.Fd()),
		windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return errBusy
	}
	return err
}

func unlock(f *os.File) error {
	var ol windows.Overlapped
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}

// Alive reports whether a process with the pid exists and has not exited
// (one that cannot be opened for lack of rights counts as alive).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if errors.Is(err, windows.ERROR_ACCESS_DENIED) {
		return true
	}
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	var code uint32
	return windows.GetExitCodeProcess(h, &code) == nil && code == stillActive
}

// stillActive is STILL_ACTIVE of <minwinbase.h>, the exit code of a process
// that has not exited, which x/sys/windows does not name.
const stillActive = 259

// EnsureDir creates dir if needed and checks that it is a real folder (not
// a symlink or junction). The runtime folder is under %LOCALAPPDATA%, whose
// ACL grants only the user (and SYSTEM and Administrators) access and which
// new folders inherit, so there is no shared fallback to guard against and
// no mode to tighten: Windows ignores Unix permission bits.
func EnsureDir(dir string) error {
	_, err := makeRealDir(dir)
	return err
}

// ownerOf says that fi is this user's: the runtime folder's ACL (see
// EnsureDir) admits no other user.
func ownerOf(fs.FileInfo) (uid int, mine bool) { return -1, true }

// othersMayWrite is false: Windows ignores Unix permission bits, and the
// folder's ACL admits no other user.
func othersMayWrite(fs.FileInfo) bool { return false }
