package mcp

import (
	"bytes"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"codehydra/workspace"
)

// maxConfinedPath bounds a path argument of a confined server: longer is
// no path the system takes, and resolving it would cost a call per part.
const maxConfinedPath = 4096

// confineArgs refuses a call of a confined server (GatewayTool.Confine)
// when a string of its arguments, at any depth and object keys included,
// names a path outside wsPath: an absolute path, a path starting with "~"
// or a file: URI. A path is judged after resolving symlinks and "..", and
// as written with "..", "." cleaned away, since servers do either; both
// must lie inside the workspace. Relative paths are left to the server.
func confineArgs(tool, server, wsPath string, args json.RawMessage) error {
	if len(bytes.TrimSpace(args)) == 0 {
		return nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return workspace.Errorf(workspace.CodeInvalidInput, "%s: the arguments are not JSON: %v", tool, err)
	}
	root := wsPath
	if r, err := filepath.EvalSymlinks(wsPath); err == nil {
		root = r
	}
	bad := ""
	walkStrings(v, "arguments", func(at, s string) bool {
		if p, isPath := pathArg(s); isPath && (p == "" || !insideResolved(root, p)) {
			bad = at
			return false
		}
		return true
	})
	if bad != "" {
		return workspace.Errorf(workspace.CodeForbidden,
			"%s belongs to %q, which is confined to your workspace %s: %s names a path outside it (absolute paths, ~ and file: URIs must lie inside the workspace once symlinks and .. are resolved); use a path inside your workspace", tool, server, wsPath, bad)
	}
	return nil
}

// walkStrings calls fn with every string of v (object keys included) and
// where it is, until fn returns false; it reports whether it went through.
func walkStrings(v any, at string, fn func(at, s string) bool) bool {
	switch v := v.(type) {
	case string:
		return fn(at, v)
	case []any:
		for i, e := range v {
			if !walkStrings(e, at+"["+strconv.Itoa(i)+"]", fn) {
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
			if !fn("the key "+strconv.Quote(name)+" of "+at, k) || !walkStrings(v[k], at+"."+name, fn) {
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

// insideResolved says whether the absolute path p lies inside root (a
// resolved folder) both as resolved and as cleaned first.
func insideResolved(root, p string) bool {
	return pathWithin(root, resolveExisting(p)) && pathWithin(root, resolveExisting(filepath.Clean(p)))
}

// resolveExisting resolves the symlinks and ".." of the longest part of p
// that exists, in the order the system does (a ".." after a symlink leaves
// the symlink's target), and appends the rest, cleaned.
func resolveExisting(p string) string {
	vol := filepath.VolumeName(p)
	parts := strings.Split(p[len(vol):], string(filepath.Separator))
	for n := len(parts); n > 0; n-- {
		head := vol + strings.Join(parts[:n], string(filepath.Separator))
		if head == vol {
			head += string(filepath.Separator)
		}
		if r, err := filepath.EvalSymlinks(head); err == nil {
			return filepath.Join(append([]string{r}, parts[n:]...)...)
		}
	}
	return filepath.Clean(p)
}

// pathWithin says whether p is root or lies under it.
func pathWithin(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && !filepath.IsAbs(rel) && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
