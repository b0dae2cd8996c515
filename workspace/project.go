package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// project is a loaded project and what the manager knows of its worktrees.
type project struct {
	Project
	// commonDir is the repository's git folder shared by all its worktrees
	// (absolute, symlinks resolved).
	commonDir string
	// configMu serialises this app's writes to the project's git config, so
	// that two of them never collide on config.lock.
	configMu sync.Mutex
	// worktreesMu serialises this app's git commands that change the
	// project's worktrees or branches (write lock) against each other and
	// against listing them (read lock): git reads every worktree's admin
	// folder and fails on one that another command is still writing.
	worktreesMu sync.RWMutex

	// Guarded by Manager.mu.
	workspaces map[string]Workspace // by pathKey(Path)
	missing    map[string]Workspace // registered with git, folder missing; by pathKey(Path)
	gen        uint64               // bumped on every change the app makes
	sig        string               // last seen signature of <commonDir>/worktrees; "" = unknown
	lastErr    string               // last discovery error logged, to log each once
}

// checkProjectPath validates a project path given by a caller and returns
// it cleaned.
func checkProjectPath(path string) (string, error) {
	switch {
	case path == "":
		return "", Errorf(CodeInvalidInput, "the project path is empty; give the folder of a git repository")
	case len(path) > MaxPathLength:
		// Resolving a path costs time in its number of parts; a caller
		// must not be able to keep the app busy with a megabyte of "/a".
		return "", Errorf(CodeInvalidInput, "the project path is %d bytes long; the limit is %d", len(path), MaxPathLength)
	case strings.ContainsRune(path, 0):
		return "", Errorf(CodeInvalidInput, "the project path contains a NUL character")
	case !filepath.IsAbs(path):
		return "", Errorf(CodeInvalidInput, "project path %q is not absolute; give the full path of the repository", path)
	}
	return filepath.Clean(path), nil
}

// openProject checks that path is the top level of a non-bare git
// repository with at least one commit and returns it, not yet discovered.
// A path inside a repository but not its top level is refused (not
// normalised), with a message naming the top level.
func (m *Manager) openProject(ctx context.Context, path string) (*project, error) {
	clean, err := checkProjectPath(path)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(clean)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &Error{Code: CodeInvalidInput, Message: fmt.Sprintf("folder %s does not exist; check the path", clean), Err: err}
	}
	if err != nil {
		return nil, &Error{Code: CodeInvalidInput, Message: fmt.Sprintf("cannot read folder %s", clean), Err: err}
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return nil, Errorf(CodeInvalidInput, "%s is not a folder; give the folder of a git repository", clean)
	}
	out, err := m.git.run(ctx, real, "rev-parse", "--is-bare-repository", "--is-inside-work-tree")
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		if strings.Contains(stderrOf(err), "not a git repository") {
			return nil, &Error{Code: CodeInvalidInput, Message: fmt.Sprintf("%s is not a git repository; run git init there or pick a repository", clean), Err: err}
		}
		if strings.Contains(stderrOf(err), "safe.bareRepository") {
			// CodeHydra's git finds no repository in a git folder itself
			// (see gitenv.Env).
			return nil, &Error{Code: CodeInvalidInput, Message: fmt.Sprintf("%s is a bare repository or inside a .git folder, which has no main checkout; add the repository's working folder", clean), Err: err}
		}
		return nil, classify(err, CodeInvalidInput, "cannot open %s as a git repository", clean)
	}
	flags := strings.Fields(out)
	if len(flags) >= 1 && flags[0] == "true" {
		return nil, Errorf(CodeInvalidInput, "%s is a bare repository, which has no main checkout; add a repository with a working folder", clean)
	}
	if len(flags) < 2 || flags[1] != "true" {
		return nil, Errorf(CodeInvalidInput, "%s is inside a .git folder; add the repository's working folder", clean)
	}
	out, err = m.git.run(ctx, real, "rev-parse", "--show-toplevel", "--git-dir", "--git-common-dir")
	if err != nil {
		return nil, classify(err, CodeInvalidInput, "cannot open %s as a git repository", clean)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 3 {
		return nil, Errorf(CodeInternal, "unexpected output of git rev-parse in %s: %q", clean, out)
	}
	top := resolveMaybeMissing(absIn(real, lines[0]))
	if pathKey(top) != pathKey(real) {
		return nil, Errorf(CodeInvalidInput, "%s is inside the repository %s, not its top level; add %s instead", clean, top, top)
	}
	gitDir := resolveMaybeMissing(absIn(real, lines[1]))
	commonDir := resolveMaybeMissing(absIn(real, lines[2]))
	if pathKey(gitDir) != pathKey(commonDir) {
		return nil, Errorf(CodeInvalidInput, "%s is a linked worktree of another repository; add that repository's main checkout instead", clean)
	}
	if _, err := m.git.run(ctx, real, "rev-parse", "--verify", "-q", "HEAD^{commit}"); err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, &Error{Code: CodeInvalidInput, Message: fmt.Sprintf("%s has no commits yet; make a first commit, then add it again", clean), Err: err}
	}
	return &project{
		Project:    Project{Name: filepath.Base(real), Path: real},
		commonDir:  commonDir,
		workspaces: map[string]Workspace{},
		missing:    map[string]Workspace{},
	}, nil
}

