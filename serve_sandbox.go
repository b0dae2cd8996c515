package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"codehydra/internal/paths"
	"codehydra/internal/sandbox"
	"codehydra/internal/settings"
)

// The kernel sandbox of what runs for a workspace (issue 20): every
// start of an agent, a task, a setup or a workspace's own MCP server asks
// confine for its plan, built from the settings as they are then.

// confine is the plan for the processes of the workspace at path.
func (s *server) confine(ctx context.Context, path string) (sandbox.Plan, error) {
	set := s.settings.Get()
	mode, err := sandbox.ParseMode(set.Sandbox.Mode)
	if err != nil {
		return sandbox.Plan{}, err
	}
	c := &sandbox.Confiner{Mode: mode, Layout: s.sandboxLayout(set), Workspace: s.sandboxWorkspace}
	return c.Plan(ctx, path)
}

// confineProbe is the plan for the probe that learns a workspace-scoped
// MCP server's tools in dir, an empty folder of its own: confined like a
// workspace's processes, to that folder.
func (s *server) confineProbe(ctx context.Context, dir string) (sandbox.Plan, error) {
	set := s.settings.Get()
	mode, err := sandbox.ParseMode(set.Sandbox.Mode)
	if err != nil {
		return sandbox.Plan{}, err
	}
	c := &sandbox.Confiner{Mode: mode, Layout: s.sandboxLayout(set), Workspace: func(_ context.Context, dir string) (sandbox.Workspace, error) {
		w := sandbox.Workspace{Path: dir}
		for _, o := range s.manager.AllWorkspaces() {
			w.Others = append(w.Others, o.Path)
		}
		return w, nil
	}}
	return c.Plan(ctx, dir)
}

// sandboxLayout is what every workspace's policy shares: CodeHydra's own
// folders cut out, the tools and the OpenCode config readable, the caches
// and opencode's folders writable, and the settings' lists.
func (s *server) sandboxLayout(set settings.Settings) sandbox.Layout {
	home, _ := os.UserHomeDir()
	abs := func(list []string) []string {
		var out []string
		for _, p := range list {
			if p = settings.ExpandHome(p, home); filepath.IsAbs(p) {
				out = append(out, p)
			}
		}
		return out
	}
	private := []string{paths.ConfigDir(), paths.DataDir(), paths.StateDir(), paths.RuntimeDir()}
	// opencode needs its own folders, and npm's cache for the packages it
	// installs in the background (its plugin API); they are made before
	// the first agent, so that they can be granted.
	for _, d := range paths.OpencodeDirs() {
		_ = os.MkdirAll(d, 0o700)
	}
	npmCache := filepath.Join(home, ".npm")
	if c := s.cli.getenv("npm_config_cache"); filepath.IsAbs(c) {
		npmCache = c
	}
	_ = os.MkdirAll(npmCache, 0o755)
	writable := sandbox.Existing(buildFolders(home, s.cli.getenv)...)
	writable = append(writable, paths.OpencodeDirs()...)
	writable = append(writable, abs(set.Sandbox.Writable)...)
	hidden := abs(set.Sandbox.Hidden)
	if root := set.WorktreeRoot; root != "" && !s.holdsAProject(root) {
		// Workspaces made there later are cut out before they exist.
		hidden = append(hidden, root)
	}
	return sandbox.Layout{
		Private:    private,
		SharedRead: []string{paths.ToolsDir(), paths.OpencodeConfigFile()},
		Writable:   notInside(writable, private),
		Readable:   notInside(abs(set.Sandbox.Readable), private),
		Hidden:     hidden,
	}
}

// buildFolders are the caches and tool folders that builds write: the
// defaults in the home folder (~/.cache, ~/.npm, ~/go, ~/.cargo,
// ~/.rustup) and where the environment moves them (XDG_CACHE_HOME,
// npm_config_cache, GOPATH, GOCACHE, GOMODCACHE, CARGO_HOME,
// RUSTUP_HOME).
func buildFolders(home string, getenv func(string) string) []string {
	dirs := []string{filepath.Join(home, ".cache"), filepath.Join(home, ".npm"), filepath.Join(home, "go"),
		filepath.Join(home, ".cargo"), filepath.Join(home, ".rustup")}
	for _, v := range []string{"XDG_CACHE_HOME", "npm_config_cache", "NPM_CONFIG_CACHE", "GOCACHE", "GOMODCACHE", "CARGO_HOME", "RUSTUP_HOME"} {
		if d := getenv(v); filepath.IsAbs(d) {
			dirs = append(dirs, d)
		}
	}
	for _, d := range filepath.SplitList(getenv("GOPATH")) {
		if filepath.IsAbs(d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// notInside drops the paths inside one of dirs: settings cannot hand
// CodeHydra's own folders to an agent.
func notInside(list, dirs []string) []string {
	var out []string
	for _, p := range list {
		inside := false
		for _, d := range dirs {
			inside = inside || sandbox.Within(sandbox.Resolve(p), sandbox.Resolve(d))
		}
		if !inside {
			out = append(out, p)
		}
	}
	return out
}

// holdsAProject reports whether a project or a git folder of one lies in
// dir (a worktree root of the user's choosing may be their source folder).
func (s *server) holdsAProject(dir string) bool {
	dir = sandbox.Resolve(dir)
	for _, p := range s.manager.Projects() {
		if sandbox.Within(sandbox.Resolve(p.Path), dir) {
			return true
		}
	}
	return false
}

// sandboxWorkspace is what the policy of the workspace at path is about.
// Its git admin folder is granted only when it is where git keeps a
// worktree's (<common>/worktrees/<name>): the workspace's .git file is
// its agent's to write, and must not steer a grant elsewhere.
func (s *server) sandboxWorkspace(_ context.Context, path string) (sandbox.Workspace, error) {
	ws, err := s.manager.Resolve(path)
	if err != nil {
		return sandbox.Workspace{}, err
	}
	w := sandbox.Workspace{Path: ws.Path, Temp: workspaceTemp(ws.Path)}
	if gitDir, common, err := s.manager.GitDirs(ws); err == nil {
		w.CommonDir = common
		if filepath.Dir(sandbox.Resolve(gitDir)) == sandbox.Resolve(filepath.Join(common, "worktrees")) {
			w.GitDir = gitDir
		} else {
			s.log.Warn("the workspace's .git does not lead to its worktree's folder in the repository; its agent cannot commit",
				"workspace", ws.Path)
		}
	} else {
		s.log.Warn("cannot find the git folders of a workspace; its agent cannot commit", "workspace", ws.Path, "err", err)
	}
	for _, o := range s.manager.AllWorkspaces() {
		if o.Path != ws.Path {
			w.Others = append(w.Others, o.Path)
		}
	}
	return w, nil
}

// workspaceTemp is the temporary folder of the workspace at path: short,
// so that unix sockets made in it stay under the length limit.
func workspaceTemp(path string) string {
	sum := sha256.Sum256([]byte(path))
	return filepath.Join(paths.WorkspaceTempRoot(), hex.EncodeToString(sum[:6]))
}

// sandboxSupport says in a line what this system can confine, for the
// Settings window and the log.
func sandboxSupport() string {
	st := sandbox.Probe()
	if !st.Enforced {
		return st.Reason
	}
	return fmt.Sprintf("confined by Landlock ABI %d", st.ABI)
}
