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