// Load loads Options.Projects and discovers their worktrees. A project that
// no longer exists or is not a repository is logged and skipped, but stays
// in the stored list, so that a disk that is not mounted right now does not
// lose it. Like AddProject, it publishes project-added and a
// workspace-added per workspace of each project it loads, so subscribers
// that started before it (the tray, the agent supervisor) learn of them.
// Load then finishes the merges and deletes an earlier run left half done
// (see finishPendingLands and finishPendingDeletes), publishing their
// events. It returns an error only
// when ctx ends.
func (m *Manager) Load(ctx context.Context) error {
	m.projMu.Lock()
	defer m.projMu.Unlock()
	var stored []string
	loaded := map[string]*project{}
	var order []*project // loaded, in the stored order
	for _, path := range m.opts.Projects {
		if !slices.Contains(stored, path) {
			stored = append(stored, path)
		}
		p, err := m.openProject(ctx, path)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			m.log.Warn("skipping project", "path", path, "err", err)
			continue
		}
		key := pathKey(p.Path)
		if _, dup := loaded[key]; dup {
			continue
		}
		sig := worktreesSignature(p.commonDir)
		found, missing, err := m.discover(ctx, p)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// Kept without workspaces; Run retries since the signature
			// stays unknown.
			m.log.Warn("cannot list the worktrees of project", "path", p.Path, "err", err)
		} else {
			p.workspaces, p.missing, p.sig = found, missing, sig
		}
		loaded[key] = p
		order = append(order, p)
	}
	m.mu.Lock()
	m.projects = loaded
	m.stored = stored
	for _, p := range order {
		m.publishAdded(p)
	}
	m.mu.Unlock()
	if err := m.finishPendingLands(ctx); err != nil {
		return err
	}
	return m.finishPendingDeletes(ctx)
}

