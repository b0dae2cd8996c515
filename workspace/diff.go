package workspace

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// What a diff answers at the most: the patch comes in pages of MaxBytes
// (DefaultDiffBytes unless asked, at most MaxDiffBytes), and at most
// MaxDiffFiles files are listed.
const (
	DefaultDiffBytes = 64 << 10
	MaxDiffBytes     = 1 << 20
	MaxDiffFiles     = 2000
)

// DiffOptions choose the page of a workspace's diff.
type DiffOptions struct {
	// File limits the patch to one file, a path relative to the workspace
	// as Diff.Files names it; "" for every file.
	File string
	// Offset is where in the patch (in bytes) the page starts.
	Offset int
	// MaxBytes is the most patch bytes the page holds; 0 means
	// DefaultDiffBytes.
	MaxBytes int
	// Withhold, when set, says why a file (by either path of a rename)
	// must not be shown, "" when it may: its change is then listed as
	// Withheld, with no counts and that reason, and left out of the patch.
	// The file tools' deny list, and files with another name outside the
	// workspace (see wsfs.FS.Withheld).
	Withhold func(path string) string
}

// FileChange is one file a workspace changed against its base.
type FileChange struct {
	Path string `json:"path"`
	// OldPath is where a renamed file was.
	OldPath string `json:"oldPath,omitempty"`
	// Status is added, modified, deleted or renamed.
	Status    string `json:"status"`
	Additions int    `json:"additions"`
	Deletions int    `json:"deletions"`
	// Binary files have no line counts, and the patch only says that they
	// differ.
	Binary bool `json:"binary,omitempty"`
	// Withheld files are left out of the patch (DiffOptions.Withhold);
	// Why says why.
	Withheld bool   `json:"withheld,omitempty"`
	Why      string `json:"why,omitempty"`
}

// Diff is what a workspace changed against its base: the commits since
// the merge-base with its base branch, and what is not committed yet,
// untracked files included (those git ignores are not).
type Diff struct {
	Base      string       `json:"base"`
	MergeBase string       `json:"mergeBase"`
	Files     []FileChange `json:"files"`
	// FilesTruncated says that more than MaxDiffFiles files changed and
	// only the first are listed.
	FilesTruncated bool `json:"filesTruncated,omitempty"`
	// Patch is the page of the unified patch from Offset; NextOffset is
	// where the next page starts, 0 when this one reaches the end, and
	// TotalBytes the whole patch's size.
	Patch      string `json:"patch"`
	Offset     int    `json:"offset"`
	NextOffset int    `json:"nextOffset,omitempty"`
	TotalBytes int    `json:"totalBytes"`
}

// Diff compares the workspace at wsPath with its base. It reads the
// working tree through an index of its own, made from HEAD in a temporary
// file, so that untracked files count as added and no file of the
// workspace, its index included, is written (git may store its empty
// blob). No external diff or text conversion runs.
func (m *Manager) Diff(ctx context.Context, wsPath string, o DiffOptions) (Diff, error) {
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultDiffBytes
	}
	switch {
	case o.MaxBytes < 0 || o.MaxBytes > MaxDiffBytes:
		return Diff{}, Errorf(CodeInvalidInput, "maxBytes must be 1 to %d", MaxDiffBytes)
	case o.Offset < 0:
		return Diff{}, Errorf(CodeInvalidInput, "offset must not be negative")
	}
	file, err := diffFile(o.File)
	if err != nil {
		return Diff{}, err
	}
	ws, p, err := m.resolve(wsPath)
	if err != nil {
		return Diff{}, err
	}
	base := m.baseOf(ctx, p, ws.Branch)
	if err := validateBase(base); err != nil {
		return Diff{}, Errorf(CodeInvalidInput, "the workspace has no base to compare with (%v); set its metadata key base", err)
	}
	mb, err := m.git.run(ctx, ws.Path, "merge-base", "--end-of-options", base, "HEAD")
	if err != nil {
		return Diff{}, classify(err, CodeInvalidInput, "%s and the workspace's HEAD have no commit in common", base)
	}
	d := Diff{Base: base, MergeBase: strings.TrimSpace(mb), Offset: o.Offset}

	index, err := m.diffIndex(ctx, ws.Path)
	if err != nil {
		return Diff{}, err
	}
	defer os.Remove(index)
	env := []string{"GIT_INDEX_FILE=" + index}
	diff := []string{"diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M"}

	stat, err := m.git.runEnv(ctx, ws.Path, env, append(diff, "--numstat", "-z", d.MergeBase)...)
	if err != nil {
		return Diff{}, classify(err, CodeInternal, "cannot compare %s with %s", ws.Path, base)
	}
	status, err := m.git.runEnv(ctx, ws.Path, env, append(diff, "--name-status", "-z", d.MergeBase)...)
	if err != nil {
		return Diff{}, classify(err, CodeInternal, "cannot compare %s with %s", ws.Path, base)
	}
	d.Files = parseFileChanges(stat, status)

	args := append(diff, d.MergeBase, "--")
	if file != "" {
		args = append(args, file)
	} else {
		args = append(args, ".")
	}
	for i, f := range d.Files {
		if o.Withhold == nil {
			break
		}
		why := o.Withhold(f.Path)
		if why == "" && f.OldPath != "" {
			why = o.Withhold(f.OldPath)
		}
		if why != "" {
			d.Files[i] = FileChange{Path: f.Path, OldPath: f.OldPath, Status: f.Status, Withheld: true, Why: why}
			for _, p := range []string{f.Path, f.OldPath} {
				if p != "" {
					args = append(args, ":(exclude,literal)"+p)
				}
			}
		}
	}
	if len(d.Files) > MaxDiffFiles {
		d.Files, d.FilesTruncated = d.Files[:MaxDiffFiles], true
	}
	page := &pageWriter{from: o.Offset, max: o.MaxBytes}
	if err := m.git.runTo(ctx, ws.Path, env, page, args...); err != nil {
		return Diff{}, classify(err, CodeInternal, "cannot read the diff of %s", ws.Path)
	}
	d.Patch, d.TotalBytes = page.buf.String(), page.total
	if end := o.Offset + page.buf.Len(); end < page.total {
		d.NextOffset = end
	}
	return d, nil
}

