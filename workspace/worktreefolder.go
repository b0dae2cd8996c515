package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// A delete removes only what git calls the workspace's worktree. When git
// cannot remove it and the delete removes the folder itself, a folder is
// only removed when the folder and git's records of it still point at
// each other; a folder that a symlink, another repository or a hand edit
// took the place of is left alone, with an error that says so.

// checkNotReplaced refuses a worktree folder that is now a symlink or a
// file: removing through it would reach whatever it names. A folder that
// is gone is fine; git then only forgets the worktree.
func checkNotReplaced(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return &Error{Code: CodeInternal, Message: fmt.Sprintf("cannot check folder %s", path), Err: err}
	case fi.Mode()&fs.ModeSymlink != 0:
		target, _ := os.Readlink(path)
		return Errorf(CodeConflict, "the worktree folder %s was replaced by a symlink to %s, so nothing was removed (neither is the worktree); remove the symlink yourself, then delete again to forget the worktree", path, target)
	case !fi.IsDir():
		return Errorf(CodeConflict, "the worktree folder %s was replaced by a file, so nothing was removed; remove it yourself, then delete again to forget the worktree", path)
	}
	return nil
}

// checkWorktreeFolder checks that path is still the linked worktree git
// registered in commonDir: path is a folder (not a symlink), path/.git is
// a file whose "gitdir:" names an admin folder in <commonDir>/worktrees,
// and that admin folder's gitdir file names path/.git back.
func checkWorktreeFolder(commonDir, path string) error {
	_, err := worktreeAdmin(commonDir, path, path)
	return err
}

// worktreeAdmin checks that folder (a real folder) is the linked worktree
// git registered in commonDir at registered (folder itself, or where it
// was before the delete moved it aside) and returns its admin folder.
func worktreeAdmin(commonDir, folder, registered string) (string, error) {
	if err := checkNotReplaced(folder); err != nil {
		return "", err
	}
	refuse := func(why string) error {
		return Errorf(CodeConflict, "%s is not removed: %s, so it may not be the worktree git registered; remove it yourself if you no longer need it", registered, why)
	}
	dotGit := filepath.Join(folder, ".git")
	fi, err := os.Lstat(dotGit)
	if err != nil || !fi.Mode().IsRegular() {
		return "", refuse(dotGit + " is not a file")
	}
	admin, ok := readPointer(dotGit, "gitdir:")
	if !ok {
		return "", refuse(dotGit + " names no git folder")
	}
	admin = resolveMaybeMissing(absIn(folder, admin))
	if pathKey(filepath.Dir(admin)) != pathKey(filepath.Join(commonDir, "worktrees")) {
		return "", refuse(fmt.Sprintf("%s points at %s, not into %s", dotGit, admin, filepath.Join(commonDir, "worktrees")))
	}
	back, ok := readPointer(filepath.Join(admin, "gitdir"), "")
	if !ok || pathKey(resolveMaybeMissing(absIn(admin, back))) != pathKey(resolveMaybeMissing(filepath.Join(registered, ".git"))) {
		return "", refuse(fmt.Sprintf("git's record %s does not point back at %s", admin, filepath.Join(registered, ".git")))
	}
	return admin, nil
}

// readPointer reads a one-line file holding a path after prefix.
func readPointer(file, prefix string) (string, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", false
	}
	v, ok := strings.CutPrefix(strings.TrimSpace(string(b)), prefix)
	v = strings.TrimSpace(v)
	return v, ok && v != ""
}

// nestedLocked refuses dir when a project or another workspace lies in
// it: removing dir would take them with it. m.mu is held.
func (m *Manager) nestedLocked(dir string) error {
	key := pathKey(dir)
	for _, p := range m.projects {
		if isWithin(pathKey(p.Path), key) {
			return Errorf(CodeConflict, "project %s lives inside %s, so it is not deleted; remove that project first", p.Path, dir)
		}
		for _, list := range []map[string]Workspace{p.workspaces, p.missing} {
			for k, w := range list {
				if k != key && isWithin(k, key) {
					return Errorf(CodeConflict, "workspace %s lives inside %s, so it is not deleted; delete that workspace first", w.Path, dir)
				}
			}
		}
	}
	return nil
}
