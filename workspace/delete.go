package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DeleteOptions say how to delete a workspace.
type DeleteOptions struct {
	// KeepBranch keeps the workspace's branch; by default it is deleted
	// when CodeHydra created it (see DeleteBranch).
	KeepBranch bool
	// DeleteBranch deletes the branch (unless KeepBranch) even when it
	// existed before the workspace: given to Create as an existing
	// branch, or checked out by a worktree made outside the app. Without
	// it such a branch is kept, and the delete says so.
	DeleteBranch bool
	// ExpectHead, when set, is the commit the workspace must be at: once
	// its agent is stopped, and before anything is removed, the delete
	// refuses (CodeConflict, nothing removed) unless the workspace has no
	// uncommitted or untracked change and its HEAD is exactly this commit.
	// A delete after a merge gives the head the merge verified, so that
	// work done since (by the agent, until it stopped) is never lost.
	ExpectHead string
	// Force deletes the workspace although the project's teardown fails
	// (it still runs); without it a failed teardown keeps the workspace,
	// with nothing removed (CodeConflict, ErrTeardownFailed).
	Force bool
}

// removeAttempts is how often a delete tries to remove a worktree folder
// itself when git could not (on Windows a file that a closing program still
// holds goes away a moment later).
const removeAttempts = 4

func removeBackoff(attempt int) time.Duration {
	return time.Duration(attempt) * 100 * time.Millisecond
}

// Delete deletes the workspace at wsPath and returns when done. The steps
// run in the order of DeleteSteps, each announced by a delete-progress
// event: stop the agent; run the project's teardown (Options.Teardowns),
// whose failure keeps the workspace unless o.Force; remove the worktree (exactly its folder, set
// aside first and never followed through a symlink, then git's record of
// it; see removeRegistered); delete the branch unless o.KeepBranch or the
// HEAD is detached (a branch that CodeHydra did not create is kept unless
// o.DeleteBranch); remove the branch's metadata, last and only once the
// branch is gone, and the worktree's own records (MetadataMCPOff). Then it publishes workspace-removed and delete-progress
// with StepDone, whose Note says which branch was kept because it existed
// before the workspace.
//
// A failure publishes delete-failed with the step and the error and leaves
// a state from which a second Delete of the same path finishes the job: a
// worktree whose folder is gone but that git still lists, or a workspace
// whose worktree is gone but whose branch is left, is still accepted. That
// last state is recorded in the project's git folder, so that it survives
// a crash or a kill of the app: the next Load finishes such a delete.
// Delete refuses the project's main checkout (CodeInvalidInput), a path
// that is no workspace (CodeWorkspaceNotFound), a workspace that holds a
// project or another workspace, a worktree folder replaced by a symlink or
// a file, a folder that is not git's worktree (see checkWorktreeFolder),
// and a second delete of a workspace while one runs
// (CodeConflict).
func (m *Manager) Delete(ctx context.Context, wsPath string, o DeleteOptions) error {
	run, err := m.StartDelete(ctx, wsPath, o)
	if err != nil {
		return err
	}
	return run(ctx)
}

// StartDelete checks and reserves the delete of the workspace at wsPath
// now, and returns the work that deletes it; the reservation holds until
// run returns. It refuses what Delete refuses, with the same errors, so a
// caller that must answer before the delete runs (an MCP tool whose agent
// the delete stops) learns of a conflict at once. The caller must call run
// exactly once.
func (m *Manager) StartDelete(ctx context.Context, wsPath string, o DeleteOptions) (run func(context.Context) error, err error) {
	if err := checkRequestPath(wsPath); err != nil {
		return nil, err
	}
	clean := filepath.Clean(wsPath)
	real := resolveMaybeMissing(clean)
	ws, _, err := m.deleteTarget(ctx, real, clean)
	if err != nil {
		return nil, err
	}
	keys := []string{pathKey(ws.Path)}
	if pathKey(real) != keys[0] {
		keys = append(keys, pathKey(real))
	}
	release, err := m.reserve("delete", keys...)
	if err != nil {
		return nil, err
	}
	// Another delete may have finished between the look-up and the
	// reservation.
	ws, p, err := m.findForDelete(real, clean)
	if err == nil && p == nil {
		err = Errorf(CodeWorkspaceNotFound, "no workspace at %s; nothing was deleted", clean)
	}
	if err == nil {
		// Refused before the agent is stopped or anything is removed: a
		// folder that a symlink, a file, another repository or a hand edit
		// took the place of is not deleted.
		err = checkFolderBeforeDelete(p.commonDir, ws.Path)
	}
	if err != nil {
		release()
		return nil, err
	}
	return func(ctx context.Context) error {
		defer release()
		return m.runDelete(ctx, p, ws, o)
	}, nil
}

