//go:build unix

package gateway

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// privateAbove refuses dir unless it is the user's own folder, 0700, and
// each folder above it, up to the first that holds the home folder (the
// home folder itself when it holds dir), belongs to the user or root and
// may be written by no other user: neither by others nor by a group other
// than the user's own (a user-private group, as umask 002 systems make
// them). The folders that hold the home folder are relied on, as for
// every file of the user's; a data folder elsewhere, such as in /tmp, is
// refused.
func privateAbove(dir string) error {
	home := ""
	if h, err := os.UserHomeDir(); err == nil {
		if r, err := filepath.EvalSymlinks(h); err == nil {
			home = r
		}
	}
	uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Lstat(d)
		if err != nil {
			return fmt.Errorf("look at %s: %w", d, err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || !fi.IsDir() {
			return fmt.Errorf("%s is not a folder", d)
		}
		perm := fi.Mode().Perm()
		switch {
		case d == dir && (st.Uid != uid || perm != 0o700):
			return fmt.Errorf("%s must be the user's own folder with mode 0700 (it is %v, owner %d)", d, perm, st.Uid)
		case st.Uid != uid && st.Uid != 0:
			return fmt.Errorf("%s belongs to another user (%d): npm or uv started below it would run what that user puts there", d, st.Uid)
		case perm&0o002 != 0 || (perm&0o020 != 0 && st.Gid != gid):
			return fmt.Errorf("%s may be written by other users (mode %v): npm or uv started below it would run what they put there (a node_modules, a package.json, a uv.toml); set XDG_DATA_HOME to a folder of the user's own", d, perm)
		}
		if d == filepath.Dir(d) || home != "" && within(d, home) {
			return nil
		}
	}
}

// within says whether p is dir or lies under it.
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}