// AddProject adds the git repository at path (absolute; symlinks are
// resolved) and discovers its worktrees. The folder must be the top level
// of a non-bare repository with at least one commit; a folder inside a
// repository is refused with a message naming the top level. Adding a
// project twice returns the existing one. It publishes project-added and a
// workspace-added per workspace found.
func (m *Manager) AddProject(ctx context.Context, path string) (Project, error) {
	p, err := m.openProject(ctx, path)
	if err != nil {
		return Project{}, err
	}
	key := pathKey(p.Path)
	m.projMu.Lock()
	defer m.projMu.Unlock()

	m.mu.Lock()
	existing, ok := m.projects[key]
	stored := slices.Clone(m.stored)
	m.mu.Unlock()
	if ok {
		return existing.Project, nil
	}

	sig := worktreesSignature(p.commonDir)
	found, missing, err := m.discover(ctx, p)
	if err != nil {
		return Project{}, classify(err, CodeInternal, "cannot list the worktrees of %s", p.Path)
	}
	p.workspaces, p.missing, p.sig = found, missing, sig

	// stored only changes under projMu, so resolving it here is safe.
	known := slices.ContainsFunc(stored, func(s string) bool { return sameProjectPath(s, p.Path) })
	if !known {
		stored = append(stored, p.Path)
		if err := m.save(stored); err != nil {
			return Project{}, err
		}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	m.projects[key] = p
	m.stored = stored
	m.publishAdded(p)
	return p.Project, nil
}

// publishAdded gives p's workspaces their port blocks and announces p and
// them. Callers hold m.mu, so the events go out before any later change
// to p.
func (m *Manager) publishAdded(p *project) {
	m.Publish(Event{Kind: EventProjectAdded, ProjectPath: p.Path})
	for _, ws := range sortedValues(p.workspaces) {
		m.ports.assign(ws.Path)
		m.Publish(Event{Kind: EventWorkspaceAdded, ProjectPath: p.Path, Workspace: ws})
	}
}

// sameProjectPath reports whether the stored entry s names the project at
// real (a resolved path).
func sameProjectPath(s, real string) bool {
	if !filepath.IsAbs(s) {
		return false
	}
	return pathKey(filepath.Clean(s)) == pathKey(real) || pathKey(resolveMaybeMissing(s)) == pathKey(real)
}

func (m *Manager) save(paths []string) error {
	if m.opts.Store == nil {
		return nil
	}
	if err := m.opts.Store.SaveProjects(slices.Clone(paths)); err != nil {
		return &Error{Code: CodeInternal, Message: "could not save the project list; check that the settings file is writable", Err: err}
	}
	return nil
}

// RemoveProject forgets the project at path. It never deletes files: the
// repository and its worktrees stay where they are. It also drops a stored
// project that did not load. It publishes a workspace-removed per workspace
// and project-removed.
func (m *Manager) RemoveProject(ctx context.Context, path string) error {
	clean, err := checkProjectPath(path)
	if err != nil {
		return err
	}
	real := resolveMaybeMissing(clean)
	m.projMu.Lock()
	defer m.projMu.Unlock()

	m.mu.Lock()
	p := m.projects[pathKey(real)]
	if p == nil {
		p = m.projects[pathKey(clean)]
	}
	stored := slices.Clone(m.stored)
	m.mu.Unlock()

	kept := slices.DeleteFunc(slices.Clone(stored), func(s string) bool {
		return sameProjectPath(s, real) || sameProjectPath(s, clean) || (p != nil && sameProjectPath(s, p.Path))
	})
	if p == nil && len(kept) == len(stored) {
		return Errorf(CodeProjectNotFound, "no project at %s; see the project list for the paths", clean)
	}
	if len(kept) != len(stored) {
		if err := m.save(kept); err != nil {
			return err
		}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	m.stored = kept
	if p == nil {
		return nil
	}
	delete(m.projects, pathKey(p.Path))
	for k, ws := range m.tombstones {
		if ws.ProjectPath == p.Path {
			delete(m.tombstones, k)
		}
	}
	for _, ws := range sortedValues(p.workspaces) {
		m.ports.release(ws.Path)
		m.Publish(Event{Kind: EventWorkspaceRemoved, ProjectPath: p.Path, Workspace: ws})
	}
	m.Publish(Event{Kind: EventProjectRemoved, ProjectPath: p.Path})
	return nil
}

// Projects returns the loaded projects in the domain's one order: by
// name case-folded, then by path.
func (m *Manager) Projects() []Project {
	ps := m.projectList()
	out := make([]Project, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.Project)
	}
	slices.SortFunc(out, func(a, b Project) int { return compareNamePath(a.Name, a.Path, b.Name, b.Path) })
	return out
}

// projectList returns the loaded projects, taken under the lock, for work
// that runs git without it (their Project part never changes).
func (m *Manager) projectList() []*project {
	m.mu.Lock()
	defer m.mu.Unlock()
	ps := make([]*project, 0, len(m.projects))
	for _, p := range m.projects {
		ps = append(ps, p)
	}
	return ps
}

// Workspaces returns the workspaces of the project at projectPath, by
// name case-folded, then by path.
func (m *Manager) Workspaces(projectPath string) ([]Workspace, error) {
	p, err := m.lookupProject(projectPath)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return sortedValues(p.workspaces), nil
}

// AllWorkspaces returns the workspaces of every project, by project path,
// then (within a project, as Workspaces) by name case-folded, then by
// path.
func (m *Manager) AllWorkspaces() []Workspace {
	m.mu.Lock()
	var out []Workspace
	for _, p := range m.projects {
		for _, ws := range p.workspaces {
			out = append(out, ws)
		}
	}
	m.mu.Unlock()
	sortWorkspaces(out)
	return out
}

func sortedValues(ws map[string]Workspace) []Workspace {
	out := make([]Workspace, 0, len(ws))
	for _, w := range ws {
		out = append(out, w)
	}
	sortWorkspaces(out)
	return out
}

// lookupProject finds a loaded project by path (symlinks resolved).
func (m *Manager) lookupProject(path string) (*project, error) {
	clean, err := checkProjectPath(path)
	if err != nil {
		return nil, err
	}
	real := resolveMaybeMissing(clean)
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.projects[pathKey(real)]; p != nil {
		return p, nil
	}
	if p := m.projects[pathKey(clean)]; p != nil {
		return p, nil
	}
	return nil, Errorf(CodeProjectNotFound, "no project at %s; add it first or see the project list", clean)
}

// Branches lists the project's local branches, then its remote-tracking
// branches (as "origin/main"), each in git's order; symbolic refs such as
// origin/HEAD are left out.
func (m *Manager) Branches(ctx context.Context, projectPath string) ([]string, error) {
	p, err := m.lookupProject(projectPath)
	if err != nil {
		return nil, err
	}
	out, err := m.git.run(ctx, p.Path, "for-each-ref", "--format=%(refname)%00%(symref)", "refs/heads", "refs/remotes")
	if err != nil {
		return nil, classify(err, CodeInternal, "cannot list the branches of %s", p.Path)
	}
	var local, remote []string
	for line := range strings.Lines(out) {
		ref, symref, _ := strings.Cut(strings.TrimRight(line, "\n"), "\x00")
		if symref != "" {
			continue
		}
		if b, ok := strings.CutPrefix(ref, "refs/heads/"); ok {
			local = append(local, b)
		} else if b, ok := strings.CutPrefix(ref, "refs/remotes/"); ok {
			remote = append(remote, b)
		}
	}
	return append(local, remote...), nil
}

// DefaultBase is the base of a new workspace when none is given: the
// remote's default branch (refs/remotes/origin/HEAD, as "origin/main") when
// it exists, else the branch checked out in the project's main checkout.
func (m *Manager) DefaultBase(ctx context.Context, projectPath string) (string, error) {
	p, err := m.lookupProject(projectPath)
	if err != nil {
		return "", err
	}
	return m.defaultBase(ctx, p)
}

func (m *Manager) defaultBase(ctx context.Context, p *project) (string, error) {
	if out, err := m.git.run(ctx, p.Path, "symbolic-ref", "-q", "refs/remotes/origin/HEAD"); err == nil {
		ref := strings.TrimSpace(out)
		// origin/HEAD may point at a branch that was deleted since.
		if _, err := m.git.run(ctx, p.Path, "rev-parse", "--verify", "-q", "--end-of-options", ref+"^{commit}"); err == nil {
			return strings.TrimPrefix(ref, "refs/remotes/"), nil
		}
	} else if ctx.Err() != nil {
		return "", ctx.Err()
	}
	out, err := m.git.run(ctx, p.Path, "symbolic-ref", "-q", "--short", "HEAD")
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", &Error{Code: CodeInvalidInput, Message: fmt.Sprintf("the main checkout of %s is on a detached HEAD and there is no origin/HEAD; give a base branch explicitly", p.Path), Err: err}
	}
	return strings.TrimSpace(out), nil
}