// diffFile checks the File of DiffOptions: a path inside the workspace,
// relative, in git's form.
func diffFile(f string) (string, error) {
	if f == "" {
		return "", nil
	}
	clean := path.Clean(filepath.ToSlash(f))
	if path.IsAbs(clean) || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") || strings.ContainsRune(clean, 0) {
		return "", Errorf(CodeInvalidInput, "file must be a path inside the workspace, relative to it, as files lists it: %q", f)
	}
	// A pathspec of git's own syntax (":(glob)…") is taken literally.
	return ":(literal)" + clean, nil
}

// diffIndex makes an index of the workspace's HEAD in a temporary file,
// with every untracked file git does not ignore marked as about to be
// added (git add -N, which records no content), and returns its path.
func (m *Manager) diffIndex(ctx context.Context, dir string) (string, error) {
	f, err := os.CreateTemp("", "codehydra-diff-index-")
	if err != nil {
		return "", Errorf(CodeInternal, "cannot make a temporary index: %v", err)
	}
	index := f.Name()
	f.Close()
	// git wants to make the index itself.
	os.Remove(index)
	env := []string{"GIT_INDEX_FILE=" + index}
	if _, err := m.git.runEnv(ctx, dir, env, "read-tree", "HEAD"); err != nil {
		os.Remove(index)
		return "", classify(err, CodeInternal, "cannot read the HEAD of %s", dir)
	}
	if _, err := m.git.runEnv(ctx, dir, env, "add", "--intent-to-add", "--all", "--", "."); err != nil {
		os.Remove(index)
		return "", classify(err, CodeInternal, "cannot list the untracked files of %s", dir)
	}
	// An index made by read-tree knows no file's size or time, so every
	// diff would read every file again; refreshing reads them once.
	// Exit 1 (a file differs) is the answer, not a failure.
	if _, err := m.git.runEnv(ctx, dir, env, "update-index", "-q", "--refresh"); err != nil && exitCode(err) != 1 {
		os.Remove(index)
		return "", classify(err, CodeInternal, "cannot read the files of %s", dir)
	}
	return index, nil
}

// parseFileChanges joins git diff's -z --numstat and --name-status
// outputs into FileChanges.
func parseFileChanges(numstat, nameStatus string) []FileChange {
	statuses := map[string]string{}
	f := strings.Split(strings.TrimSuffix(nameStatus, "\x00"), "\x00")
	for i := 0; i+1 < len(f); {
		code := f[i]
		switch {
		case strings.HasPrefix(code, "R") || strings.HasPrefix(code, "C"):
			if i+2 >= len(f) {
				i = len(f)
				continue
			}
			statuses[f[i+2]] = "renamed"
			i += 3
		default:
			statuses[f[i+1]] = map[string]string{"A": "added", "D": "deleted"}[code]
			if statuses[f[i+1]] == "" {
				statuses[f[i+1]] = "modified"
			}
			i += 2
		}
	}
	var out []FileChange
	f = strings.Split(strings.TrimSuffix(numstat, "\x00"), "\x00")
	for i := 0; i < len(f); i++ {
		cols := strings.SplitN(f[i], "\t", 3)
		if len(cols) != 3 {
			continue
		}
		c := FileChange{Path: cols[2]}
		if c.Path == "" && i+2 < len(f) {
			// A rename: "add\tdel\t" then the old and the new path.
			c.OldPath, c.Path = f[i+1], f[i+2]
			i += 2
		}
		if cols[0] == "-" {
			c.Binary = true
		} else {
			c.Additions, _ = strconv.Atoi(cols[0])
			c.Deletions, _ = strconv.Atoi(cols[1])
		}
		c.Status = statuses[c.Path]
		if c.Status == "" {
			c.Status = "modified"
		}
		out = append(out, c)
	}
	return out
}

// pageWriter keeps the bytes from..from+max of what is written to it, and
// counts them all.
type pageWriter struct {
	from, max int
	buf       strings.Builder
	total     int
}

func (w *pageWriter) Write(p []byte) (int, error) {
	start, end := w.total, w.total+len(p)
	w.total = end
	lo, hi := max(start, w.from), min(end, w.from+w.max)
	if lo < hi {
		w.buf.Write(p[lo-start : hi-start])
	}
	return len(p), nil
}
