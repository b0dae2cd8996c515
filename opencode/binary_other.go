//go:build !windows

package opencode

import "path/filepath"

// toolsBinary is where npm (`make run`) puts opencode under toolsDir: a
// symlink to the package's binary.
func toolsBinary(toolsDir string) string {
	return filepath.Join(toolsDir, "node_modules", ".bin", "opencode")
}

// nativeBinary is path: outside Windows npm's shims are symlinks to the
// binary itself.
func nativeBinary(path string) string { return path }
