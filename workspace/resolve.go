package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// checkRequestPath applies the X-Workspace-Path rules that need no file
// system: not empty, at most MaxPathLength bytes, no NUL, absolute, no ".."
// element.
func checkRequestPath(path string) error {
	switch {
	case path == "":
		return Errorf(CodeInvalidInput, "the workspace path is empty; give the absolute path of a workspace")
	case len(path) > MaxPathLength:
		return Errorf(CodeInvalidInput, "the workspace path is %d bytes long; the limit is %d", len(path), MaxPathLength)
	case strings.ContainsRune(path, 0):
		return Errorf(CodeInvalidInput, "the workspace path contains a NUL character")
	case !filepath.IsAbs(path):
		return Errorf(CodeInvalidInput, "workspace path %q is not absolute; give the absolute path of a workspace", path)
	}
	for part := range strings.FieldsFuncSeq(path, isPathSeparator) {
		if part == ".." {
			return Errorf(CodeInvalidInput, "workspace path %q contains \"..\"; give the workspace's own absolute path", path)
		}
	}
	return nil
}

func isPathSeparator(r rune) bool { return r == '/' || r == filepath.Separator }

// Resolve returns the registered workspace at path, by the X-Workspace-Path
// rules: an empty, relative, too long (over MaxPathLength bytes) path, one
// with a NUL or a ".." element is CodeInvalidInput; otherwise the path is
// cleaned, its symlinks resolved and the result compared as a whole with the
// workspaces' paths (case-folded on Windows). A subfolder of a workspace or
// a missing path is CodeWorkspaceNotFound.
func (m *Manager) Resolve(path string) (Workspace, error) {
	ws, _, err := m.resolve(path)
	return ws, err
}

func (m *Manager) resolve(path string) (Workspace, *project, error) {
	if err := checkRequestPath(path); err != nil {
		return Workspace{}, nil, err
	}
	clean := filepath.Clean(path)
	// A workspace's own path, as its agent sends it on every call, is
	// resolved already (workspaces' paths are kept so): one lstat shows
	// that it is still a folder, where EvalSymlinks would lstat each of
	// its components (about 17 µs per call of the MCP server's, here).
	if ws, p, ok := m.registered(clean); ok {
		if fi, err := os.Lstat(clean); err == nil && fi.IsDir() {
			return ws, p, nil
		}
	}
	real, err := filepath.EvalSymlinks(clean)
	if err != nil {
		msg := fmt.Sprintf("no workspace at %s", clean)
		if errors.Is(err, fs.ErrNotExist) {
			msg += " (the folder does not exist)"
		}
		return Workspace{}, nil, &Error{Code: CodeWorkspaceNotFound, Message: msg, Err: err}
	}
	if ws, p, ok := m.registered(real); ok {
		return ws, p, nil
	}
	return Workspace{}, nil, Errorf(CodeWorkspaceNotFound, "no workspace at %s; it must be the top folder of a workspace of a project", clean)
}

// registered is the workspace whose path is path, as its path is kept.
func (m *Manager) registered(path string) (Workspace, *project, bool) {
	key := pathKey(path)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.projects {
		if ws, ok := p.workspaces[key]; ok {
			return ws, p, true
		}
	}
	return Workspace{}, nil, false
}
