package wsfs

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"codehydra/workspace"
)

// MaxDepth bounds how deep one listing goes; MaxEntries how many entries
// it returns.
const (
	MaxDepth   = 10
	MaxEntries = 5000
)

// Entry is one file, folder or symlink of a listing.
type Entry struct {
	// Path is relative to the workspace, slash-separated.
	Path string `json:"path" jsonschema:"relative to the workspace"`
	// Type is file, dir or symlink; a symlink is never followed.
	Type string `json:"type" jsonschema:"file, dir or symlink (never followed)"`
	// Size is a file's size in bytes (a symlink's: its target's name).
	Size int64 `json:"size,omitempty" jsonschema:"size in bytes of a file"`
}

// Listing is a folder's entries.
type Listing struct {
	Path    string  `json:"path" jsonschema:"the folder listed, relative to the workspace"`
	Entries []Entry `json:"entries" jsonschema:"entries sorted by path; folders without a file git would list (empty, or all ignored) are left out"`
	// Truncated says that entries past MaxEntries were left out.
	Truncated bool `json:"truncated,omitempty" jsonschema:"true: more entries than the 5000 returned; list a subfolder"`
}

// List lists the folder p ("" or "." for the top) down to depth levels
// (0: 1; at most MaxDepth). It lists what git would: tracked files and
// untracked ones that .gitignore (and the other exclude files) do not
// ignore, asking git itself (git ls-files) rather than reading
// .gitignore its own way; entries the deny list names are left out.
func (f *FS) List(ctx context.Context, p string, depth int) (Listing, error) {
	if depth < 0 {
		return Listing{}, workspace.Errorf(workspace.CodeInvalidInput, "depth must be 1 or more")
	}
	if depth == 0 {
		depth = 1
	}
	depth = min(depth, MaxDepth)
	if p == "" {
		p = "."
	}
	r, root, info, err := f.open(p)
	if err != nil {
		return Listing{}, err
	}
	defer root.Close()
	if !info.IsDir() {
		return Listing{}, workspace.Errorf(workspace.CodeInvalidInput, "%s is not a folder: read it with workspace_read_file", p)
	}
	files, err := f.lsFiles(ctx, r.rel)
	if err != nil {
		return Listing{}, err
	}
	// git lists tracked files before untracked ones; sorted, a listing cut
	// at MaxEntries is the same at every call.
	slices.Sort(files)
	out := Listing{Path: r.rel, Entries: []Entry{}}
	seen := map[string]bool{}
	for _, file := range files {
		name, isDir := entryAt(r.rel, file, depth)
		if name == "" || seen[name] || Denied(f.deny, name) != "" {
			continue
		}
		seen[name] = true
		info, err := root.Lstat(name)
		if err != nil {
			continue // tracked but deleted from the worktree
		}
		e := Entry{Path: name, Type: "file"}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			e.Type = "symlink"
		case info.IsDir() || isDir:
			e.Type = "dir"
		case info.Mode().IsRegular():
			e.Size = info.Size()
		}
		if len(out.Entries) == MaxEntries {
			out.Truncated = true
			break
		}
		out.Entries = append(out.Entries, e)
	}
	return out, nil
}

// entryAt is the entry that file (a path git listed under dir) shows as
// at depth levels below dir: the file itself, or the folder at that depth
// that holds it (isDir).
func entryAt(dir, file string, depth int) (name string, isDir bool) {
	sub := file
	if dir != "." {
		var ok bool
		if sub, ok = strings.CutPrefix(file, dir+"/"); !ok {
			return "", false
		}
	}
	parts := strings.SplitN(sub, "/", depth+1)
	if len(parts) > depth {
		parts, isDir = parts[:depth], true
	}
	name = strings.Join(parts, "/")
	if dir != "." {
		name = dir + "/" + name
	}
	return name, isDir
}

// lsFiles asks git for the files under dir that it tracks or would
// track: cached, and untracked but not ignored. -z keeps odd names whole.
func (f *FS) lsFiles(ctx context.Context, dir string) ([]string, error) {
	args := []string{"ls-files", "-z", "--cached", "--others", "--exclude-standard", "--full-name", "--", dir}
	if dir == "." {
		args = args[:len(args)-2]
	}
	out, err := f.git(ctx, args...)
	if err != nil {
		return nil, err
	}
	files := strings.Split(strings.TrimSuffix(out, "\x00"), "\x00")
	if len(files) == 1 && files[0] == "" {
		return nil, nil
	}
	return files, nil
}

// git runs git in the workspace and returns its output. Optional locks are
// off: a listing must not take the index lock an agent's commit needs.
func (f *FS) git(ctx context.Context, args ...string) (string, error) {
	// Literal pathspecs: a folder named "*" lists that folder, not a glob.
	out, err := f.run(ctx, f.dir, []string{"GIT_OPTIONAL_LOCKS=0", "GIT_LITERAL_PATHSPECS=1"}, args...)
	if err != nil {
		return "", fmt.Errorf("git %s in %s: %w", strings.Join(args, " "), f.dir, err)
	}
	return out, nil
}
