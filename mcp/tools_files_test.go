package mcp

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/testenv"
	"codehydra/workspace"
	"codehydra/wsfs"
)

// The file tools read and list the caller's own workspace and nothing else
// (issue 15, points 1–3). Real server, real HTTP, the real SDK client,
// real git.

// writeFiles writes name → content under dir, making folders as needed.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// filesWorkspace is a workspace "a" full of traps, its sibling "b" with a
// secret, and a folder outside both; the session uses a's own token.
type filesWorkspace struct {
	h       *harness
	a, b    workspace.Workspace
	outside string
	cs      *sdk.ClientSession
}

func newFilesWorkspace(t *testing.T, opts ...harnessOption) *filesWorkspace {
	h := newHarness(t, opts...)
	a, b := h.create("a"), h.create("b")
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"secret.txt": "outside secret\n"})
	writeFiles(t, b.Path, map[string]string{"secret.txt": "b's secret\n"})
	writeFiles(t, a.Path, map[string]string{
		"src/main.go": "package main\n", ".gitignore": "build/\n*.log\n",
		"build/out.txt": "ignored\n", "debug.log": "ignored\n",
		".env": "TOKEN=1\n", "sub/.env.local": "TOKEN=2\n", "key.pem": "k\n", "deploy.key": "k\n", "id_rsa": "k\n",
		"vault/x.txt": "custom deny\n",
	})
	symlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(a.Path, "out"))
	symlink(t, filepath.Join(b.Path, "secret.txt"), filepath.Join(a.Path, "to-b"))
	symlink(t, outside, filepath.Join(a.Path, "outdir"))
	symlink(t, "../"+filepath.Base(b.Path), filepath.Join(a.Path, "rel-b"))
	symlink(t, ".env", filepath.Join(a.Path, "env-link"))
	symlink(t, "src", filepath.Join(a.Path, "srclink"))
	return &filesWorkspace{h: h, a: a, b: b, outside: outside, cs: h.sessionAs(h.tokenOf(a.Path), a.Path)}
}

func TestReadFileRefusesEveryWayOutOfTheWorkspace(t *testing.T) {
	w := newFilesWorkspace(t)
	for _, c := range []struct {
		name, path string
		code       workspace.Code
		msg        string
	}{
		{"dot-dot", "../" + filepath.Base(w.b.Path) + "/secret.txt", workspace.CodeForbidden, wsfs.MsgOutside},
		{"dot-dot inside a path", "src/../../" + filepath.Base(w.b.Path) + "/secret.txt", workspace.CodeForbidden, wsfs.MsgOutside},
		{"absolute outside", filepath.Join(w.outside, "secret.txt"), workspace.CodeForbidden, wsfs.MsgOutside},
		{"absolute in another workspace", filepath.Join(w.b.Path, "secret.txt"), workspace.CodeForbidden, wsfs.MsgOutside},
		{"/etc/passwd", "/etc/passwd", workspace.CodeForbidden, wsfs.MsgOutside},
		{"a symlink out", "out", workspace.CodeForbidden, wsfs.MsgOutside},
		{"a symlink to another workspace", "to-b", workspace.CodeForbidden, wsfs.MsgOutside},
		{"a path through a symlinked folder out", "outdir/secret.txt", workspace.CodeForbidden, wsfs.MsgOutside},
		{"a path through a relative symlink to another workspace", "rel-b/secret.txt", workspace.CodeForbidden, wsfs.MsgOutside},
		{"a name with NUL", "src/main.go\x00.txt", workspace.CodeInvalidInput, "NUL"},
		{"a name with a newline", "src/main.go\n", workspace.CodeInvalidInput, "line break"},
		{"git's files", ".git", workspace.CodeForbidden, "deny list"},
		{".env", ".env", workspace.CodeForbidden, "deny list"},
		{".env* deeper", "sub/.env.local", workspace.CodeForbidden, "deny list"},
		{"*.pem", "key.pem", workspace.CodeForbidden, "deny list"},
		{"*.key", "./deploy.key", workspace.CodeForbidden, "deny list"},
		{"id_*", "id_rsa", workspace.CodeForbidden, "deny list"},
		{"a symlink to a denied file", "env-link", workspace.CodeForbidden, "deny list"},
		{"absolute to a denied file", filepath.Join(w.a.Path, ".env"), workspace.CodeForbidden, "deny list"},
		{"missing", "nope.txt", workspace.CodeInvalidInput, "does not exist"},
		{"a folder", "src", workspace.CodeInvalidInput, "folder"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, msg := errCode(t, call(t, w.cs, ToolReadFile, map[string]any{"path": c.path}))
			if code != c.code || !strings.Contains(msg, c.msg) {
				t.Fatalf("%q: %s %q, want %s containing %q", c.path, code, msg, c.code, c.msg)
			}
			if strings.Contains(msg, "secret\n") || strings.Contains(msg, "TOKEN") {
				t.Fatalf("the error leaks the content: %q", msg)
			}
		})
	}
}

