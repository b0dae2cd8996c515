package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
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
// index; .git/worktrees/<name> for a linked worktree, .git for the main
// one) and the project's common folder (refs, packed-refs, config).
func (m *Manager) GitDirs(ws Workspace) (gitDir, commonDir string, err error) {
	m.mu.Lock()
	p := m.projects[pathKey(ws.ProjectPath)]
	m.mu.Unlock()
	if p == nil {
		return "", "", Errorf(CodeProjectNotFound, "project %s is not open", ws.ProjectPath)
	}
	gitDir, err = readGitDir(ws.Path)
	if err != nil {
		return "", "", fmt.Errorf("find the git folder of %s: %w", ws.Path, err)
	}
	return gitDir, p.commonDir, nil
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
	gitDir, err := readGitDir(ws.Path)
	if err != nil {
		// A folder that went: git fails on its own, and says so.
		return nil, nil
	}
	worktrees := filepath.Join(p.commonDir, "worktrees")
	if real, err := filepath.EvalSymlinks(gitDir); err != nil || filepath.Dir(real) != resolveMaybeMissing(worktrees) {
		return nil, fmt.Errorf("the .git of %s does not lead to a worktree folder in %s; CodeHydra runs no git there", ws.Path, worktrees)
	}
	return []string{"GIT_DIR=" + gitDir, "GIT_COMMON_DIR=" + p.commonDir, "GIT_WORK_TREE=" + ws.Path}, nil
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
