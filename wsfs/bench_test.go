package wsfs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The 100k-file repository of docs/BENCHMARKS.md: 4000 folders of 25
// files, committed, plus an ignored node_modules/ of 2000 files. It is
// made once under $TMPDIR and kept for later runs (remove it to rebuild).
const (
	benchFolders = 4000
	benchPerDir  = 25
)

func benchRepo(b *testing.B) string {
	b.Helper()
	dir := filepath.Join(os.TempDir(), "codehydra-wsfs-bench-100k")
	if _, err := os.Stat(filepath.Join(dir, ".done")); err == nil {
		return dir
	}
	os.RemoveAll(dir)
	for d := range benchFolders {
		sub := filepath.Join(dir, fmt.Sprintf("d%04d", d))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range benchPerDir {
			content := fmt.Sprintf("package d%04d\n\n// file %d\n%s", d, f, strings.Repeat("// some text\n", 40))
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%04d.go", f)), []byte(content), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	nm := filepath.Join(dir, "node_modules", "pkg")
	if err := os.MkdirAll(nm, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range 2000 {
		if err := os.WriteFile(filepath.Join(nm, fmt.Sprintf("m%04d.js", i)), []byte("x\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("node_modules/\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"},
		{"-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", "files"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ".done"), nil, 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}

func runCmd(b *testing.B, dir string, name string, args ...string) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if err := cmd.Run(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkReadFile reads one file of the 100k-file repository through
// the confinement (symlinks resolved, os.Root, deny list) and with cat.
func BenchmarkReadFile(b *testing.B) {
	dir := benchRepo(b)
	const file = "d2042/f0017.go"
	b.Run("wsfs", func(b *testing.B) {
		f := New(dir, nil, plainGit)
		for b.Loop() {
			if _, err := f.Read(file, 0, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cat", func(b *testing.B) {
		for b.Loop() {
			runCmd(b, dir, "cat", file)
		}
	})
}

// BenchmarkListDirectory lists the top and one folder of the 100k-file
// repository, against the git ls-files that List runs.
func BenchmarkListDirectory(b *testing.B) {
	dir := benchRepo(b)
	f := New(dir, nil, plainGit)
	for _, c := range []struct{ name, path string }{{"top", "."}, {"folder", "d2042"}} {
		b.Run(c.name+"/wsfs", func(b *testing.B) {
			for b.Loop() {
				if _, err := f.List(context.Background(), c.path, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/git-ls-files", func(b *testing.B) {
			for b.Loop() {
				runCmd(b, dir, "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", c.path)
			}
		})
	}
}

// plainGit runs git in dir as it is, for the benchmark's repository (a
// main checkout of the test's own, no agent's workspace).
func plainGit(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	return string(out), err
}
