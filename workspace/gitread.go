package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Git reads that a status cache (package statuscache) needs besides
// Status's own: where a worktree's git folders are, and which paths git
// ignores. They run git with the manager's environment and take no
// optional locks, so they never get in the way of an agent's git.

// literalEnv makes git read the paths given as literal names, not
// pathspecs with wildcards or magic; no optional locks are taken.
func literalEnv() []string { return []string{"GIT_LITERAL_PATHSPECS=1", "GIT_OPTIONAL_LOCKS=0"} }

// lsFilesChunk bounds the paths given to one git ls-files.
const lsFilesChunk = 200

// GitDirs returns the git folders of ws: its own admin folder (HEAD,
// index; <common>/worktrees/<name>, proven to be git's folder for ws, see
// worktreeGitDir) and the project's common folder (refs, packed-refs,
// config).
func (m *Manager) GitDirs(ws Workspace) (gitDir, commonDir string, err error) {
	m.mu.Lock()
	p := m.projects[pathKey(ws.ProjectPath)]
	m.mu.Unlock()
	if p == nil {
		return "", "", Errorf(CodeProjectNotFound, "project %s is not open", ws.ProjectPath)
	}
	if gitDir, err = worktreeGitDir(ws.Path, p.commonDir); err != nil {
		return "", "", fmt.Errorf("find the git folder of %s: %w", ws.Path, err)
	}
	return gitDir, p.commonDir, nil
}

// Git runs git with args in dir, a workspace or a project's main
// checkout, as the manager runs its own git: in a workspace pinned to its
// git folders, with no hook, fsmonitor or look into submodules (see
// gitenv.Env and pinnedGit), and with env added. It returns git's stdout;
// a failure carries git's stderr. It is for the readers of a workspace
// outside this package (the file tools), which must not run a git that
// the workspace's agent can steer.
func (m *Manager) Git(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	return m.git.runEnv(ctx, dir, env, args...)
}

// worktreeGitDir returns the admin folder of the linked worktree at path
// in the repository whose git folder is commonDir, as its .git file names
// it, once that proves to be git's own: a folder right in
// <commonDir>/worktrees whose gitdir file leads back to path's .git. The
// .git file is the workspace's, its agent's to write: pointed at another
// worktree's folder, or at a git folder of the agent's making, it must
// not steer CodeHydra's git (nor a sandbox grant) there.
func worktreeGitDir(path, commonDir string) (string, error) {
	gitDir, err := readGitDir(path)
	if err != nil {
		return "", err
	}
	worktrees := resolveMaybeMissing(filepath.Join(commonDir, "worktrees"))
	real, err := filepath.EvalSymlinks(gitDir)
	if err != nil || filepath.Dir(real) != worktrees {
		return "", fmt.Errorf("the .git of %s does not lead to a worktree folder in %s", path, worktrees)
	}
	back, err := os.ReadFile(filepath.Join(real, "gitdir"))
	if err != nil || resolveMaybeMissing(absIn(real, strings.TrimSpace(string(back)))) != resolveMaybeMissing(filepath.Join(path, ".git")) {
		return "", fmt.Errorf("the .git of %s leads to %s, which git keeps for another worktree", path, real)
	}
	return real, nil
}

// pinnedGit returns the environment that makes git in dir, when dir is a
// workspace, use its worktree's folder in the project's git folder and
// that git folder, whatever the workspace's .git file and the worktree's
// commondir file (both its agent's to write) say. A .git that leads
// anywhere but <common>/worktrees/<name> is refused: git would read a
// config (core.fsmonitor, filters) of the agent's making there. A folder
// that is no workspace (a project's main checkout) needs nothing.
func (m *Manager) pinnedGit(dir string) ([]string, error) {
	ws, p, ok := m.registered(filepath.Clean(dir))
	if !ok || p == nil || p.commonDir == "" {
		return nil, nil
	}
	if _, err := os.Lstat(ws.Path); err != nil {
		// A folder that went: git fails on its own, and says so.
		return nil, nil
	}
	gitDir, err := worktreeGitDir(ws.Path, p.commonDir)
	if err == nil {
		err = checkWorktreeConfig(gitDir)
	}
	if err != nil {
		return nil, fmt.Errorf("%w; CodeHydra runs no git there", err)
	}
	return []string{"GIT_DIR=" + gitDir, "GIT_COMMON_DIR=" + p.commonDir, "GIT_WORK_TREE=" + ws.Path}, nil
}

// programKeys are the last parts of git config keys whose values git
// runs, or that pull in other files (include.path). core.fsmonitor and
// core.hooksPath are not among them: gitenv.Env overrides them.
var programKeys = []string{"clean", "smudge", "process", "textconv", "command", "driver", "helper", "path", "program",
	"editor", "pager", "sshcommand", "askpass", "alternaterefscommand", "gitproxy",
	"packobjectshook", "uploadpack", "receivepack", "external", "worktree"}