func TestReadFileReadsInsideTheWorkspaceAlsoThroughInnerSymlinks(t *testing.T) {
	w := newFilesWorkspace(t)
	for _, p := range []string{"src/main.go", "./src/main.go", "srclink/main.go", filepath.Join(w.a.Path, "src", "main.go")} {
		var page wsfs.Page
		okJSON(t, call(t, w.cs, ToolReadFile, map[string]any{"path": p}), &page)
		if page.Content != "package main\n" || page.Size != 13 || page.NextOffset != nil || page.Path != "src/main.go" {
			t.Fatalf("%s: %+v", p, page)
		}
	}
}

func TestDenyListFromTheSettingsIsRefusedToo(t *testing.T) {
	w := newFilesWorkspace(t, func(o *Options) { o.WorkspaceDeny = []string{"vault/"} })
	code, msg := errCode(t, call(t, w.cs, ToolReadFile, map[string]any{"path": "vault/x.txt"}))
	if code != workspace.CodeForbidden || !strings.Contains(msg, "vault/") {
		t.Fatalf("vault/x.txt: %s %q", code, msg)
	}
	var l wsfs.Listing
	okJSON(t, call(t, w.cs, ToolListDirectory, map[string]any{}), &l)
	if slices.ContainsFunc(l.Entries, func(e wsfs.Entry) bool { return e.Path == "vault" }) {
		t.Fatalf("the listing shows the denied folder: %+v", l.Entries)
	}
}

