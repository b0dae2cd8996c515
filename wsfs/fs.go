// Package wsfs reads and lists the files of one workspace for its MCP
// tools, confined to the workspace's folder: paths are opened through
// os.Root, so neither "..", an absolute path elsewhere nor a symlink that
// leads out reaches another file, and a deny list keeps secrets (git's
// own files, .env files, keys) out of reach even inside the workspace.
package wsfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"

	"codehydra/workspace"
)

// DefaultDeny are the patterns no workspace tool reads or lists, whatever
// the settings add: git's own files (hooks, config with credentials,
// objects), environment files and private keys.
var DefaultDeny = []string{".git/", ".env*", "*.pem", "*.key", "id_*"}

// MsgOutside is the message of every path refused for leading out of
// the workspace.
const MsgOutside = "Path outside workspace"

// FS is one workspace's folder as its tools see it.
type FS struct {
	dir  string
	deny []string
	run  GitRunner
}

// GitRunner runs git with args in dir, with env added, and returns its
// stdout: workspace.Manager.Git, which runs it pinned to the workspace's
// own git folders and with none of the programs a repository's config
// names (the workspace's agent can write its .git file and its
// worktree's folder in the repository; a plain git there would run what
// they say, outside any sandbox).
type GitRunner func(ctx context.Context, dir string, env []string, args ...string) (string, error)

// New returns the confined view of the workspace at dir (absolute, its
// symlinks resolved) with DefaultDeny and the extra patterns of the
// settings (see Denied for their syntax), whose listings and logs ask git
// through run.
func New(dir string, extraDeny []string, run GitRunner) *FS {
	return &FS{dir: dir, deny: DenyPatterns(extraDeny), run: run}
}

// DenyPatterns is DefaultDeny with the settings' extra patterns: what no
// workspace tool reads, nor a confined gateway server's path names.
func DenyPatterns(extra []string) []string {
	return append(append([]string{}, DefaultDeny...), extra...)
}

// Dir is the workspace's folder.
func (f *FS) Dir() string { return f.dir }

// Denied returns the first deny pattern that matches rel (a clean,
// slash-separated path relative to the workspace), or "". A pattern
// ending in "/" names a folder (or file) of that name at any depth and
// everything under it; a pattern without "/" is matched (path.Match)
// against each element of the path, so "*.pem" refuses a.pem anywhere
// and everything in a folder named x.pem; a pattern with an inner "/" is
// matched against the whole path from the workspace's top and refuses
// what lies under a match.
func Denied(patterns []string, rel string) string {
	return denied(patterns, rel, foldCase)
}

// Under returns the first pattern that rel (a clean, slash-separated path
// relative to the workspace) is or lies under, or "": a pattern is a path
// from the workspace's top, matched (path.Match) part by part, so "src/"
// holds src and all in it, "docs/*.md" each .md file of docs and what a
// folder of that name holds; the workspace itself lies under none.
func Under(patterns []string, rel string) string {
	if rel == "." || rel == "" {
		return ""
	}
	if foldCase {
		rel = strings.ToLower(rel)
	}
	elems := strings.Split(rel, "/")
	for _, p := range patterns {
		pat := strings.TrimSuffix(p, "/")
		if foldCase {
			pat = strings.ToLower(pat)
		}
		n := strings.Count(pat, "/") + 1
		if n > len(elems) {
			continue
		}
		if ok, _ := path.Match(pat, strings.Join(elems[:n], "/")); ok {
			return p
		}
	}
	return ""
}

// foldCase says that names differing only in case are one file, as on the
// default file systems of macOS (APFS) and Windows (NTFS): there ".ENV"
// opens .env, so the deny list must refuse it too.
var foldCase = runtime.GOOS == "darwin" || runtime.GOOS == "windows"

func denied(patterns []string, rel string, fold bool) string {
	if rel == "." || rel == "" {
		return ""
	}
	if fold {
		rel = strings.ToLower(rel)
	}
	elems := strings.Split(rel, "/")
	for _, p := range patterns {
		pat := p
		if fold {
			pat = strings.ToLower(p)
		}
		name, isDir := strings.CutSuffix(pat, "/")
		if !strings.Contains(name, "/") {
			for _, e := range elems {
				if ok, _ := path.Match(name, e); ok || (isDir && e == name) {
					return p
				}
			}
			continue
		}
		for i := range elems {
			if ok, _ := path.Match(name, strings.Join(elems[:i+1], "/")); ok {
				return p
			}
		}
	}
	return ""
}

// ManyNames says why a workspace's tools do not read the file info
// describes: a regular file with more than one name (hard links), another
// of which may lie outside the workspace, where a file of the user's
// would be read through it. "" for any other file, and on Windows, where
// the count is not read.
func ManyNames(info fs.FileInfo) string {
	if n := hardLinks(info); info.Mode().IsRegular() && n > 1 {
		return fmt.Sprintf("it has %d names (hard links): another of them may lie outside the workspace, where a file of the user's would be read through it", n)
	}
	return ""
}

