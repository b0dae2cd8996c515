package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"codehydra/internal/paths"
)

// CreateOptions say which workspace to create.
type CreateOptions struct {
	// ProjectPath is the project's path.
	ProjectPath string
	// Name is the workspace and branch name (see ValidateName).
	Name string
	// Base is the branch or commit a new branch starts from; "" means
	// DefaultBase. It is recorded as the "base" metadata. It does not
	// apply to a branch that exists already (see Create).
	Base string
	// CreatedBy is the path of the workspace whose agent asks for the
	// create ("" for the user). It is recorded as the "createdby" metadata
	// (MetadataCreatedBy), which only Create writes.
	CreatedBy string
}

// undoTimeout bounds the clean-up after a failed create, which runs even
// when the caller's context has ended.
const undoTimeout = 30 * time.Second

// worktreePath is where Create puts the worktree of branch name for the
// project at projectPath (absolute, resolved):
// <root>/<base name of project>-<hex sha256(projectPath)[:8]>/workspaces/<name, "/" as "%">.
func worktreePath(root, projectPath, name string) string {
	sum := sha256.Sum256([]byte(projectPath))
	dir := filepath.Base(projectPath) + "-" + hex.EncodeToString(sum[:])[:8]
	return filepath.Join(root, dir, "workspaces", strings.ReplaceAll(name, "/", "%"))
}

func (m *Manager) worktreeRoot() (string, error) {
	root := m.opts.WorktreeRoot
	if root == "" {
		root = paths.ProjectsDir()
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("worktree root %s: %w", root, err)
	}
	return abs, nil
}

// Create makes a workspace: a worktree of the project on branch o.Name,
// under the worktree root. A branch that exists and is checked out nowhere
// is reused as it is, with its metadata and its recorded base (o.Base does
// not apply to it); the returned workspace says so (BranchReused, Note).
// Otherwise a new branch starts at o.Base (default DefaultBase), which
// must exist, and the base is recorded as metadata. A
// branch checked out in the main checkout or in another worktree, a create
// of the same name already running, and a non-empty folder at the target
// are CodeConflict. On failure Create undoes what it made itself — the
// branch and the folder only if this call created them. It publishes
// workspace-added.
func (m *Manager) Create(ctx context.Context, o CreateOptions) (Workspace, error) {
	p, target, err := m.checkCreate(o)
	if err != nil {
		return Workspace{}, err
	}
	targetKey := pathKey(resolveMaybeMissing(target))
	release, err := m.reserve("create", branchKey(p.Path, o.Name), targetKey)
	if err != nil {
		return Workspace{}, err
	}
	defer release()

	if err := m.checkBranchFree(ctx, p, o.Name, target, targetKey); err != nil {
		return Workspace{}, err
	}
	base, branchExisted, err := m.createBase(ctx, p, o)
	if err != nil {
		return Workspace{}, err
	}
	note := ""
	if branchExisted {
		note = m.reuseNote(ctx, p, o)
	}
	folderExisted, err := checkTarget(target)
	if err != nil {
		return Workspace{}, err
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return Workspace{}, &Error{Code: CodeInternal, Message: fmt.Sprintf("cannot create folder %s; check the worktree root setting and its permissions", filepath.Dir(target)), Err: err}
	}
	real, head, err := m.addWorktree(ctx, p, o, target, base, branchExisted)
	if err != nil {
		m.undoCreate(ctx, p, target, o.Name, folderExisted, branchExisted, stderrOf(err))
		m.log.Warn("create workspace failed", "project", p.Path, "name", o.Name, "err", err)
		return Workspace{}, createError(err, p, o.Name)
	}

	ws := Workspace{Name: o.Name, Branch: o.Name, Path: real, ProjectPath: p.Path, Head: head}
	// Recorded before the workspace is announced: its agent and setup,
	// started on the event, get the block.
	m.ports.assign(real)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.projects[pathKey(p.Path)] == p {
		p.workspaces[pathKey(real)] = ws
		p.gen++
	} else {
		m.ports.release(real)
	}
	// What the workspace is stays in the registry; how it was made goes
	// to the caller and the event only.
	ws.BranchReused, ws.Note = branchExisted, note
	m.log.Info("workspace created", "path", real, "branch", o.Name, "base", base, "branchReused", branchExisted)
	m.Publish(Event{Kind: EventWorkspaceAdded, ProjectPath: p.Path, Workspace: ws, Created: true})
	return ws, nil
}

// checkCreate checks what needs no git in o and returns its project and
// the folder the worktree goes to.
func (m *Manager) checkCreate(o CreateOptions) (p *project, target string, err error) {
	if err := ValidateName(o.Name); err != nil {
		return nil, "", err
	}
	p, err = m.lookupProject(o.ProjectPath)
	if err != nil {
		return nil, "", err
	}
	if o.Base != "" {
		if err := validateBase(o.Base); err != nil {
			return nil, "", err
		}
	}
	root, err := m.worktreeRoot()
	if err != nil {
		return nil, "", &Error{Code: CodeInternal, Message: "cannot find the worktree root; check the worktreeRoot setting", Err: err}
	}
	return p, worktreePath(root, p.Path, o.Name), nil
}