// deleteTarget finds the workspace a delete is about, including worktrees
// whose folder is gone and workspaces a failed delete left half done.
func (m *Manager) deleteTarget(ctx context.Context, real, clean string) (Workspace, *project, error) {
	ws, p, err := m.findForDelete(real, clean)
	if err != nil || p != nil {
		return ws, p, err
	}
	// Git may know a worktree that the watcher has not seen yet.
	for _, p := range m.projectList() {
		m.refresh(ctx, p, true)
	}
	ws, p, err = m.findForDelete(real, clean)
	if err != nil || p != nil {
		return ws, p, err
	}
	return Workspace{}, nil, Errorf(CodeWorkspaceNotFound, "no workspace at %s; nothing was deleted", clean)
}

// findForDelete finds the workspace registered at clean, else at real
// (clean with its symlinks resolved): a worktree folder replaced by a
// symlink is deleted as itself, never as the folder the symlink names.
func (m *Manager) findForDelete(real, clean string) (Workspace, *project, error) {
	keys := []string{pathKey(registeredPath(clean)), pathKey(real)}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.projects {
		for _, k := range keys {
			if k == pathKey(p.Path) {
				return Workspace{}, nil, Errorf(CodeInvalidInput, "%s is the main checkout of project %s, not a workspace; it is never deleted (removing the project keeps its files)", clean, p.Name)
			}
		}
	}
	for _, k := range keys {
		var ws Workspace
		var owner *project
		for _, p := range m.projects {
			if w, ok := p.workspaces[k]; ok {
				ws, owner = w, p
			} else if w, ok := p.missing[k]; ok {
				ws, owner = w, p
			} else if w, ok := m.tombstones[k]; ok && pathKey(w.ProjectPath) == pathKey(p.Path) {
				ws, owner = w, p
			}
			if owner != nil {
				break
			}
		}
		if owner == nil {
			continue
		}
		if err := m.nestedLocked(ws.Path); err != nil {
			return Workspace{}, nil, err
		}
		return ws, owner, nil
	}
	return Workspace{}, nil, nil
}

// deletion is one delete in progress: its workspace, the step it is at,
// and whether its record (pending.go) is written.
type deletion struct {
	m        *Manager
	p        *project
	ws       Workspace
	o        DeleteOptions
	step     DeleteStep
	recorded bool
	// note says what the delete kept on purpose (Event.Note).
	note string
}

// runDelete runs the steps of a reserved delete (see Delete).
func (m *Manager) runDelete(ctx context.Context, p *project, ws Workspace, o DeleteOptions) error {
	d := &deletion{m: m, p: p, ws: ws, o: o}
	d.progress(StepStopAgent)
	entry, registered, err := d.stopAgent(ctx)
	if err != nil {
		return d.fail(err)
	}
	if err := d.checkExpectedHead(ctx, registered); err != nil {
		return d.fail(err)
	}

	d.progress(StepTeardown)
	if err := d.teardown(ctx, registered); err != nil {
		return d.fail(err)
	}

	d.progress(StepRemoveWorktree)
	if err := d.removeWorktree(ctx, entry, registered); err != nil {
		return d.fail(err)
	}

	d.progress(StepDeleteBranch)
	branchGone, err := d.deleteBranch(ctx)
	if err != nil {
		return d.failWithoutWorktree(err)
	}

	// The metadata belongs to the branch: it goes only with it, and only
	// after it, so that what a failure leaves still has its metadata.
	d.progress(StepRemoveMetadata)
	if branchGone {
		if err := m.removeMetadata(ctx, p, d.ws.Branch); err != nil {
			return d.failWithoutWorktree(classify(err, CodeInternal, "cannot remove the metadata of branch %s", d.ws.Branch))
		}
	}
	if err := m.removeWorktreeRecords(ctx, p, d.ws.Path); err != nil {
		return d.failWithoutWorktree(classify(err, CodeInternal, "cannot remove the records of worktree %s", d.ws.Path))
	}
	d.done()
	return nil
}

