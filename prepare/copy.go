// Package prepare readies a new worktree before its agent starts: it copies
// the untracked files the user named (such as .env) from the project's main
// checkout and runs the user's setup command there (issue 13, point 6).
// The commands it runs (setup, and teardown before a delete) come only
// from the user's settings (settings.ProjectSetup), never from a file of
// the repository, so that opening a repository cannot make CodeHydra run
// its commands; the repository's .worktreeinclude may only name more of
// its untracked files to copy.
package prepare

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"codehydra/internal/gitenv"
)

// CopyReport says what a copy did.
type CopyReport struct {
	// Copied are the files copied, relative "/"-separated paths.
	Copied []string
	// Unmatched are the patterns that matched no untracked file.
	Unmatched []string
	// Skipped says, per file matched but not copied, why (it exists in the
	// worktree, it is a symlink out of the checkout, it is not a file).
	Skipped []string
}

// CopyFiles copies the untracked (and ignored) files of the main checkout
// at src that match patterns, or the .worktreeinclude at src's root
// (WorktreeIncludeFile) when there is one, into the worktree at dst, at
// the same relative path and with the same permission bits. A pattern
// matches a file's path or a folder above it. A file that already exists
// in dst (a tracked one, above all) is never overwritten, and no symlink
// is followed out of src or out of dst: both are opened as an os.Root.
func CopyFiles(ctx context.Context, src, dst string, patterns []string) (CopyReport, error) {
	var rep CopyReport
	from, err := os.OpenRoot(src)
	if err != nil {
		return rep, fmt.Errorf("open the main checkout %s: %w", src, err)
	}
	defer from.Close()
	include, err := readIncludeRules(from)
	if err != nil {
		rep.Skipped = append(rep.Skipped, WorktreeIncludeFile+": not read ("+err.Error()+")")
	}
	if len(patterns) == 0 && len(include) == 0 {
		return rep, nil
	}
	files, err := untracked(ctx, src)
	if err != nil {
		return rep, err
	}
	to, err := os.OpenRoot(dst)
	if err != nil {
		return rep, fmt.Errorf("open the new worktree %s: %w", dst, err)
	}
	defer to.Close()

	matched := make([]bool, len(patterns))
	includeMatched := false
	for _, f := range files {
		byPattern := selected(f, patterns, matched)
		byInclude := f != WorktreeIncludeFile && include.Match(f)
		includeMatched = includeMatched || byInclude
		if !byPattern && !byInclude {
			continue
		}
		why, err := copyOne(from, to, f)
		if err != nil {
			return rep, fmt.Errorf("copy %s into the worktree: %w", f, err)
		}
		if why != "" {
			rep.Skipped = append(rep.Skipped, f+": "+why)
			continue
		}
		rep.Copied = append(rep.Copied, f)
	}
	for i, ok := range matched {
		if !ok {
			rep.Unmatched = append(rep.Unmatched, patterns[i])
		}
	}
	if len(include) > 0 && !includeMatched {
		rep.Unmatched = append(rep.Unmatched, WorktreeIncludeFile)
	}
	return rep, nil
}

// HasWorktreeInclude reports whether the checkout at dir has a
// .worktreeinclude at its root.
func HasWorktreeInclude(dir string) bool {
	info, err := os.Lstat(filepath.Join(dir, WorktreeIncludeFile))
	return err == nil && !info.IsDir()
}

// untracked lists the untracked files of the checkout at dir, ignored ones
// included, as "/"-separated relative paths. git runs as CodeHydra's
// every git does (gitenv.Env): no fsmonitor or hook of the repository's.
func untracked(ctx context.Context, dir string) ([]string, error) {
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "ls-files", "--others", "-z")
	cmd.Env = gitenv.Env(os.Environ())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("list the untracked files of %s: %w: %s", dir, err, strings.TrimSpace(stderr.String()))
	}
	var files []string
	for f := range strings.SplitSeq(string(out), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files, nil
}

// selected reports whether a pattern matches file or a folder above it,
// and marks each pattern that does.
func selected(file string, patterns []string, matched []bool) bool {
	hit := false
	for i, p := range patterns {
		for name := file; name != "." && name != "/"; name = path.Dir(name) {
			if ok, _ := path.Match(p, name); ok {
				matched[i], hit = true, true
				break
			}
		}
	}
	return hit
}

// copyOne copies the file rel from one root to the other. It returns why
// it was skipped, or an error that stops the copy.
func copyOne(from, to *os.Root, rel string) (skipped string, err error) {
	info, err := from.Lstat(rel)
	if err != nil {
		return "", err
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		// A link inside the checkout is followed; os.Root refuses one that
		// leads out of it.
		if info, err = from.Stat(rel); err != nil {
			return "a symlink that leads out of the project's folder or nowhere; not copied", nil
		}
	}
	if !info.Mode().IsRegular() {
		return "not a regular file; not copied", nil
	}
	in, err := from.Open(rel)
	if err != nil {
		return "", err
	}
	defer in.Close()
	if dir := path.Dir(rel); dir != "." {
		if err := to.MkdirAll(dir, 0o755); err != nil {
			return "cannot create its folder in the workspace (" + err.Error() + "); not copied", nil
		}
	}
	perm := info.Mode().Perm()
	out, err := to.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if errors.Is(err, fs.ErrExist) {
		return "exists in the workspace (tracked there); kept as it is", nil
	}
	if err != nil {
		return "cannot be written in the workspace (" + err.Error() + "); not copied", nil
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return "", err
	}
	if err := out.Close(); err != nil {
		return "", err
	}
	// The umask may have taken bits the original has.
	return "", to.Chmod(rel, perm)
}
