package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"codehydra/workspace"
	"codehydra/wsfs"
)

// maxConfinedPath bounds a path argument of a confined server: longer is
// no path the system takes.
const maxConfinedPath = 4096

// The budget of one confined call's check: how many strings its
// arguments may hold, how deep they may nest, and how many path parts
// (symlinks followed included) the check may look at in all. A call past
// them is refused before the server sees it: the check costs a system
// call per part, and a call must not buy minutes of CPU with a megabyte.
const (
	maxConfinedStrings = 10000
	maxConfinedDepth   = 64
	maxConfinedSteps   = 100000
	// maxLinks is how many symlinks one path may pass through, as the
	// system allows (Linux: 40) before ELOOP.
	maxLinks = 40
)

// confinement is what a confined server's call is judged against.
type confinement struct {
	tool, server string
	// ws is the caller's workspace as named; root is it resolved.
	ws, root string
	// workDir is the folder the server resolves a relative path from
	// ("": left to the server).
	workDir string
	// deny is the deny list (wsfs.DefaultDeny and settings
	// workspaceDeny), applied to every path inside the workspace.
	deny []string
	// pathsAllow and pathsDeny are the server's own path rules (settings
	// "paths"), applied after deny: a path must lie under one allow
	// entry, when there are any, and match no deny entry.
	pathsAllow, pathsDeny []string
	// steps counts the path parts looked at, against maxConfinedSteps.
	steps int
}

// errBudget is a call whose check would cost more than its budget.
var errBudget = errors.New("over budget")

// confineArgs refuses a call of a confined server (GatewayTool.Confine)
// when a string of its arguments, at any depth and object keys included,
// names a path outside wsPath, one the deny list refuses, a file with
// more than one name (wsfs.ManyNames), or one the server's own path rules
// refuse (GatewayTool.PathsAllow, PathsDeny): an absolute
// path, a path starting with "~", a file: URI, or a relative path that
// climbs out of workDir (the empty folder the server starts in, where a
// relative path that stays names nothing). A path is judged after
// resolving symlinks and "..", and as written with "..", "." cleaned
// away, since servers do either; both must lie inside the workspace. A
// relative string that names an existing file of the workspace is
// checked against the deny list too, for servers that resolve from their
// root. The check runs within ctx (the call's timeout) and a budget.
//
// It is a check, not a boundary: the server opens the path after it, and
// a symlink swapped in between is not seen. The kernel sandbox that a
// workspace-scoped server's instance runs in is the boundary; on a
// system without one, this is all there is.
func confineArgs(ctx context.Context, tool string, gt GatewayTool, wsPath string, deny []string, args json.RawMessage) error {
	if len(bytes.TrimSpace(args)) == 0 {
		return nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return workspace.Errorf(workspace.CodeInvalidInput, "%s: the arguments are not JSON: %v", tool, err)
	}
	c := &confinement{tool: tool, server: gt.Server, ws: wsPath, root: wsPath, workDir: gt.WorkDir, deny: deny,
		pathsAllow: gt.PathsAllow, pathsDeny: gt.PathsDeny}
	if r, err := filepath.EvalSymlinks(wsPath); err == nil {
		c.root = r
	}
	var verdict error
	strs := 0
	walkStrings(v, "arguments", 0, func(at, s string, depth int) bool {
		strs++
		switch {
		case ctx.Err() != nil:
			verdict = ctx.Err()
		case depth > maxConfinedDepth || strs > maxConfinedStrings:
			verdict = errBudget
		default:
			verdict = c.judge(at, s)
		}
		return verdict == nil
	})
	switch {
	case verdict == nil:
		return nil
	case errors.Is(verdict, errBudget):
		return workspace.Errorf(workspace.CodeInvalidInput,
			"%s belongs to %q, which is confined to your workspace: its arguments are too big to check (at most %d strings, nested at most %d deep, naming at most %d path parts in all); split the call", tool, gt.Server, maxConfinedStrings, maxConfinedDepth, maxConfinedSteps)
	case ctx.Err() != nil:
		return verdict // the caller tells a timeout from a cancellation
	}
	return verdict
}