// failWithoutWorktree ends with err a delete whose worktree is gone, so the
// workspace is; the tombstone and the record let a second Delete of the
// path, or the next launch, finish the job.
func (d *deletion) failWithoutWorktree(err error) error {
	d.m.Publish(Event{Kind: EventWorkspaceRemoved, ProjectPath: d.p.Path, Workspace: d.ws})
	return d.fail(err)
}

// progress announces step s.
func (d *deletion) progress(s DeleteStep) {
	d.step = s
	d.m.Publish(Event{Kind: EventDeleteProgress, ProjectPath: d.p.Path, Workspace: d.ws, Step: s})
}

// fail ends the delete with err at its current step.
func (d *deletion) fail(err error) error {
	if _, lerr := os.Lstat(d.ws.Path); d.recorded && lerr == nil {
		// The worktree is still there: nothing is half done, and a
		// later launch must not finish a delete the user saw fail.
		if rerr := removePending(d.p.commonDir, d.ws.Path); rerr != nil {
			d.m.log.Warn("cannot drop a delete record", "path", d.ws.Path, "err", rerr)
		}
	}
	d.m.log.Warn("delete workspace failed", "path", d.ws.Path, "step", string(d.step), "err", err)
	d.m.Publish(Event{Kind: EventDeleteFailed, ProjectPath: d.p.Path, Workspace: d.ws, Step: d.step, Err: err.Error()})
	return err
}

// stopAgent is the first step: it takes the workspace's branch from what
// git says now (it wins over what discovery saw last: the branch of a
// worktree can change under the app), returning git's entry for the
// worktree, if it lists one, and stops the agent.
func (d *deletion) stopAgent(ctx context.Context) (entry worktreeEntry, registered bool, err error) {
	entries, err := d.m.listWorktrees(ctx, d.p)
	if err != nil {
		return entry, false, classify(err, CodeInternal, "cannot list the worktrees of %s", d.p.Path)
	}
	entry, registered = findEntry(entries, d.ws.Path)
	if registered {
		d.ws.Branch, d.ws.Detached = entry.Branch, entry.Branch == ""
	}
	if a := d.m.agents; a != nil {
		if err := a.StopAgent(ctx, d.ws.Path); err != nil {
			return entry, registered, &Error{Code: CodeInternal, Message: fmt.Sprintf("cannot stop the agent of %s; try the delete again", d.ws.Path), Err: err}
		}
	}
	return entry, registered, nil
}

