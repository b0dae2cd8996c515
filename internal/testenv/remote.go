package testenv

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// BareRemote makes a bare repository in a new temp folder, adds it to the
// repository at repo as the remote name, pushes repo's main there and
// fetches it back (so that <name>/main exists), and returns the bare
// repository's path: a remote that pushes can reach without a network.
func BareRemote(t testing.TB, repo, name string) string {
	t.Helper()
	parent, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bare := filepath.Join(parent, name+".git")
	Git(t, "", "init", "-q", "--bare", "-b", "main", bare)
	Git(t, repo, "remote", "add", name, bare)
	Git(t, repo, "push", "-q", name, "main")
	Git(t, repo, "fetch", "-q", name)
	return bare
}

// GH is a recording stand-in for gh: a script named gh in a folder of
// its own (Bin, to put first on PATH) that records each call (its
// arguments, working folder, environment and what git there takes as its
// folder), then prints what Reply set and exits with its code.
type GH struct {
	Bin, Path string
	dir       string
}

// GHCall is one call of a GH.
type GHCall struct {
	Argv   []string // the arguments, without the program
	Cwd    string
	Env    []string
	GitDir string // git rev-parse --absolute-git-dir, run by the stand-in
}

// NewGH makes a GH that prints url and exits 0 until Reply says otherwise.
func NewGH(t testing.TB, url string) *GH {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	g := &GH{Bin: filepath.Join(base, "bin"), dir: filepath.Join(base, "calls")}
	g.Path = filepath.Join(g.Bin, "gh")
	if err := os.MkdirAll(g.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	WriteFile(t, g.Path, `#!/bin/sh
d='`+g.dir+`'
n=0
while ! mkdir "$d/call-$n" 2>/dev/null; do n=$((n+1)); done
c="$d/call-$n"
for a in "$@"; do printf '%s\0' "$a"; done > "$c/argv"
pwd -P > "$c/cwd"
env -0 > "$c/env"
git rev-parse --absolute-git-dir > "$c/gitdir" 2>&1
[ -f "$d/sleep" ] && sleep "$(cat "$d/sleep")"
cat "$d/stdout"
cat "$d/stderr" >&2
exit "$(cat "$d/exit")"
`)
	if err := os.Chmod(g.Path, 0o755); err != nil {
		t.Fatal(err)
	}
	g.Reply(t, "Creating pull request for feature into main\n\n"+url+"\n", "", 0)
	return g
}

// Reply sets what the next calls print and their exit code.
func (g *GH) Reply(t testing.TB, stdout, stderr string, exit int) {
	t.Helper()
	WriteFile(t, filepath.Join(g.dir, "stdout"), stdout)
	WriteFile(t, filepath.Join(g.dir, "stderr"), stderr)
	WriteFile(t, filepath.Join(g.dir, "exit"), strconv.Itoa(exit))
}

// Sleep makes the next calls sleep for seconds before they answer.
func (g *GH) Sleep(t testing.TB, seconds int) {
	t.Helper()
	WriteFile(t, filepath.Join(g.dir, "sleep"), strconv.Itoa(seconds))
}

// Calls are the calls so far, in order.
func (g *GH) Calls(t testing.TB) []GHCall {
	t.Helper()
	var calls []GHCall
	for n := 0; ; n++ {
		c := filepath.Join(g.dir, "call-"+strconv.Itoa(n))
		if !Exists(c) {
			return calls
		}
		read := func(name string) string {
			b, err := os.ReadFile(filepath.Join(c, name))
			if err != nil {
				t.Fatalf("the stand-in for gh did not record %s: %v", name, err)
			}
			return string(b)
		}
		argv := strings.Split(read("argv"), "\x00")
		calls = append(calls, GHCall{Argv: argv[:len(argv)-1], Cwd: strings.TrimSpace(read("cwd")),
			Env: strings.Split(strings.TrimSuffix(read("env"), "\x00"), "\x00"), GitDir: strings.TrimSpace(read("gitdir"))})
	}
}