// checkBranchFree refuses a branch name checked out in p (in the main
// checkout or a worktree) and a target that is already a worktree.
func (m *Manager) checkBranchFree(ctx context.Context, p *project, name, target, targetKey string) error {
	entries, err := m.listWorktrees(ctx, p)
	if err != nil {
		return classify(err, CodeInternal, "cannot list the worktrees of %s", p.Path)
	}
	for i, e := range entries {
		switch {
		case e.Branch == name && i == 0:
			return Errorf(CodeConflict, "branch %s is checked out in the project's main checkout %s; switch the main checkout to another branch or choose another name", name, e.Path)
		case e.Branch == name:
			return Errorf(CodeConflict, "a workspace on branch %s already exists at %s; use it or choose another name", name, e.Path)
		case pathKey(resolveMaybeMissing(e.Path)) == targetKey:
			return Errorf(CodeConflict, "%s is already a worktree; delete it or choose another name", target)
		}
	}
	return nil
}

// createBase returns the base of the workspace o asks for and reports
// whether branch o.Name exists already. A new branch starts at o.Base,
// which must exist, else at DefaultBase. An existing branch is not moved,
// so o.Base does not apply to it: its base is the one recorded, "" when
// none is (then Metadata reports DefaultBase, as for a worktree made
// outside the app).
func (m *Manager) createBase(ctx context.Context, p *project, o CreateOptions) (base string, branchExisted bool, err error) {
	branchExisted, err = m.refExists(ctx, p.Path, "refs/heads/"+o.Name)
	if err != nil {
		return "", false, classify(err, CodeInternal, "cannot look up branch %s", o.Name)
	}
	if branchExisted {
		return m.recordedBase(ctx, p, o.Name), true, nil
	}
	base = o.Base
	if base == "" {
		base, err = m.defaultBase(ctx, p)
		return base, false, err
	}
	if _, err := m.git.run(ctx, p.Path, "rev-parse", "--verify", "-q", "--end-of-options", base+"^{commit}"); err != nil {
		if ctx.Err() != nil {
			return "", false, err
		}
		return "", false, Errorf(CodeInvalidInput, "base %q does not exist in %s; give an existing branch, tag or commit", base, p.Path)
	}
	return base, false, nil
}

// recordedBase is the "base" metadata of branch when it holds a valid
// base, else "".
func (m *Manager) recordedBase(ctx context.Context, p *project, branch string) string {
	if b, _ := m.configGet(ctx, p, metadataVar(branch, "base")); validateBase(b) == nil {
		return b
	}
	return ""
}

// reuseNote says that Create reuses the existing branch o.Name, with which
// base, and that o.Base, when given, did not apply.
func (m *Manager) reuseNote(ctx context.Context, p *project, o CreateOptions) string {
	base := m.recordedBase(ctx, p, o.Name)
	note := fmt.Sprintf("branch %s already existed and is reused as it is, with its metadata and its recorded base %s", o.Name, base)
	if base == "" {
		base = m.baseOf(ctx, p, o.Name)
		note = fmt.Sprintf("branch %s already existed and is reused as it is, with its metadata; it has no recorded base, so its base is the project's default %s", o.Name, base)
	}
	if o.Base != "" && o.Base != base {
		note += fmt.Sprintf("; the base %s that was asked for does not apply to an existing branch and was not used (set the \"base\" metadata to change it)", o.Base)
	}
	return note
}

// addWorktree adds the worktree at target on branch name (made from base
// unless branchExisted), records base as its metadata unless the branch
// existed (its own stays), and returns the worktree's resolved path and
// HEAD commit.
func (m *Manager) addWorktree(ctx context.Context, p *project, o CreateOptions, target, base string, branchExisted bool) (real, head string, err error) {
	name := o.Name
	// "--" (and -b taking the next word whole) keeps a name, a path or a
	// base from reading as an option.
	args := []string{"worktree", "add", "--", target, name}
	if !branchExisted {
		args = []string{"worktree", "add", "--no-track", "-b", name, "--", target, base}
	}
	if _, err := m.changeWorktrees(ctx, p, args...); err != nil {
		return "", "", err
	}
	if !branchExisted {
		if err := m.configSet(ctx, p, metadataVar(name, "base"), base); err != nil {
			return "", "", err
		}
	}
	if err := m.recordCreatedBranch(ctx, p, name, !branchExisted); err != nil {
		return "", "", err
	}
	if err := m.recordCreator(ctx, p, name, o.CreatedBy); err != nil {
		return "", "", err
	}
	if real, err = filepath.EvalSymlinks(target); err != nil {
		return "", "", err
	}
	out, err := m.git.run(ctx, real, "rev-parse", "HEAD")
	if err != nil {
		return "", "", err
	}
	return real, strings.TrimSpace(out), nil
}