// checkExpectedHead refuses the delete, with nothing removed, when
// o.ExpectHead is set and the workspace, its agent stopped, is not at
// that commit or has uncommitted or untracked files.
func (d *deletion) checkExpectedHead(ctx context.Context, registered bool) error {
	want := d.o.ExpectHead
	if want == "" {
		return nil
	}
	if !registered {
		return Errorf(CodeConflict, "%s is no longer a git worktree, so it cannot be checked to be at %s; it was not deleted", d.ws.Path, short(want))
	}
	head, err := d.m.commitOf(ctx, d.ws.Path, "HEAD")
	if err != nil {
		return classify(err, CodeInternal, "cannot read the HEAD of %s; it was not deleted", d.ws.Path)
	}
	if head != want {
		return Errorf(CodeConflict, "%s is at commit %s now, not at %s, which was checked; it was not deleted, so that its new commits are kept", d.ws.Path, short(head), short(want))
	}
	out, err := d.m.git.runEnv(ctx, d.ws.Path, []string{"GIT_OPTIONAL_LOCKS=0"}, "status", "--porcelain=v1", "-z", "--untracked-files=normal")
	if err != nil {
		return classify(err, CodeInternal, "cannot list the changes of %s; it was not deleted", d.ws.Path)
	}
	if c := parsePorcelainZ(out); len(c.Changed)+len(c.Untracked) > 0 {
		return Errorf(CodeConflict, "%s has uncommitted or untracked files (%s); it was not deleted, so that they are kept", d.ws.Path, nameList(append(c.Changed, c.Untracked...)))
	}
	return nil
}

// removeWorktree records the delete, removes the worktree (entry, when
// git lists it) and forgets the workspace, keeping a tombstone until the
// branch is gone.
func (d *deletion) removeWorktree(ctx context.Context, entry worktreeEntry, registered bool) error {
	// From here on the delete may leave a branch without a worktree,
	// which no listing shows; the record lets the next launch finish it.
	rec := pendingDelete{Path: d.ws.Path, Branch: d.ws.Branch, KeepBranch: d.o.KeepBranch, DeleteBranch: d.o.DeleteBranch}
	if prior, ok := readPendingOf(d.p.commonDir, d.ws.Path); ok {
		rec.Removing = prior.Removing
	}
	if err := writePending(d.p.commonDir, rec); err != nil {
		return &Error{Code: CodeInternal, Message: fmt.Sprintf("cannot record the delete in the git folder %s; check that it is writable and delete again", d.p.commonDir), Err: err}
	}
	d.recorded = true
	if registered {
		mark := func() error {
			rec.Removing = true
			return writePending(d.p.commonDir, rec)
		}
		if err := d.m.removeWorktree(ctx, d.p, d.ws, entry, rec.Removing, mark); err != nil {
			return err
		}
	} else if _, err := os.Lstat(d.ws.Path); err == nil {
		return Errorf(CodeConflict, "%s is no longer a git worktree, so it is not deleted; remove the folder yourself if you no longer need it", d.ws.Path)
	}
	key := pathKey(d.ws.Path)
	d.m.mu.Lock()
	delete(d.p.workspaces, key)
	delete(d.p.missing, key)
	d.p.gen++
	d.m.tombstones[key] = d.ws
	d.m.mu.Unlock()
	// Its record went with the worktree's admin folder.
	d.m.ports.release(d.ws.Path)
	return nil
}

// done ends a delete that succeeded.
func (d *deletion) done() {
	d.m.mu.Lock()
	delete(d.m.tombstones, pathKey(d.ws.Path))
	d.m.mu.Unlock()
	if err := removePending(d.p.commonDir, d.ws.Path); err != nil {
		d.m.log.Warn("cannot drop a delete record; the next launch drops it", "path", d.ws.Path, "err", err)
	}
	d.m.log.Info("workspace deleted", "path", d.ws.Path, "branch", d.ws.Branch, "keepBranch", d.o.KeepBranch, "note", d.note)
	d.m.Publish(Event{Kind: EventWorkspaceRemoved, ProjectPath: d.p.Path, Workspace: d.ws})
	d.step = StepDone
	d.m.Publish(Event{Kind: EventDeleteProgress, ProjectPath: d.p.Path, Workspace: d.ws, Step: StepDone, Note: d.note})
}