// judge refuses the string s, found at at, when it names a path outside
// the workspace or one the deny list refuses.
func (c *confinement) judge(at, s string) error {
	if rootedNotAbs(s) {
		// Windows: \x and /x name the current drive's root, C:x the
		// drive's current folder. The workspace's drive is taken for
		// the first; the second cannot be judged, and is refused.
		if filepath.VolumeName(s) != "" {
			return c.outside(at)
		}
		s = filepath.VolumeName(c.root) + s
	}
	p, isPath := pathArg(s)
	if !isPath && c.workDir != "" && s != "" {
		// Relative: from the server's empty folder it names something
		// only if it climbs out. (Join cleans, whatever the length: a
		// long string of "./" must not hide a climb.)
		if j := filepath.Join(c.workDir, s); !pathWithin(c.workDir, j) {
			if len(j) > maxConfinedPath {
				return c.outside(at)
			}
			p, isPath = j, true
		}
	}
	if !isPath {
		return c.denyRelative(at, s)
	}
	if p == "" {
		return c.outside(at)
	}
	resolved, err := c.resolve(p)
	if err != nil {
		return err
	}
	cleaned, err := c.resolve(filepath.Clean(p))
	if err != nil {
		return err
	}
	for _, q := range []string{resolved, cleaned} {
		if q == "" || !pathWithin(c.root, q) {
			return c.outside(at)
		}
		rel, _ := filepath.Rel(c.root, q)
		if err := c.denied(at, filepath.ToSlash(rel)); err != nil {
			return err
		}
	}
	return c.manyNames(at, os.Lstat, resolved)
}

// denyRelative applies the deny list to a relative string that names an
// existing file or folder of the workspace.
func (c *confinement) denyRelative(at, s string) error {
	if s == "" || len(s) > maxConfinedPath || filepath.IsAbs(s) {
		return nil
	}
	rel := filepath.Clean(s)
	if rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil
	}
	if _, err := os.Lstat(filepath.Join(c.root, rel)); err != nil {
		return nil
	}
	if err := c.denied(at, filepath.ToSlash(rel)); err != nil {
		return err
	}
	return c.manyNames(at, os.Stat, filepath.Join(c.root, rel))
}

// manyNames refuses p when stat finds an existing regular file with more
// than one name, which the workspace's file tools do not read either
// (wsfs.ManyNames): another name may lie outside the workspace.
func (c *confinement) manyNames(at string, stat func(string) (os.FileInfo, error), p string) error {
	fi, err := stat(p)
	if err != nil {
		return nil
	}
	if why := wsfs.ManyNames(fi); why != "" {
		return workspace.Errorf(workspace.CodeForbidden,
			"%s belongs to %q, which is confined to your workspace: %s names a file the workspace's tools do not read: %s", c.tool, c.server, at, why)
	}
	return nil
}

func (c *confinement) outside(at string) error {
	return workspace.Errorf(workspace.CodeForbidden,
		"%s belongs to %q, which is confined to your workspace %s: %s names a path outside it (absolute and relative paths, ~ and file: URIs must lie inside the workspace once symlinks and .. are resolved); use an absolute path inside your workspace", c.tool, c.server, c.ws, at)
}

// denied refuses rel (relative to the workspace) when the deny list or
// the server's path rules refuse it.
func (c *confinement) denied(at, rel string) error {
	if pat := wsfs.Denied(c.deny, rel); pat != "" {
		return workspace.Errorf(workspace.CodeForbidden,
			"%s belongs to %q, which is confined to your workspace: %s names %s, which the deny list refuses (it matches %q; settings: workspaceDeny)", c.tool, c.server, at, rel, pat)
	}
	if pat := wsfs.Denied(c.pathsDeny, rel); pat != "" {
		return workspace.Errorf(workspace.CodeForbidden,
			"%s belongs to %q, which is confined to your workspace: %s names %s, which its paths.deny rule %q refuses (settings: mcpServers.%s.paths)", c.tool, c.server, at, rel, pat, c.server)
	}
	if len(c.pathsAllow) > 0 && wsfs.Under(c.pathsAllow, rel) == "" {
		return workspace.Errorf(workspace.CodeForbidden,
			"%s belongs to %q, which is confined to your workspace: %s names %s, which lies under none of its paths.allow rules (%s; settings: mcpServers.%s.paths): name a path under one of them", c.tool, c.server, at, rel, quoteAll(c.pathsAllow), c.server)
	}
	return nil
}