// Withheld says why a diff of the workspace must not show the file rel
// (slash-separated, relative to the workspace, as git names it): the deny
// list refuses it, or it has more than one name (ManyNames); "" when it
// may be shown. A file that is not there (deleted) is judged by the deny
// list alone.
func (f *FS) Withheld(rel string) string {
	if pat := Denied(f.deny, rel); pat != "" {
		return fmt.Sprintf("the deny list refuses it (it matches %q)", pat)
	}
	root, err := os.OpenRoot(f.dir)
	if err != nil {
		return "the workspace cannot be opened to look at it"
	}
	defer root.Close()
	info, err := root.Lstat(filepath.FromSlash(rel))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ""
	case err != nil:
		return "it cannot be looked at inside the workspace"
	}
	return ManyNames(info)
}

// resolved is a path the caller gave, checked: rel is where it really is
// (symlinks inside the workspace followed), relative and slash-separated.
type resolved struct {
	asked string
	rel   string
}

// resolve checks a path the caller gave and finds where it leads. It
// refuses names with NUL or line breaks, paths that lead out of the
// workspace (also through symlinks) and paths the deny list names, before
// or after their symlinks are followed, so that a link to .env is refused
// like .env itself.
func (f *FS) resolve(p string) (resolved, error) {
	if strings.ContainsAny(p, "\x00\n\r") {
		return resolved{}, workspace.Errorf(workspace.CodeInvalidInput, "the path %q holds a NUL or a line break: no file of the workspace is named so", p)
	}
	rel := p
	if filepath.IsAbs(p) {
		r, err := filepath.Rel(f.dir, filepath.Clean(p))
		if err != nil {
			return resolved{}, workspace.Errorf(workspace.CodeForbidden, "%s: %s", MsgOutside, p)
		}
		rel = r
	}
	rel = filepath.ToSlash(filepath.Clean(filepath.FromSlash(rel)))
	if rel == ".." || strings.HasPrefix(rel, "../") || path.IsAbs(rel) {
		return resolved{}, workspace.Errorf(workspace.CodeForbidden, "%s: %s", MsgOutside, p)
	}
	if err := f.checkDeny(p, rel); err != nil {
		return resolved{}, err
	}
	real, err := filepath.EvalSymlinks(filepath.Join(f.dir, filepath.FromSlash(rel)))
	if errors.Is(err, fs.ErrNotExist) {
		return resolved{}, workspace.Errorf(workspace.CodeInvalidInput, "%s does not exist in the workspace; list a folder with workspace_list_directory", p)
	}
	if err != nil {
		return resolved{}, fmt.Errorf("resolve %s in %s: %w", p, f.dir, err)
	}
	realRel, err := filepath.Rel(f.dir, real)
	realRel = filepath.ToSlash(realRel)
	if err != nil || realRel == ".." || strings.HasPrefix(realRel, "../") {
		return resolved{}, workspace.Errorf(workspace.CodeForbidden, "%s: %s", MsgOutside, p)
	}
	if err := f.checkDeny(p, realRel); err != nil {
		return resolved{}, err
	}
	return resolved{asked: p, rel: realRel}, nil
}

func (f *FS) checkDeny(asked, rel string) error {
	if pat := Denied(f.deny, rel); pat != "" {
		return workspace.Errorf(workspace.CodeForbidden, "Path denied by the deny list: %s matches %q (settings: workspaceDeny)", asked, pat)
	}
	return nil
}

// open resolves p, opens the workspace as an os.Root and looks at what p
// is, without opening it. Every open goes through the root, so a symlink
// swapped in after resolve still cannot lead out. The caller closes root.
func (f *FS) open(p string) (resolved, *os.Root, fs.FileInfo, error) {
	r, err := f.resolve(p)
	if err != nil {
		return resolved{}, nil, nil, err
	}
	root, err := os.OpenRoot(f.dir)
	if err != nil {
		return resolved{}, nil, nil, fmt.Errorf("open the workspace %s: %w", f.dir, err)
	}
	info, err := root.Lstat(r.rel)
	if err != nil {
		root.Close()
		return resolved{}, nil, nil, rootError(p, err)
	}
	return r, root, info, nil
}

// rootError turns an os.Root refusal into the caller's error.
func rootError(asked string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "path escapes") {
		return workspace.Errorf(workspace.CodeForbidden, "%s: %s", MsgOutside, asked)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return workspace.Errorf(workspace.CodeInvalidInput, "%s does not exist in the workspace", asked)
	}
	return fmt.Errorf("open %s: %w", asked, err)
}