// deleteBranch deletes the workspace's branch if CodeHydra created it or
// the caller asked for it; otherwise it keeps the branch and notes why. It
// reports whether the branch is gone, deleted now or before (by an earlier
// run of this delete that was cut short, or by hand).
func (d *deletion) deleteBranch(ctx context.Context) (gone bool, err error) {
	b := d.ws.Branch
	if b == "" || d.o.KeepBranch {
		return false, nil
	}
	ok, err := d.m.refExists(ctx, d.p.Path, "refs/heads/"+b)
	if err != nil {
		return false, classify(err, CodeInternal, "cannot look up branch %s", b)
	}
	if !ok {
		return true, nil
	}
	if !d.o.DeleteBranch {
		created, err := d.m.createdBranch(ctx, d.p, b)
		if err != nil {
			return false, classify(err, CodeInternal, "cannot read whether CodeHydra created branch %s; try the delete again", b)
		}
		if !created {
			d.addNote(fmt.Sprintf("kept branch %s: it existed before the workspace", b))
			return false, nil
		}
	}
	return true, d.m.deleteBranch(ctx, d.p, b)
}

// removeWorktree removes the registered worktree e (folder ws.Path); see
// removeRegistered for removing and mark.
func (m *Manager) removeWorktree(ctx context.Context, p *project, ws Workspace, e worktreeEntry, removing bool, mark func() error) error {
	if e.Locked {
		reason := ""
		if e.LockReason != "" {
			reason = " (" + e.LockReason + ")"
		}
		return Errorf(CodeConflict, "worktree %s is locked%s; unlock it with `git worktree unlock %s`, then delete again", ws.Path, reason, ws.Path)
	}
	if err := checkNotReplaced(ws.Path); err != nil {
		return err
	}
	// The registration's nonce tells this worktree from one made again at
	// its path, by the user, once its folder is gone.
	nonce, _ := ReadTokenNonce(ws.Path)
	m.step(stepBeforeRemoval, ws.Path)
	if err := m.removeRegistered(ctx, p, ws.Path, removing, mark); err != nil {
		return err
	}
	m.step(stepAfterRemoval, ws.Path)
	entries, err := m.listWorktrees(ctx, p)
	if err != nil {
		return classify(err, CodeInternal, "cannot list the worktrees of %s", p.Path)
	}
	if _, still := findEntry(entries, ws.Path); still {
		if now, _ := ReadTokenNonce(ws.Path); nonce != "" && now != nonce {
			m.log.Info("a new worktree was made at the path of the deleted one; it is a workspace of its own", "path", ws.Path)
			return nil
		}
		return Errorf(CodeInternal, "git still lists worktree %s after removing it; run `git worktree prune` in %s and delete again", ws.Path, p.Path)
	}
	if _, err := os.Lstat(ws.Path); err == nil {
		return Errorf(CodeInternal, "folder %s is still there after removing the worktree; close programs that use it and delete again", ws.Path)
	}
	return nil
}

// The steps of a worktree's removal that Manager.deleteStep is told.
const (
	stepBeforeRemoval = "before worktree removal" // checked, nothing moved
	stepSetAside      = "worktree set aside"      // renamed aside and checked there
	stepFolderRemoved = "worktree folder removed" // git's record still there
	stepAfterRemoval  = "after worktree removal"
)

