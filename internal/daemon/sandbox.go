package daemon

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
		w := sandbox.Workspace{Path: dir, Temp: dir}
		for _, o := range s.manager.AllWorkspaces() {
			w.Others = append(w.Others, o.Path)
		}
		return w, nil
	}}
	return c.Plan(ctx, dir)
}

// sandboxLayout is what every workspace's policy shares: CodeHydra's own
// folders cut out, the tools, the OpenCode config and the empty folder
// workspace-scoped MCP servers start in readable, the caches
// and opencode's data, state and cache folders writable, and the
// settings' lists.
func (s *server) sandboxLayout(set settings.Settings) sandbox.Layout {
	home, _ := os.UserHomeDir()
	private := []string{paths.ConfigDir(), paths.DataDir(), paths.StateDir(), paths.RuntimeDir()}
	// opencode needs its own folders, and npm's cache for the packages it
	// installs in the background (its plugin API); they are made before
	// the first agent, so that they can be granted.
	for _, d := range paths.OpencodeDirs() {
		_ = os.MkdirAll(d, 0o700)
	}
	npmCache := filepath.Join(home, ".npm")
	if c := s.opts.Getenv("npm_config_cache"); filepath.IsAbs(c) {
		npmCache = c
	}
	_ = os.MkdirAll(npmCache, 0o755)
	roots := []string{paths.ProjectsDir()}
	if root := set.WorktreeRoot; root != "" {
		roots = append(roots, root)
		if !s.holdsAProject(root) {
			// A worktree root of the user's is CodeHydra's as its default
			// one is: workspaces made there later are cut out before they
			// exist, and a workspace may be in it.
			private = append(private, root)
		}
	}
	var projects []string
	for _, p := range s.manager.Projects() {
		projects = append(projects, p.Path, filepath.Join(p.Path, ".git"))
	}
	return sandbox.Layout{
		Home:          home,
		WorktreeRoots: roots,
		Projects:      projects,
		Private:       private,
		SharedRead:    []string{paths.ToolsDir(), paths.OpencodeConfigFile(), paths.MCPWorkDirs()},
		Writable:      writableRoots(s.writableFolders(set, home), home, private),
		Readable:      notInside(expandHome(set.Sandbox.Readable, home), private),
		Hidden:        expandHome(set.Sandbox.Hidden, home),
		UnixSockets:   set.Sandbox.UnixSockets,
	}
}

// writableFolders are the folders every confined process may write, as
// configured: the build caches that exist (buildFolders), opencode's
// data, state and cache folders (its config folder stays read-only: a
// plugin one agent put there would run in every other agent, and in the
// user's own opencode), and settings sandbox.writable.
func (s *server) writableFolders(set settings.Settings, home string) []string {
	writable := sandbox.Existing(buildFolders(home, s.opts.Getenv)...)
	for _, d := range paths.OpencodeDirs() {
		if d != paths.OpencodeConfigDir() {
			writable = append(writable, d)
		}
	}
	return append(writable, expandHome(set.Sandbox.Writable, home)...)
}

// writableRoots keeps of list the folders that are safe to grant: not
// inside another of them (the parent covers it, and a folder inside a
// writable one can be replaced by a link to anywhere, which the next
// policy would follow), not leading, through links, into another of them
// or to a folder that holds the home folder, and not inside CodeHydra's
// own folders.
func writableRoots(list []string, home string, private []string) []string {
	type cand struct{ clean, real, path string }
	var cands []cand
	resolvedHome := sandbox.Resolve(home)
	for _, p := range list {
		real := sandbox.Resolve(p)
		if real == "" || (resolvedHome != "" && sandbox.Within(resolvedHome, real)) {
			continue // it leads to the home folder or above
		}
		cands = append(cands, cand{filepath.Clean(p), real, p})
	}
	var out []string
	for i, c := range cands {
		nested := false
		for j, q := range cands {
			if i == j {
				continue
			}
			same := q.clean == c.clean || q.real == c.real
			if (same && j < i) || (!same && (sandbox.Within(c.clean, q.clean) || sandbox.Within(c.real, q.real))) {
				nested = true
				break
			}
		}
		if !nested {
			out = append(out, c.path)
		}
	}
	return notInside(out, private)
}

