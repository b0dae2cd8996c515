package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Layout is what every workspace's policy shares: where the system, the
// home folder and CodeHydra's own folders are, and the user's settings.
// Paths are absolute; For resolves symbolic links.
type Layout struct {
	// Home is the user's home folder: never a workspace, nor inside one.
	Home string
	// WorktreeRoots are the folders where CodeHydra makes worktrees: the
	// only places inside Private where a workspace may be.
	WorktreeRoots []string
	// Projects are the projects' main checkouts and git folders: a
	// workspace may lie inside a main checkout, never hold one.
	Projects []string
	// Private are CodeHydra's own folders (config, data, state, runtime,
	// cache): cut out of every grant.
	Private []string
	// SharedRead are read grants inside Private that every confined
	// process gets: the tools folder (the opencode that setup installed),
	// the OpenCode config file CodeHydra writes and the folder that holds
	// the empty folder workspace-scoped MCP servers start in.
	SharedRead []string
	// Writable are folders every confined process may write: the build
	// and tool caches and opencode's own folders, and settings
	// sandbox.writable. Those that do not exist are left out.
	Writable []string
	// Readable are settings sandbox.readable, read grants beside the
	// system's. An entry that names a Hidden folder re-opens it; one
	// inside a Hidden or Private folder is an exception in it.
	Readable []string
	// Hidden are more folders cut out of every grant: settings
	// sandbox.hidden (the user's credentials by default) and a
	// worktree root of the user's own.
	Hidden []string
	// UnixSockets lets confined processes connect to unix sockets by
	// path outside their sandbox: settings sandbox.unixSockets (see
	// Policy.UnixSockets).
	UnixSockets bool
}

// Workspace is what one workspace's policy is about.
type Workspace struct {
	// Path is the workspace's folder: written.
	Path string
	// GitDir is its worktree's admin folder (<common>/worktrees/<name>):
	// written (HEAD, index, its own logs and config.worktree).
	GitDir string
	// CommonDir is the repository's shared git folder: read, and only
	// its objects, refs and logs written, so that commits work while its
	// config and hooks (which git runs outside any sandbox) stay as they
	// are.
	CommonDir string
	// Temp is the workspace's own temporary folder (its TMPDIR): written.
	Temp string
	// Others are the other workspaces CodeHydra knows: cut out.
	Others []string
}

// devices are the device files a shell and its tools write to, and the
// terminals.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/pts"}

// For is the policy of the processes of workspace w: read the system
// and the home folder but what l and w cut out; write w's folder, its
// temporary folder, the git folders a commit writes and l's writable
// folders; use the terminals and /dev/null.
func (l Layout) For(w Workspace) Policy {
	p := Policy{UnixSockets: l.UnixSockets}
	grant := func(a Access, paths ...string) {
		for _, path := range paths {
			if path = Resolve(path); path != "" {
				p.Grants = append(p.Grants, Grant{Path: path, Access: a})
			}
		}
	}
	grant(Read, string(filepath.Separator))
	grant(Read, l.Readable...)
	grant(Read, l.SharedRead...)
	grant(Write, l.Writable...)
	grant(Write, "/dev/shm")
	grant(Device, devices...)
	// The workspace's own paths are taken as they are, not resolved again:
	// Plan checked that they hold no link, and a link put in since (the
	// workspace's folder comes from records its agent can touch) must not
	// steer a grant; the helper refuses a path with a link in it.
	exact := func(a Access, paths ...string) {
		for _, path := range paths {
			if isAbsClean(path) {
				p.Grants = append(p.Grants, Grant{Path: path, Access: a})
			}
		}
	}
	exact(Write, w.Path, w.Temp)
	exact(GitWrite, w.GitDir)
	if w.CommonDir != "" {
		for _, sub := range []string{"objects", "refs", "logs"} {
			grant(GitWrite, filepath.Join(w.CommonDir, sub))
		}
	}
	// A grant of exactly a denied folder grants nothing (see Expand): the
	// hidden folders that settings sandbox.readable names are not denied,
	// so that the user can re-open one of the default credential stores.
	var readable []string
	for _, r := range l.Readable {
		readable = append(readable, Resolve(r))
	}
	hidden := slices.DeleteFunc(slices.Clone(l.Hidden), func(d string) bool { return slices.Contains(readable, Resolve(d)) })
	for _, d := range slices.Concat(l.Private, hidden, w.Others) {
		if d = Resolve(d); d != "" && !slices.Contains(p.Deny, d) {
			p.Deny = append(p.Deny, d)
		}
	}
	return p
}