// removeRegistered removes the worktree that git registered at path: its
// folder and its admin folder in the git common dir, as `git worktree
// remove --force` does. Not through git, which finds the worktree by the
// real path of its argument: a symlink swapped in for the folder after the
// checks would have it remove the worktree the link points at, another
// workspace and its changes. The folder is first renamed aside (rename
// acts on the name, never on a link's target), checked there to be a real
// folder and this very worktree (else put back, and nothing removed), and
// removed through an os.Root of its parent, which follows no link.
//
// Once checked, mark records that the removal began (so the delete's
// record says so). A removal killed after that leaves a part of the
// folder, perhaps without its .git, which cannot be checked again:
// removing says that an earlier run checked it, and it is removed.
func (m *Manager) removeRegistered(ctx context.Context, p *project, path string, removing bool, mark func() error) error {
	p.worktreesMu.Lock()
	defer p.worktreesMu.Unlock()
	staged := stagedFolder(path)
	_, serr := os.Lstat(staged)
	_, perr := os.Lstat(path)
	if serr == nil && perr == nil {
		return Errorf(CodeConflict, "%s is there, and so is %s, which an earlier delete of it set aside; nothing was removed: look at both, remove what you no longer need yourself, and delete again", path, staged)
	}
	err := m.renameAside(ctx, path, staged)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Gone already (by hand, or an earlier run of this delete renamed
		// it aside and stopped): what is left is its record, and maybe the
		// folder set aside, removed only if it is this worktree.
		if fi, err := os.Lstat(staged); err == nil {
			// Checked by the run that was cut short, when it got as far
			// as removing it; otherwise checked now.
			checked := removing && fi.IsDir()
			if _, err := worktreeAdmin(p.commonDir, staged, path); !checked && err != nil {
				return Errorf(CodeConflict, "%s, set aside by an earlier delete of %s, is not that worktree any more, so it is not removed: look at it and remove it yourself, then delete again", staged, path)
			}
			if err := m.removeIn(ctx, staged); err != nil {
				return err
			}
		}
		if admin, ok := adminOf(p.commonDir, path); ok {
			return m.removeAdmin(ctx, admin, path)
		}
		return nil
	case err != nil:
		return err
	}
	admin, err := worktreeAdmin(p.commonDir, staged, path)
	if err != nil {
		if rerr := m.renameAside(ctx, staged, path); rerr != nil {
			m.log.Warn("cannot put a worktree folder back after refusing to delete it", "path", path, "asideAt", staged, "err", rerr)
			return Errorf(CodeConflict, "%s was not removed: %v; and it could not be put back from %s, where it is now: move it back yourself", path, err, staged)
		}
		return err
	}
	if err := mark(); err != nil {
		if rerr := m.renameAside(ctx, staged, path); rerr != nil {
			return Errorf(CodeConflict, "%s was not removed: cannot record the removal (%v); and it could not be put back from %s, where it is now: move it back yourself", path, err, staged)
		}
		return &Error{Code: CodeInternal, Message: fmt.Sprintf("cannot record the delete of %s in the git folder %s; check that it is writable and delete again", path, p.commonDir), Err: err}
	}
	m.step(stepSetAside, path)
	if err := m.removeIn(ctx, staged); err != nil {
		return err
	}
	m.step(stepFolderRemoved, path)
	return m.removeAdmin(ctx, admin, path)
}

// removeAdmin removes git's admin folder admin of the worktree that was at
// path, trying again a few times: on Windows a git reading its files (the
// status cache's, an agent's) holds them a moment ("Sharing violation").
func (m *Manager) removeAdmin(ctx context.Context, admin, path string) error {
	err := m.retry(ctx, func() error { return os.RemoveAll(admin) }, nil)
	if err == nil || ctx.Err() != nil {
		return err
	}
	return &Error{Code: CodeInternal, Message: fmt.Sprintf("cannot remove git's record %s of worktree %s; try the delete again", admin, path), Err: err}
}

// step tells m.deleteStep, if any, that the removal of the worktree at
// path reached step.
func (m *Manager) step(step, path string) {
	if m.deleteStep != nil {
		m.deleteStep(step, path)
	}
}

// stagedFolder is where the delete sets the worktree folder at path
// aside, beside it: a name no workspace has (it starts with a dot).
func stagedFolder(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".codehydra-deleting")
}

// renameAside renames path to staged (or back), trying again a few times
// (on Windows a program closing a file in it holds the folder a moment).
func (m *Manager) renameAside(ctx context.Context, path, staged string) error {
	err := m.retry(ctx, func() error { return os.Rename(path, staged) }, func(err error) bool { return errors.Is(err, fs.ErrNotExist) })
	if err == nil || errors.Is(err, fs.ErrNotExist) || ctx.Err() != nil {
		return err
	}
	return &Error{Code: CodeConflict, Message: fmt.Sprintf("cannot move %s to %s; close programs that use files in it and delete again", path, staged), Err: err}
}