// createError turns the failure of adding worktree name to p into what
// the caller is told.
func createError(err error, p *project, name string) error {
	stderr := stderrOf(err)
	_, lockErr := lockHeld(err)
	switch {
	case lockErr:
		// classify below names the lock file.
	case strings.Contains(stderr, "already checked out"), strings.Contains(stderr, "already used by worktree"):
		return &Error{Code: CodeConflict, Message: fmt.Sprintf("branch %s is already checked out in another worktree; choose another name", name), Err: err}
	case strings.Contains(stderr, "already exists"):
		return &Error{Code: CodeConflict, Message: fmt.Sprintf("cannot create workspace %s: a branch or folder of that name appeared meanwhile; choose another name", name), Err: err}
	case strings.Contains(stderr, "cannot lock ref") && strings.Contains(stderr, "exists"):
		return &Error{Code: CodeConflict, Message: fmt.Sprintf("cannot create branch %s: it clashes with an existing branch (a branch cannot be both a name and a folder of names); choose another name", name), Err: err}
	}
	return classify(err, CodeInternal, "cannot create workspace %s in %s", name, p.Path)
}

// checkTarget checks the folder a new worktree goes to: missing, or an
// empty folder. It reports whether the folder existed.
func checkTarget(target string) (existed bool, err error) {
	fi, err := os.Lstat(target)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, &Error{Code: CodeInternal, Message: fmt.Sprintf("cannot check folder %s", target), Err: err}
	}
	conflict := Errorf(CodeConflict, "%s already exists and is not an empty folder; remove it or choose another name", target)
	if !fi.IsDir() {
		return false, conflict
	}
	d, err := os.Open(target)
	if err != nil {
		return false, &Error{Code: CodeInternal, Message: fmt.Sprintf("cannot read folder %s", target), Err: err}
	}
	defer d.Close()
	if _, err := d.Readdirnames(1); err != io.EOF {
		return false, conflict
	}
	return true, nil
}

// undoCreate removes what a failed create made: the worktree, the folder if
// it did not exist before, and the branch if it did not exist before. It
// runs on its own deadline because the caller's context may be what ended.
func (m *Manager) undoCreate(ctx context.Context, p *project, target, branch string, folderExisted, branchExisted bool, stderr string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
	defer cancel()
	// "already exists": another process made the branch or the folder after
	// our checks; it is not ours to remove.
	branchForeign := strings.Contains(stderr, "a branch named")
	folderForeign := !branchForeign && strings.Contains(stderr, "already exists")
	if !folderForeign {
		if entries, err := m.listWorktrees(ctx, p); err == nil {
			if _, ok := findEntry(entries, registeredPath(target)); ok {
				if _, err := m.changeWorktrees(ctx, p, "worktree", "remove", "--force", "--", target); err != nil {
					m.log.Warn("undo create: remove worktree", "path", target, "err", err)
				}
			}
		}
		if folderExisted {
			// git removed the folder with the worktree; put back the empty
			// folder the user had made.
			if err := os.Mkdir(target, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				m.log.Warn("undo create: restore folder", "path", target, "err", err)
			}
		} else if err := os.RemoveAll(target); err != nil {
			m.log.Warn("undo create: remove folder", "path", target, "err", err)
		}
		if entries, err := m.listWorktrees(ctx, p); err == nil {
			if _, ok := findEntry(entries, registeredPath(target)); ok {
				if _, err := m.changeWorktrees(ctx, p, "worktree", "prune"); err != nil {
					m.log.Warn("undo create: prune worktrees", "err", err)
				}
			}
		}
	}
	if branchExisted || branchForeign {
		return
	}
	if ok, err := m.refExists(ctx, p.Path, "refs/heads/"+branch); err == nil && ok {
		if _, err := m.changeWorktrees(ctx, p, "branch", "-D", "--", branch); err != nil {
			m.log.Warn("undo create: delete branch", "branch", branch, "err", err)
		}
	}
}

// refExists reports whether the full ref name exists in the repository at dir.
func (m *Manager) refExists(ctx context.Context, dir, ref string) (bool, error) {
	_, err := m.git.run(ctx, dir, "show-ref", "--verify", "--quiet", "--", ref)
	if err == nil {
		return true, nil
	}
	if exitCode(err) == 1 {
		return false, nil
	}
	return false, err
}

// ReusableBranches lists the project's local branches that are checked
// out nowhere: a workspace named after one of them reuses it (see
// Create), which a form can say as the name is typed.
func (m *Manager) ReusableBranches(ctx context.Context, projectPath string) ([]string, error) {
	p, err := m.lookupProject(projectPath)
	if err != nil {
		return nil, err
	}
	out, err := m.git.run(ctx, p.Path, "for-each-ref", "--format=%(refname:lstrip=2)%00%(worktreepath)", "refs/heads")
	if err != nil {
		return nil, classify(err, CodeInternal, "cannot list the branches of %s", p.Path)
	}
	var free []string
	for line := range strings.Lines(out) {
		b, wt, _ := strings.Cut(strings.TrimRight(line, "\n"), "\x00")
		if b != "" && wt == "" {
			free = append(free, b)
		}
	}
	return free, nil
}