// Check refuses a workspace whose folder must not be written by its
// processes: the root, the home folder, a folder that holds CodeHydra's
// own or hidden folders or another workspace, or a folder inside them
// (CodeHydra's data folder only where CodeHydra makes worktrees). The
// workspace's folder comes from git's records, which its own agent can
// touch; this is the last word on what it may be.
func (l Layout) Check(w Workspace) error {
	ws := w.Path
	if !isAbsClean(ws) || ws == string(filepath.Separator) {
		return fmt.Errorf("workspace folder %q cannot be confined to", w.Path)
	}
	if real := Resolve(ws); real != ws {
		return fmt.Errorf("workspace folder %s leads through a link to %s; CodeHydra does not let an agent write it", ws, real)
	}
	for _, p := range []string{w.Temp, w.GitDir} {
		if p != "" && Resolve(p) != p {
			return fmt.Errorf("%s leads through a link; CodeHydra does not let an agent write it", p)
		}
	}
	for _, d := range slices.Concat([]string{l.Home}, l.Private, l.Hidden, l.SharedRead, l.Projects, w.Others) {
		if d = Resolve(d); d != "" && Within(d, ws) {
			return fmt.Errorf("workspace folder %s holds %s; CodeHydra does not let an agent write it", ws, d)
		}
	}
	for _, d := range slices.Concat(l.Writable, []string{"/dev/shm"}) {
		if d = Resolve(d); d != "" && Within(ws, d) {
			return fmt.Errorf("workspace folder %s is inside %s, which every agent may write; CodeHydra does not take it as a workspace", ws, d)
		}
	}
	inRoot := slices.ContainsFunc(l.WorktreeRoots, func(r string) bool {
		r = Resolve(r)
		return r != "" && r != ws && Within(ws, r)
	})
	for _, d := range l.Private {
		if d = Resolve(d); d != "" && Within(ws, d) && !inRoot {
			return fmt.Errorf("workspace folder %s is inside %s; CodeHydra does not let an agent write it", ws, d)
		}
	}
	for _, d := range l.Hidden {
		if d = Resolve(d); d != "" && Within(ws, d) {
			return fmt.Errorf("workspace folder %s is inside %s; CodeHydra does not let an agent write it", ws, d)
		}
	}
	return nil
}

// Resolve returns path absolute and clean with its symbolic links
// resolved, as far as it exists (the rest is appended as given); "" for
// a relative or empty path.
func Resolve(path string) string {
	if path == "" || !filepath.IsAbs(path) {
		return ""
	}
	path = filepath.Clean(path)
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	parent := filepath.Dir(path)
	if parent == path {
		return path
	}
	if rp := Resolve(parent); rp != "" {
		return filepath.Join(rp, filepath.Base(path))
	}
	return path
}

// Existing returns the paths that exist, for defaults such as the
// caches that are granted only when present.
func Existing(paths ...string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// Plan is how the processes of one workspace start.
type Plan struct {
	// Policy confines them; nil when they are not confined, and Status
	// then says why.
	Policy *Policy
	// Status is what confining them enforces (from Probe), or why they
	// are not confined.
	Status Status
	// Env is added to their environment: TMPDIR, their own temporary
	// folder.
	Env []string
}

// Confiner plans the confinement of each workspace's processes from the
// settings' mode, the shared layout and what it learns of the workspace.
type Confiner struct {
	Mode   Mode
	Layout Layout
	// Workspace describes the workspace at path: its git folders, its
	// temporary folder and the other workspaces. Temp is made (0700)
	// when it does not exist.
	Workspace func(ctx context.Context, path string) (Workspace, error)
	// Probe says what this system can enforce (nil: the package's Probe).
	Probe func() Status
}

// Plan is the plan for the processes of the workspace at path. Its error
// keeps them from starting: the mode is "required" and this system
// cannot confine them, or the workspace's policy cannot be made.
func (c *Confiner) Plan(ctx context.Context, path string) (Plan, error) {
	if c == nil || c.Mode == ModeOff {
		return Plan{Status: Status{Reason: "not confined: the sandbox is off in the settings"}}, nil
	}
	probe := Probe
	if c.Probe != nil {
		probe = c.Probe
	}
	st := probe()
	if c.Layout.UnixSockets {
		st = st.WithUnixSockets()
	}
	if !st.Enforced {
		if c.Mode == ModeRequired {
			return Plan{}, fmt.Errorf("%s, and the settings require the sandbox (sandbox mode %q)", st.Reason, ModeRequired)
		}
		return Plan{Status: st}, nil
	}
	w, err := c.Workspace(ctx, path)
	if err == nil {
		err = c.Layout.Check(w)
	}
	if err != nil {
		return Plan{}, fmt.Errorf("cannot confine the processes of %s: %w", path, err)
	}
	if w.Temp != "" {
		if err := os.MkdirAll(w.Temp, 0o700); err != nil {
			return Plan{}, fmt.Errorf("cannot confine the processes of %s: make its temporary folder: %w", path, err)
		}
	}
	pol := c.Layout.For(w)
	plan := Plan{Policy: &pol, Status: st}
	if w.Temp != "" {
		plan.Env = []string{"TMPDIR=" + w.Temp}
	}
	return plan, nil
}

// SafePATH returns path without its entries that lie in one of unsafe
// (or are relative), and the entries it left out.
func SafePATH(path string, unsafe []string) (kept string, dropped []string) {
	var keep []string
	for _, e := range filepath.SplitList(path) {
		r := Resolve(e)
		bad := r == ""
		for _, u := range unsafe {
			if ur := Resolve(u); ur != "" && (Within(r, ur) || Within(filepath.Clean(e), filepath.Clean(u))) {
				bad = true
			}
		}
		if bad {
			dropped = append(dropped, e)
			continue
		}
		keep = append(keep, e)
	}
	return strings.Join(keep, string(filepath.ListSeparator)), dropped
}