// removeIn removes the folder dir (a real folder, or nothing) through an
// os.Root of its parent, which follows no symlink at any depth.
func (m *Manager) removeIn(ctx context.Context, dir string) error {
	root, err := os.OpenRoot(filepath.Dir(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil // its parent is gone, and it with it
	}
	if err != nil {
		return &Error{Code: CodeInternal, Message: fmt.Sprintf("cannot open folder %s", filepath.Dir(dir)), Err: err}
	}
	defer root.Close()
	err = m.retry(ctx, func() error { return root.RemoveAll(filepath.Base(dir)) }, nil)
	if err == nil || ctx.Err() != nil {
		return err
	}
	return &Error{Code: CodeInternal, Message: fmt.Sprintf("cannot remove folder %s; close programs that use files in it and delete again", dir), Err: err}
}

// retry runs op up to removeAttempts times, with removeBackoff between,
// until it succeeds or final (when set) says its error is final; it
// returns op's last error, or ctx's when the wait was cut short. On
// Windows a program closing a file in a folder holds it a moment.
func (m *Manager) retry(ctx context.Context, op func() error, final func(error) bool) error {
	var err error
	for attempt := range removeAttempts {
		if attempt > 0 {
			if serr := m.sleep(ctx, removeBackoff(attempt)); serr != nil {
				return serr
			}
		}
		if err = op(); err == nil || final != nil && final(err) {
			return err
		}
	}
	return err
}

// adminOf finds git's admin folder (<commonDir>/worktrees/<id>) of the
// worktree registered at path, by its gitdir record.
func adminOf(commonDir, path string) (string, bool) {
	dir := filepath.Join(commonDir, "worktrees")
	ids, err := os.ReadDir(dir)
	if err != nil {
		return "", false
	}
	want := pathKey(resolveMaybeMissing(filepath.Join(path, ".git")))
	for _, id := range ids {
		admin := filepath.Join(dir, id.Name())
		if back, ok := readPointer(filepath.Join(admin, "gitdir"), ""); ok && id.IsDir() && pathKey(resolveMaybeMissing(absIn(admin, back))) == want {
			return admin, true
		}
	}
	return "", false
}

// deleteBranch deletes a local branch; a branch that no longer exists is
// no error.
func (m *Manager) deleteBranch(ctx context.Context, p *project, branch string) error {
	ok, err := m.refExists(ctx, p.Path, "refs/heads/"+branch)
	if err != nil {
		return classify(err, CodeInternal, "cannot look up branch %s", branch)
	}
	if !ok {
		return nil
	}
	// git takes a branch's reflog with it: its last commit stays
	// reachable, with a reflog entry that says what happened, under
	// refs/codehydra/deleted/<branch>/<time>.
	keep := "refs/codehydra/deleted/" + branch + "/" + m.now().UTC().Format("20060102T150405.000000000Z")
	if _, err := m.git.run(ctx, p.Path, "update-ref", "--create-reflog", "-m", "codehydra: branch "+branch+" deleted with its workspace",
		keep, "refs/heads/"+branch, ""); err != nil {
		return classify(err, CodeInternal, "cannot keep the last commit of branch %s before deleting it; try the delete again", branch)
	}
	if _, err := m.changeWorktrees(ctx, p, "branch", "-D", "--", branch); err != nil {
		if strings.Contains(stderrOf(err), "checked out at") {
			return &Error{Code: CodeConflict, Message: fmt.Sprintf("branch %s is checked out elsewhere, so it was kept; delete it yourself once it is free", branch), Err: err}
		}
		return classify(err, CodeInternal, "cannot delete branch %s; try the delete again", branch)
	}
	return nil
}

// checkFolderBeforeDelete is the check a delete makes before any step
// runs: a worktree folder that is gone is fine (git then only forgets the
// worktree); one that is there must be git's worktree (checkWorktreeFolder).
// Refusing only when git fails to remove it would come after the agent
// was stopped and the user's work in it interrupted.
func checkFolderBeforeDelete(commonDir, path string) error {
	if err := checkNotReplaced(path); err != nil {
		return err
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return checkWorktreeFolder(commonDir, path)
}