// quoteAll is the strings quoted, separated by commas.
func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// walkStrings calls fn with every string of v (object keys included),
// where it is and how deep, until fn returns false; it reports whether it
// went through.
func walkStrings(v any, at string, depth int, fn func(at, s string, depth int) bool) bool {
	switch v := v.(type) {
	case string:
		return fn(at, v, depth)
	case []any:
		for i, e := range v {
			if !walkStrings(e, at+"["+strconv.Itoa(i)+"]", depth+1, fn) {
				return false
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			name := k
			if len(name) > 64 { // the client chose it; the message repeats it
				name = name[:64] + "…"
			}
			if !fn("the key "+strconv.Quote(name)+" of "+at, k, depth+1) || !walkStrings(v[k], at+"."+name, depth+1, fn) {
				return false
			}
		}
	}
	return true
}

// pathArg says whether s names a path for confinement, and which
// (absolute, not yet cleaned); "" when it names one that cannot be judged
// (another user's ~, a file: URI of another host, too long), which is
// refused.
func pathArg(s string) (path string, isPath bool) {
	switch {
	case len(s) >= 5 && strings.EqualFold(s[:5], "file:"):
		u, err := url.Parse(s)
		if err != nil || u.Opaque != "" || u.Host != "" && !strings.EqualFold(u.Host, "localhost") || !filepath.IsAbs(filepath.FromSlash(u.Path)) {
			return "", true
		}
		s = filepath.FromSlash(u.Path)
	case strings.HasPrefix(s, "~"):
		rest, ok := strings.CutPrefix(s, "~")
		home, err := os.UserHomeDir()
		if err != nil || !ok || rest != "" && !strings.HasPrefix(rest, "/") && !strings.HasPrefix(rest, string(filepath.Separator)) {
			return "", true
		}
		s = home + rest
	case !filepath.IsAbs(s):
		return "", false
	}
	if len(s) > maxConfinedPath {
		return "", true
	}
	return s, true
}

// resolve resolves the symlinks and ".." of the absolute path p as far
// as it exists, walking it once from the top in the order the system
// does (a ".." after a symlink leaves the symlink's target), and appends
// the rest, cleaned. It is "" for a path the system would not resolve
// (a loop of links, a link it cannot read), and errBudget past the
// call's budget.
func (c *confinement) resolve(p string) (string, error) {
	vol := filepath.VolumeName(p)
	top := vol + string(filepath.Separator)
	parts := splitPath(p[len(vol):])
	cur, links := top, 0
	for i := 0; i < len(parts); i++ {
		if c.steps++; c.steps > maxConfinedSteps {
			return "", errBudget
		}
		part := parts[i]
		if part == ".." {
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		if err != nil {
			// The rest does not exist: the system would create or
			// refuse it there.
			return filepath.Join(append([]string{cur}, parts[i:]...)...), nil
		}
		// A symlink, or on Windows a junction or another reparse point
		// (which Go reports as irregular): followed, or refused.
		if fi.Mode()&(os.ModeSymlink|os.ModeIrregular) == 0 {
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return "", nil
		}
		target, err := os.Readlink(next)
		if err != nil || len(target) > maxConfinedPath {
			return "", nil
		}
		if filepath.IsAbs(target) {
			tv := filepath.VolumeName(target)
			cur, target = tv+string(filepath.Separator), target[len(tv):]
		}
		parts = append(splitPath(target), parts[i+1:]...)
		i = -1
	}
	return cur, nil
}

// splitPath is p's parts, without empty ones and ".".
func splitPath(p string) []string {
	var out []string
	for part := range strings.SplitSeq(filepath.ToSlash(p), "/") {
		if part != "" && part != "." {
			out = append(out, part)
		}
	}
	return out
}

// rootedNotAbs says whether s is a path that Windows takes from a root
// but filepath.IsAbs does not call absolute: \x, /x, C:x.
func rootedNotAbs(s string) bool {
	if runtime.GOOS != "windows" || filepath.IsAbs(s) {
		return false
	}
	return filepath.VolumeName(s) != "" || strings.HasPrefix(s, `\`) || strings.HasPrefix(s, "/")
}

// pathWithin says whether p is root or lies under it.
func pathWithin(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && !filepath.IsAbs(rel) && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
