package instance

import (
	"fmt"
	"io/fs"
	"os"
)

// makeRealDir creates dir with mode 0700 if needed and returns its own
// information, not a link's target's: a link, where another user could
// point CodeHydra's runtime files, is refused. EnsureDir adds each
// system's check of the owner.
func makeRealDir(dir string) (fs.FileInfo, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create folder %s: %w (set XDG_RUNTIME_DIR to a private folder)", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("check folder %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a folder (it may be a symlink): remove it or set XDG_RUNTIME_DIR to a private folder", dir)
	}
	return fi, nil
}

// checkOwn checks, creating and changing nothing, that path is the
// user's own: a real folder (dir) or regular file, not a link, owned by
// the user, that no one else may write. Its error wraps fs.ErrNotExist
// when there is nothing at path.
func checkOwn(path string, dir bool) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("check %s: %w", path, err)
	}
	what := "file"
	if dir {
		what = "folder"
	}
	switch {
	case dir && !fi.IsDir(), !dir && !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a %s (it may be a symlink): it is not CodeHydra's; remove it, or set XDG_RUNTIME_DIR to a private folder", path, what)
	}
	if uid, mine := ownerOf(fi); !mine {
		return fmt.Errorf("%s %s belongs to another user (uid %d): it is not CodeHydra's, and CodeHydra will not talk to what it names; remove it, or set XDG_RUNTIME_DIR to a private folder", what, path, uid)
	}
	if othersMayWrite(fi) {
		return fmt.Errorf("%s %s may be written by other users: it is not CodeHydra's (CodeHydra makes it private); remove it, or set XDG_RUNTIME_DIR to a private folder", what, path)
	}
	return nil
}
