package workspace

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
)

// A delete that removed a worktree but not yet its branch leaves a state no
// git command shows as a workspace any more. So that a crash or a kill at
// that moment does not leave the branch behind for good, a delete records
// what it is doing in the project's git folder just before it removes the
// worktree, and removes the record when it is done. Load finishes the
// deletes whose records it finds (see finishPendingDeletes).

// pendingDelete is the record of a delete in progress.
type pendingDelete struct {
	Path         string `json:"path"`
	Branch       string `json:"branch,omitempty"`
	KeepBranch   bool   `json:"keepBranch,omitempty"`
	DeleteBranch bool   `json:"deleteBranch,omitempty"`
	// Removing says that the worktree's folder was set aside, checked to
	// be the worktree, and is being removed: what is left of it at the
	// set-aside name (its .git perhaps gone already) is removed without
	// the check.
	Removing bool `json:"removing,omitempty"`
}

// readPendingOf returns the record of the delete of wsPath, if any.
func readPendingOf(commonDir, wsPath string) (pendingDelete, bool) {
	b, err := os.ReadFile(pendingFile(commonDir, wsPath))
	var d pendingDelete
	if err != nil || json.Unmarshal(b, &d) != nil || pathKey(d.Path) != pathKey(wsPath) {
		return pendingDelete{}, false
	}
	return d, true
}

// pendingDir is the folder of the records, under the git common dir.
const pendingDir = "codehydra-pending-deletes"

func pendingFile(commonDir, wsPath string) string { return recordFile(commonDir, pendingDir, wsPath) }

func writePending(commonDir string, d pendingDelete) error {
	return writeRecord(commonDir, pendingDir, d.Path, d)
}

func removePending(commonDir, wsPath string) error {
	return removeRecord(commonDir, pendingDir, wsPath)
}

// readPending returns the records of deletes in progress in the project;
// unreadable records are removed, since nothing can be done with them.
func readPending(commonDir string) ([]pendingDelete, error) {
	return readRecords(commonDir, pendingDir, func(d pendingDelete) string { return d.Path }, func(pendingDelete) bool { return true })
}

// finishPendingDeletes finishes the deletes that an earlier run of the app
// did not (it was killed, or the last step failed). A delete whose worktree
// folder is gone is finished: what is left of it (the worktree's
// registration, the metadata, the branch unless it was to be kept) is
// removed, as the user asked. A delete whose folder is still there stopped
// before removing anything the user could lose; its record is dropped and
// the workspace stays, to be deleted again if still wanted. So is a delete
// whose branch is checked out again somewhere. A delete that fails again is
// logged, stays recorded for the next launch, and a second Delete of its
// path can still finish it.
func (m *Manager) finishPendingDeletes(ctx context.Context) error {
	for _, p := range m.projectList() {
		recs, err := readPending(p.commonDir)
		if err != nil {
			m.log.Warn("cannot read the deletes in progress", "project", p.Path, "err", err)
			continue
		}
		if len(recs) == 0 {
			continue
		}
		entries, err := m.listWorktrees(ctx, p)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			m.log.Warn("cannot list the worktrees of project", "path", p.Path, "err", err)
			continue
		}
		for _, d := range recs {
			if reason := keepReason(d, entries); reason != "" {
				m.log.Info("an interrupted delete is not finished", "path", d.Path, "why", reason)
				if err := removePending(p.commonDir, d.Path); err != nil {
					m.log.Warn("cannot drop a delete record", "path", d.Path, "err", err)
				}
				continue
			}
			key := pathKey(d.Path)
			m.mu.Lock()
			_, found := p.workspaces[key]
			_, missing := p.missing[key]
			if !found && !missing {
				name := d.Branch
				if name == "" {
					name = filepath.Base(d.Path)
				}
				m.tombstones[key] = Workspace{Name: name, Branch: d.Branch, Path: d.Path, ProjectPath: p.Path, Detached: d.Branch == ""}
			}
			m.mu.Unlock()
			if err := m.Delete(ctx, d.Path, DeleteOptions{KeepBranch: d.KeepBranch, DeleteBranch: d.DeleteBranch}); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				m.log.Warn("cannot finish a delete that an earlier run left unfinished; it is tried again at the next launch",
					"path", d.Path, "branch", d.Branch, "err", err)
				continue
			}
			m.log.Info("finished a delete that an earlier run left unfinished", "path", d.Path, "branch", d.Branch)
		}
	}
	return nil
}

// keepReason says why the recorded delete d must not be finished, "" when
// it may.
func keepReason(d pendingDelete, entries []worktreeEntry) string {
	if _, err := os.Lstat(d.Path); err == nil {
		return "its worktree folder is still there"
	}
	if d.Branch != "" {
		for _, e := range entries {
			if e.Branch == d.Branch && pathKey(registeredPath(e.Path)) != pathKey(d.Path) {
				return "its branch is checked out at " + e.Path
			}
		}
	}
	return ""
}
