package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// A call that resolved its workspace may still be running when a delete
// takes the workspace away: its git commands then fail in a folder that is
// half removed or gone. Such a call ends in CodeWorkspaceNotFound, like a
// call that came a moment later, never in an internal error; and a write
// never lands behind a delete's back.

// workspaceGone reports whether dir is a workspace that a delete is
// removing, or a folder that no longer exists (and is not a project).
func (m *Manager) workspaceGone(dir string) bool {
	key := pathKey(dir)
	m.mu.Lock()
	deleting := m.busy[key] == "delete"
	isProject := m.projects[key] != nil
	m.mu.Unlock()
	if deleting {
		return true
	}
	if isProject {
		return false
	}
	_, err := os.Lstat(dir)
	return errors.Is(err, fs.ErrNotExist)
}

// goneError is the error of a call whose workspace a delete took away.
func goneError(path string, err error) *Error {
	return &Error{Code: CodeWorkspaceNotFound, Message: fmt.Sprintf("workspace %s was deleted while the call ran", path), Err: err}
}

// stillWritable reports whether the workspace at path is registered and no
// delete of it runs. Call it with p.configMu held: the delete removes the
// metadata under that lock, so a write checked here either comes before
// the removal or is refused.
func (m *Manager) stillWritable(p *project, path string) bool {
	key := pathKey(path)
	m.mu.Lock()
	defer m.mu.Unlock()
	_, registered := p.workspaces[key]
	return registered && m.busy[key] != "delete"
}