// checkWorktreeConfig refuses a worktree whose own config file
// (config.worktree in its folder in the repository, its agent's to write,
// which git reads when the repository has extensions.worktreeConfig)
// names a program for git to run: a filter, a diff driver, an include. It
// is read as text, never by git.
func checkWorktreeConfig(gitDir string) error {
	b, err := os.ReadFile(filepath.Join(gitDir, "config.worktree"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", filepath.Join(gitDir, "config.worktree"), err)
	}
	section := ""
	for line := range strings.Lines(string(b)) {
		line = strings.ToLower(strings.TrimSpace(line))
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			section = strings.Fields(strings.Trim(line, "[]"))[0]
			if i := strings.IndexByte(line, ']'); i >= 0 && strings.TrimSpace(line[i+1:]) != "" {
				line = strings.TrimSpace(line[i+1:]) // "[core] fsmonitor = x" on one line
			} else {
				continue
			}
		}
		key, _, _ := strings.Cut(line, "=")
		key = strings.TrimSpace(key)
		if section == "alias" || section == "pager" || section == "include" || strings.HasPrefix(section, "includeif") ||
			slices.Contains(programKeys, key) {
			return fmt.Errorf("the worktree's own config (%s) sets %s.%s, which git would run or read from elsewhere",
				filepath.Join(gitDir, "config.worktree"), section, key)
		}
	}
	return nil
}

// readGitDir returns the admin folder of the worktree at path, from its
// .git file ("gitdir: <path>"), or .git itself when it is a folder.
func readGitDir(path string) (string, error) {
	dotGit := filepath.Join(path, ".git")
	fi, err := os.Lstat(dotGit)
	if err != nil {
		return "", err
	}
	if fi.IsDir() {
		return dotGit, nil
	}
	b, err := os.ReadFile(dotGit)
	if err != nil {
		return "", err
	}
	dir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return "", errors.New("unexpected content in " + dotGit)
	}
	return resolveMaybeMissing(absIn(path, strings.TrimSpace(dir))), nil
}

// IgnoredPaths returns which of paths (absolute, inside the worktree at
// dir) match git's ignore rules there. It does not look at the index
// (with it, check-ignore costs about 1 ms per path on a 100,000-file
// repository), so a tracked path that matches a rule is in the result
// too: callers drop those with TrackedPaths. Paths outside the worktree
// are left out.
func (m *Manager) IgnoredPaths(ctx context.Context, dir string, paths []string) (map[string]bool, error) {
	var in strings.Builder
	n := 0
	for _, p := range paths {
		rel, ok := relInside(dir, p)
		if !ok {
			continue
		}
		in.WriteString(rel)
		in.WriteByte(0)
		n++
	}
	if n == 0 {
		return nil, nil
	}
	// check-ignore takes the names as they are (it refuses
	// GIT_LITERAL_PATHSPECS); a name git cannot take fails the whole
	// question, and the caller then assumes nothing is ignored.
	out, err := m.git.runInput(ctx, dir, []string{"GIT_OPTIONAL_LOCKS=0"}, in.String(), "check-ignore", "--stdin", "-z", "--no-index")
	if exitCode(err) == 1 {
		return nil, nil // none is ignored
	}
	if err != nil {
		return nil, fmt.Errorf("ask git which paths it ignores in %s: %w", dir, err)
	}
	ignored := map[string]bool{}
	for rel := range strings.SplitSeq(out, "\x00") {
		if rel != "" {
			ignored[filepath.Join(dir, filepath.FromSlash(rel))] = true
		}
	}
	return ignored, nil
}

// TrackedPaths returns the paths of dirs (absolute, inside the worktree
// at dir) that are tracked files or folders holding at least one.
func (m *Manager) TrackedPaths(ctx context.Context, dir string, dirs map[string]bool) (map[string]bool, error) {
	rels := make([]string, 0, len(dirs))
	relDirs := map[string]string{} // rel -> abs
	for d := range dirs {
		if rel, ok := relInside(dir, d); ok {
			rels = append(rels, rel)
			relDirs[rel] = d
		}
	}
	found := map[string]bool{}
	for len(rels) > 0 {
		chunk := rels[:min(len(rels), lsFilesChunk)]
		rels = rels[len(chunk):]
		args := append([]string{"ls-files", "-z", "--"}, chunk...)
		out, err := m.git.runEnv(ctx, dir, literalEnv(), args...)
		if err != nil {
			return nil, fmt.Errorf("ask git which paths it tracks in %s: %w", dir, err)
		}
		for file := range strings.SplitSeq(out, "\x00") {
			for p := file; file != "" && p != "." && p != "/"; p = path.Dir(p) {
				if abs, ok := relDirs[p]; ok {
					found[abs] = true
					break
				}
			}
		}
	}
	return found, nil
}

// relInside returns p relative to dir with forward slashes, ok=false when
// p is dir itself or not inside it.
func relInside(dir, p string) (string, bool) {
	rel, err := filepath.Rel(dir, p)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// runInput is runEnv with stdin, without the check for a vanished
// folder.
func (g *gitRunner) runInput(ctx context.Context, dir string, extra []string, stdin string, args ...string) (string, error) {
	return g.runWith(ctx, dir, extra, strings.NewReader(stdin), args...)
}