func TestReadFilePagesAHundredMegabyteFile(t *testing.T) {
	w := newFilesWorkspace(t)
	f, err := os.Create(filepath.Join(w.a.Path, "big.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// Sparse, so the test is fast: text at the head and at the tail, a hole
	// (NULs) between.
	const size = 100 << 20
	head, tail := strings.Repeat("héllo\n", 50_000), "the end\n"
	if _, err := f.WriteString(head); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(tail), size-int64(len(tail))); err != nil {
		t.Fatal(err)
	}
	f.Close()
	read := func(args map[string]any) wsfs.Page {
		t.Helper()
		args["path"] = "big.txt"
		var page wsfs.Page
		okJSON(t, call(t, w.cs, ToolReadFile, args), &page)
		if page.Size != size {
			t.Fatalf("size %d, want %d", page.Size, size)
		}
		return page
	}
	first := read(map[string]any{})
	if first.Binary || first.NextOffset == nil || len(first.Content) > wsfs.MaxPage || len(first.Content) < wsfs.MaxPage-3 ||
		*first.NextOffset != int64(len(first.Content)) || !strings.HasPrefix(head, first.Content) {
		t.Fatalf("first page: %d bytes, next %v, binary %v", len(first.Content), first.NextOffset, first.Binary)
	}
	second := read(map[string]any{"offset": *first.NextOffset, "limit": 1000})
	if !strings.HasPrefix(head, first.Content+second.Content) || second.NextOffset == nil ||
		*second.NextOffset != *first.NextOffset+int64(len(second.Content)) || len(second.Content) < 997 {
		t.Fatalf("the second page does not continue the first: %d bytes, next %v", len(second.Content), second.NextOffset)
	}
	if capped := read(map[string]any{"limit": 1 << 30}); len(capped.Content) > wsfs.MaxPage {
		t.Fatalf("a limit of 1 GiB returned %d bytes, over the cap", len(capped.Content))
	}
	if last := read(map[string]any{"offset": size - len(tail)}); last.Content != tail || last.NextOffset != nil {
		t.Fatalf("last page %q, next %v", last.Content, last.NextOffset)
	}
	if hole := read(map[string]any{"offset": size / 2}); !hole.Binary || hole.Content != "" {
		t.Fatalf("a page of NULs: binary %v, %d bytes", hole.Binary, len(hole.Content))
	}
	if end := read(map[string]any{"offset": size}); end.Content != "" || end.NextOffset != nil {
		t.Fatalf("page at the end: %q next %v", end.Content, end.NextOffset)
	}
	code, _ := errCode(t, call(t, w.cs, ToolReadFile, map[string]any{"path": "big.txt", "offset": 2, "limit": 10}))
	if code != workspace.CodeInvalidInput {
		t.Fatalf("an offset inside a character (é): %s, want invalid-input", code)
	}
}

func TestReadFileSaysBinaryInsteadOfReturningBytes(t *testing.T) {
	w := newFilesWorkspace(t)
	writeFiles(t, w.a.Path, map[string]string{"img.png": "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "latin1.txt": "caf\xe9\n"})
	for _, p := range []string{"img.png", "latin1.txt"} {
		var page wsfs.Page
		okJSON(t, call(t, w.cs, ToolReadFile, map[string]any{"path": p}), &page)
		if !page.Binary || page.Content != "" || page.Size == 0 {
			t.Fatalf("%s: %+v", p, page)
		}
	}
}

func TestListDirectoryHonoursGitignoreAndTheDenyListAndNeverFollowsSymlinks(t *testing.T) {
	w := newFilesWorkspace(t)
	testenv.Git(t, w.a.Path, "add", "src", ".gitignore")
	testenv.Git(t, w.a.Path, "commit", "-q", "-m", "src")
	var l wsfs.Listing
	okJSON(t, call(t, w.cs, ToolListDirectory, map[string]any{}), &l)
	got := map[string]string{}
	for _, e := range l.Entries {
		got[e.Path] = e.Type
	}
	want := map[string]string{
		"README.md": "file", ".gitignore": "file", "src": "dir", "sub": "dir", "vault": "dir",
		"out": "symlink", "to-b": "symlink", "outdir": "symlink", "rel-b": "symlink", "env-link": "symlink", "srclink": "symlink",
	}
	if !maps.Equal(got, want) {
		t.Fatalf("top level\n got %v\nwant %v", got, want)
	}
	if i := slices.IndexFunc(l.Entries, func(e wsfs.Entry) bool { return e.Path == "README.md" }); l.Entries[i].Size != 6 {
		t.Fatalf("README.md size %d, want 6", l.Entries[i].Size)
	}

	okJSON(t, call(t, w.cs, ToolListDirectory, map[string]any{"path": "src", "depth": 3}), &l)
	if len(l.Entries) != 1 || l.Entries[0] != (wsfs.Entry{Path: "src/main.go", Type: "file", Size: 13}) {
		t.Fatalf("src: %+v", l.Entries)
	}
	okJSON(t, call(t, w.cs, ToolListDirectory, map[string]any{"path": "sub", "depth": 3}), &l)
	if len(l.Entries) != 0 {
		t.Fatalf("sub holds only a denied file, listed %+v", l.Entries)
	}
	for _, c := range []struct {
		path string
		code workspace.Code
	}{
		{"outdir", workspace.CodeForbidden}, {"rel-b", workspace.CodeForbidden}, {"..", workspace.CodeForbidden},
		{w.b.Path, workspace.CodeForbidden}, {".git", workspace.CodeForbidden}, {"src/main.go", workspace.CodeInvalidInput},
		{"a\nb", workspace.CodeInvalidInput},
	} {
		if code, msg := errCode(t, call(t, w.cs, ToolListDirectory, map[string]any{"path": c.path})); code != c.code {
			t.Errorf("list %q: %s %q, want %s", c.path, code, msg, c.code)
		}
	}
}

func TestGetContextSumsUpTheWorkspace(t *testing.T) {
	w := newFilesWorkspace(t)
	writeFiles(t, w.a.Path, map[string]string{"README.md": strings.Repeat("line\n", 100)})
	testenv.Git(t, w.a.Path, "add", "src")
	testenv.Git(t, w.a.Path, "commit", "-q", "-m", "add src")
	var c contextOutput
	okJSON(t, call(t, w.cs, ToolGetContext, nil), &c)
	if c.Path != w.a.Path || c.Branch != "a" || c.Base != "main" || c.Ahead != 1 || c.Behind != 0 {
		t.Fatalf("context %+v", c)
	}
	if !slices.Equal(c.Changed, []string{"README.md"}) || !slices.Contains(c.Untracked, ".gitignore") {
		t.Fatalf("changed %v untracked %v", c.Changed, c.Untracked)
	}
	if len(c.Commits) != 2 || c.Commits[0].Subject != "add src" || c.Commits[1].Subject != "initial commit" {
		t.Fatalf("commits %+v", c.Commits)
	}
	if !slices.ContainsFunc(c.Tree, func(e wsfs.Entry) bool { return e.Path == "src" && e.Type == "dir" }) ||
		slices.ContainsFunc(c.Tree, func(e wsfs.Entry) bool { return e.Path == ".env" }) {
		t.Fatalf("tree %+v", c.Tree)
	}
	if c.Readme == nil || c.Readme.Head != strings.Repeat("line\n", 40) || !c.Readme.Truncated {
		t.Fatalf("readme %+v", c.Readme)
	}
	if c.Tasks == nil {
		t.Fatal("tasks is null, want a list")
	}
}

func TestGetContextLeavesOutAReadmeThatLeadsOut(t *testing.T) {
	w := newFilesWorkspace(t)
	if err := os.Remove(filepath.Join(w.a.Path, "README.md")); err != nil {
		t.Fatal(err)
	}
	symlink(t, filepath.Join(w.b.Path, "secret.txt"), filepath.Join(w.a.Path, "README.md"))
	var c contextOutput
	okJSON(t, call(t, w.cs, ToolGetContext, nil), &c)
	if c.Readme != nil {
		t.Fatalf("a README linked to another workspace was read: %+v", c.Readme)
	}
}

// A workspace's token reads nothing of another workspace, whatever the
// header, the path or a symlink says.
func TestWorkspaceTokenNeverReadsAnotherWorkspace(t *testing.T) {
	w := newFilesWorkspace(t)
	tokA := w.h.tokenOf(w.a.Path)
	for _, header := range []string{w.b.Path, w.h.project, ""} {
		cs := w.h.sessionAs(tokA, header)
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{ToolReadFile, map[string]any{"path": "secret.txt"}},
			{ToolReadFile, map[string]any{"path": filepath.Join(w.b.Path, "secret.txt")}},
			{ToolReadFile, map[string]any{"path": "to-b"}},
			{ToolListDirectory, map[string]any{"path": w.b.Path}},
			{ToolListDirectory, map[string]any{"path": "rel-b"}},
			{ToolGetContext, nil},
		} {
			res := call(t, cs, c.tool, c.args)
			if txt := text(t, res); strings.Contains(txt, "b's secret") || (header == w.b.Path || header == w.h.project) && !res.IsError {
				t.Errorf("%s %v with A's token and header %q: %s", c.tool, c.args, header, txt)
			}
			if header == "" && c.tool != ToolGetContext && !res.IsError {
				t.Errorf("%s %v read across: %s", c.tool, c.args, text(t, res))
			}
		}
	}
}

// TestTheFileToolsRunNoGitThatTheWorkspaceSteers: workspace_list_directory
// and workspace_get_context ask git about the workspace, outside any
// sandbox; a .git the agent replaced with a git folder of its own, whose
// config names a program, must not lead them to run it.
func TestTheFileToolsRunNoGitThatTheWorkspaceSteers(t *testing.T) {
	h := newHarness(t)
	ws := h.create("steered")
	marker := filepath.Join(t.TempDir(), "ran")
	script := filepath.Join(t.TempDir(), "tattle.sh")
	testenv.WriteFile(t, script, "#!/bin/sh\ntouch '"+marker+"'\n")
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(ws.Path, ".git")); err != nil {
		t.Fatal(err)
	}
	testenv.Git(t, ws.Path, "init", "-q")
	testenv.Git(t, ws.Path, "config", "core.fsmonitor", script)
	cs := h.session(ws.Path)
	for _, tool := range []string{ToolListDirectory, ToolGetContext} {
		res := call(t, cs, tool, map[string]any{})
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%s ran a program that the workspace's own git folder names", tool)
		}
		if tool == ToolListDirectory && !res.IsError {
			t.Errorf("%s listed a workspace whose .git is not git's record of it: %s", tool, text(t, res))
		}
	}
	cmd := exec.Command("git", "status")
	cmd.Dir = ws.Path
	_ = cmd.Run()
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("control: a plain git status does not run the planted fsmonitor either, so this test shows nothing")
	}
}