// expandHome is list with "~/" expanded; entries that are not absolute
// then are left out (settings.Validate refuses them).
func expandHome(list []string, home string) []string {
	var out []string
	for _, p := range list {
		if p = settings.ExpandHome(p, home); filepath.IsAbs(p) {
			out = append(out, p)
		}
	}
	return out
}

// buildFolders are the caches that builds write: npm's and the tools'
// caches, Go's module and build caches, cargo's downloads, in the home
// folder (~/.cache, ~/.npm, ~/go/pkg, ~/.cargo/registry, ~/.cargo/git)
// or where the environment moves them (XDG_CACHE_HOME, npm_config_cache,
// GOCACHE, GOMODCACHE, GOPATH, CARGO_HOME). The folders of programs
// (~/go/bin, ~/.cargo/bin, the toolchains of ~/.rustup) are not among
// them: they are on the user's PATH, and a program an agent put there
// would run as the user, outside any sandbox.
func buildFolders(home string, getenv func(string) string) []string {
	dirs := []string{filepath.Join(home, ".cache"), filepath.Join(home, ".npm"), filepath.Join(home, "go", "pkg"),
		filepath.Join(home, ".cargo", "registry"), filepath.Join(home, ".cargo", "git")}
	for _, v := range []string{"XDG_CACHE_HOME", "npm_config_cache", "NPM_CONFIG_CACHE", "GOCACHE", "GOMODCACHE"} {
		if d := getenv(v); filepath.IsAbs(d) {
			dirs = append(dirs, d)
		}
	}
	for _, d := range filepath.SplitList(getenv("GOPATH")) {
		if filepath.IsAbs(d) {
			dirs = append(dirs, filepath.Join(d, "pkg"))
		}
	}
	if d := getenv("CARGO_HOME"); filepath.IsAbs(d) {
		dirs = append(dirs, filepath.Join(d, "registry"), filepath.Join(d, "git"))
	}
	return dirs
}

// guardPATH takes out of this process's PATH the folders that agents may
// write (the caches, opencode's folders, the worktree roots, settings
// sandbox.writable): CodeHydra runs git, opencode, the user's MCP servers
// and editors from PATH outside any sandbox, and a program an agent put
// in one of those folders must not be what it finds. It returns the
// folders taken out.
func (s *server) guardPATH() []string {
	set := s.settings.Get()
	home, _ := os.UserHomeDir()
	unsafe := append(s.writableFolders(set, home), paths.DataDir(), paths.ProjectsDir())
	if set.WorktreeRoot != "" {
		unsafe = append(unsafe, set.WorktreeRoot)
	}
	kept, dropped := sandbox.SafePATH(s.opts.Getenv("PATH"), unsafe)
	if len(dropped) > 0 {
		os.Setenv("PATH", kept)
	}
	return dropped
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
// Its git admin folder is granted only when it is the one git keeps for
// it (<common>/worktrees/<name>, leading back to it): the workspace's
// .git file is its agent's to write, and must not steer a grant
// elsewhere. Without it, nothing of the workspace starts, and its agent's
// state says why.
func (s *server) sandboxWorkspace(_ context.Context, path string) (sandbox.Workspace, error) {
	ws, err := s.manager.Resolve(path)
	if err != nil {
		return sandbox.Workspace{}, err
	}
	// The temporary folder's parents are CodeHydra's own: resolved here,
	// so that a data folder reached through a link of the user's passes
	// Layout.Check.
	w := sandbox.Workspace{Path: ws.Path, Temp: sandbox.Resolve(workspaceTemp(ws.Path))}
	gitDir, common, err := s.manager.GitDirs(ws)
	if err != nil {
		return sandbox.Workspace{}, err
	}
	w.CommonDir, w.GitDir = common, gitDir
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
