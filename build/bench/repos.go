package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// repoVersion changes whenever generateRepo makes something different, so
// that a cached repository of an older layout is made again.
const repoVersion = "v1"

// filesPerDir is how many files a generated folder holds; 100,000 files
// make 4,000 folders, about what a large real repository has.
const filesPerDir = 25

// ignoredFiles is how many files the generated node_modules/ (ignored,
// untracked) holds, to show that ignored folders cost nothing.
const ignoredFiles = 2_000

// benchRepo is a generated repository with one linked worktree.
type benchRepo struct {
	Files     int
	Dirs      int
	Main      string // the main checkout (the project)
	Workspace string // the linked worktree on branch "bench"
}

// ensureRepo returns the repository of size files, from the cache or made
// now. Its worktree is reset to a clean state.
func (b *bench) ensureRepo(files int) (benchRepo, error) {
	dir := filepath.Join(b.opts.cacheDir, fmt.Sprintf("repo-%d-%s", files, repoVersion))
	r := benchRepo{
		Files:     files,
		Dirs:      (files + filesPerDir - 1) / filesPerDir,
		Main:      filepath.Join(dir, "main"),
		Workspace: filepath.Join(dir, "ws"),
	}
	if _, err := os.Stat(filepath.Join(dir, "ready")); err != nil {
		b.say("generating a repository of %d files in %s (once; later runs reuse it)", files, dir)
		if err := os.RemoveAll(dir); err != nil {
			return r, err
		}
		if err := b.generateRepo(r); err != nil {
			return r, fmt.Errorf("generate a %d-file repository: %w", files, err)
		}
		if err := os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644); err != nil {
			return r, err
		}
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return r, err
	}
	r.Main, r.Workspace = filepath.Join(real, "main"), filepath.Join(real, "ws")
	// A run that was interrupted may have left changes or extra worktrees.
	for _, args := range [][]string{
		{"-C", r.Main, "worktree", "prune"},
		{"-C", r.Workspace, "reset", "-q", "--hard"},
		{"-C", r.Workspace, "clean", "-fdq"},
	} {
		if _, err := gitOut(b.ctx, args...); err != nil {
			return r, err
		}
	}
	return r, nil
}

// generateRepo makes r with git fast-import (one commit of r.Files small
// files), checks it out, and adds the worktree.
func (b *bench) generateRepo(r benchRepo) error {
	if _, err := gitOut(b.ctx, "init", "-q", "-b", "main", r.Main); err != nil {
		return err
	}
	var stream bytes.Buffer
	w := bufio.NewWriter(&stream)
	path := func(i int) string {
		d := i / filesPerDir
		return fmt.Sprintf("src/m%03d/p%03d/f%02d.txt", d/40, d%40, i%filesPerDir)
	}
	for i := range r.Files {
		content := fmt.Sprintf("file %d\n", i)
		fmt.Fprintf(w, "blob\nmark :%d\ndata %d\n%s\n", i+1, len(content), content)
	}
	gitignore := "node_modules/\n*.log\n"
	fmt.Fprintf(w, "blob\nmark :%d\ndata %d\n%s\n", r.Files+1, len(gitignore), gitignore)
	fmt.Fprintf(w, "commit refs/heads/main\ncommitter Bench <bench@example.com> 1700000000 +0000\ndata 20\n%-19s\n", "generated")
	for i := range r.Files {
		fmt.Fprintf(w, "M 100644 :%d %s\n", i+1, path(i))
	}
	fmt.Fprintf(w, "M 100644 :%d .gitignore\n\n", r.Files+1)
	w.Flush()
	imp := exec.CommandContext(b.ctx, "git", "-C", r.Main, "fast-import", "--quiet")
	imp.Stdin = &stream
	if out, err := imp.CombinedOutput(); err != nil {
		return fmt.Errorf("git fast-import: %w: %s", err, out)
	}
	for _, args := range [][]string{
		{"-C", r.Main, "checkout", "-q", "-f", "main"},
		{"-C", r.Main, "worktree", "add", "-q", "-b", "bench", r.Workspace, "main"},
	} {
		if _, err := gitOut(b.ctx, args...); err != nil {
			return err
		}
	}
	for i := range ignoredFiles {
		p := filepath.Join(r.Workspace, "node_modules", fmt.Sprintf("pkg%03d", i/20), fmt.Sprintf("f%02d.js", i%20))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// gitOut runs git and returns its trimmed stdout.
func gitOut(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
