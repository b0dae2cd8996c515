package mcp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"codehydra/internal/testenv"
	"codehydra/workspace"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// confinedFS is a harness with a confined, workspace-scoped server "fs"
// that starts in an empty folder, and workspaces a and b.
func confinedFS(t *testing.T, opts ...harnessOption) (*harness, *fakeGateway, workspace.Workspace, workspace.Workspace, string) {
	t.Helper()
	g := newFakeGateway(t)
	fs := g.add("fs", newProbe().fsTools)
	fs.confine, fs.perWorkspace = true, true
	fs.workDir = filepath.Join(t.TempDir(), "codehydra-mcp-wd")
	if err := os.Mkdir(fs.workDir, 0o500); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, append([]harnessOption{withGateway(g)}, opts...)...)
	a, b := h.create("a"), h.create("b")
	return h, g, a, b, fs.workDir
}

// TestConfinedGatewayToolsJudgeRelativePathsFromTheServersFolder: the
// review's workspace A read B's secret through a confined server with
// a path relative to the server's working folder, which the check left
// to the server. A relative path is now judged from the folder the
// server starts in (empty: only what climbs out names anything).
func TestConfinedGatewayToolsJudgeRelativePathsFromTheServersFolder(t *testing.T) {
	h, g, a, b, wd := confinedFS(t)
	testenv.WriteFile(t, filepath.Join(b.Path, "secret.txt"), "b's secret")
	cs := h.sessionAs(h.tokenOf(a.Path), "")
	rel := func(p string) string {
		r, err := filepath.Rel(wd, p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for name, path := range map[string]string{
		"b's secret, relative":       rel(filepath.Join(b.Path, "secret.txt")),
		"up to the system":           strings.Repeat("../", 30) + "etc/passwd",
		"in, then up and out":        "x/../../" + rel(b.Path)[3:],
		"a's parent":                 rel(filepath.Dir(a.Path)),
		"nested, relative, b's path": rel(b.Path) + "/secret.txt",
	} {
		wantForbiddenBeforeGateway(t, g, cs, name+" ("+path+")", "fs__read", map[string]any{"opts": []any{path}}, "names a path outside it")
	}
	for name, path := range map[string]string{
		"a's file, relative from the server's folder": rel(filepath.Join(a.Path, "README.md")),
		"a name in the server's empty folder":         "src/main.go",
		"the server's folder itself":                  ".",
	} {
		if res := call(t, cs, "fs__read", map[string]any{"path": path}); res.IsError {
			t.Errorf("%s (%s): refused: %s", name, path, text(t, res))
		}
	}
}

// TestConfinedGatewayToolsApplyTheDenyList: the workspace file tools
// refuse .env and keys, a confined server read them freely. Its path
// arguments inside the workspace now pass the same deny list, however
// they are written.
func TestConfinedGatewayToolsApplyTheDenyList(t *testing.T) {
	h, g, a, _, _ := confinedFS(t, func(o *Options) { o.WorkspaceDeny = []string{"private/"} })
	testenv.WriteFile(t, filepath.Join(a.Path, ".env"), "TOKEN=x")
	testenv.WriteFile(t, filepath.Join(a.Path, "sub", "server.key"), "key")
	testenv.WriteFile(t, filepath.Join(a.Path, "private", "notes.txt"), "mine")
	testenv.WriteFile(t, filepath.Join(a.Path, "notes.txt"), "ok")
	if err := os.Symlink(".env", filepath.Join(a.Path, "innocent")); err != nil {
		t.Fatal(err)
	}
	cs := h.sessionAs(h.tokenOf(a.Path), "")
	for name, args := range map[string]any{
		".env, absolute":                    map[string]any{"path": filepath.Join(a.Path, ".env")},
		".env, relative":                    map[string]any{"path": ".env"},
		".env, through ..":                  map[string]any{"path": filepath.Join(a.Path, "sub", "..", ".env")},
		".env, through a symlink":           map[string]any{"path": filepath.Join(a.Path, "innocent")},
		"a key, as a file URI":              map[string]any{"uri": "file://" + filepath.Join(a.Path, "sub", "server.key")},
		"the settings' pattern":             map[string]any{"paths": []any{filepath.Join(a.Path, "notes.txt"), filepath.Join(a.Path, "private", "notes.txt")}},
		"a new .env, written":               map[string]any{"path": filepath.Join(a.Path, "sub", ".env.local")},
		"the worktree's .git, absolute":     map[string]any{"path": filepath.Join(a.Path, ".git")},
		"an existing key, relative, nested": map[string]any{"o": map[string]any{"p": "sub/server.key"}},
	} {
		wantForbiddenBeforeGateway(t, g, cs, name, "fs__read", args, "deny list")
	}
	for name, args := range map[string]any{
		"a plain file":                          map[string]any{"path": filepath.Join(a.Path, "notes.txt")},
		"text that is no file of the workspace": map[string]any{"text": "id_token", "q": "*.env"},
	} {
		if res := call(t, cs, "fs__read", args); res.IsError {
			t.Errorf("%s: refused: %s", name, text(t, res))
		}
	}
}

// TestAConfinedCallTooBigToCheckIsRefusedAtOnce: one call of about a
// megabyte kept the review's server busy for 71 s, past the tool
// timeout: the check walked each path again for each of its parts, and
// ran before the timeout was set. Each path is now walked once, within a
// budget, and within the call's timeout.
func TestAConfinedCallTooBigToCheckIsRefusedAtOnce(t *testing.T) {
	h, g, a, _, _ := confinedFS(t)
	cs := h.sessionAs(h.tokenOf(a.Path), "")
	if err := os.Mkdir(filepath.Join(a.Path, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Every part exists, so every part costs a look.
	long := a.Path + "/" + strings.Repeat("sub/../", 540)
	paths := make([]any, 250)
	for i := range paths {
		paths[i] = long
	}
	deep := any(a.Path)
	for range 100 {
		deep = []any{deep}
	}
	many := make([]any, 20000)
	for i := range many {
		many[i] = "x"
	}
	for name, args := range map[string]any{
		"a megabyte of long paths": map[string]any{"paths": paths},
		"nested 100 deep":          map[string]any{"deep": deep},
		"20000 strings":            map[string]any{"many": many},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "fs__read", Arguments: args})
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !res.IsError {
			t.Errorf("%s: passed the check", name)
			continue
		}
		code, msg := errCode(t, res)
		if code != workspace.CodeInvalidInput || !strings.Contains(msg, "too big to check") {
			t.Errorf("%s: %s %q, want invalid-input", name, code, msg)
		}
	}
	if len(g.reached()) != 0 {
		t.Fatal("a call too big to check reached the gateway")
	}
	// Within the budget, the same shape is checked and passes.
	if res := call(t, cs, "fs__read", map[string]any{"paths": paths[:10]}); res.IsError {
		t.Fatalf("ten long paths inside the workspace: %s", text(t, res))
	}

	// The review's call: a megabyte of paths with a missing folder early
	// and thousands of parts after it, which cost a walk per part. Walked
	// once, it is checked at once, well within the tool timeout.
	review := make([]any, 250)
	for i := range review {
		review[i] = a.Path + "/missing" + strings.Repeat("/x", 1950)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "fs__read", Arguments: map[string]any{"paths": review}})
	if err != nil || res.IsError {
		t.Fatalf("the review's megabyte, inside the workspace: %v %s", err, text(t, res))
	}
}

// TestAConfinedCheckPastTheCallTimeoutSendsNothing: the check of a
// confined call's paths ran before the call's timeout was set, so one
// slow check held the server past it (71 s in the review). It now runs
// within the timeout: a check still going when the timeout passes ends
// the call as a timeout that says so, and the server never sees it.
func TestAConfinedCheckPastTheCallTimeoutSendsNothing(t *testing.T) {
	// A timeout that has passed by the time the check looks: any check
	// runs past it. The fake gateway lists its tools whatever the
	// timeout, as the gateway package answers from what it knows.
	h, g, a, _, _ := confinedFS(t, func(o *Options) {
		o.CallTimeout = time.Nanosecond
		o.Gateway.(*fakeGateway).known = true
	})
	cs := h.sessionAs(h.tokenOf(a.Path), "")
	code, msg := errCode(t, call(t, cs, "fs__read", map[string]any{"path": filepath.Join(a.Path, "README.md")}))
	if code != workspace.CodeTimeout || !strings.Contains(msg, "checking its arguments' paths") || !strings.Contains(msg, "nothing was sent") {
		t.Fatalf("a check past the call's timeout: %s %q, want a timeout saying the check took too long", code, msg)
	}
	if n := len(g.reached()); n != 0 {
		t.Fatalf("%d calls reached the gateway after their check ran past the timeout", n)
	}
}

// TestALongRelativePathIsStillJudged: a relative string over the length
// of a path was left alone, so "./" repeated past it hid a climb out
// that servers which normalise paths would follow.
func TestALongRelativePathIsStillJudged(t *testing.T) {
	h, g, a, _, _ := confinedFS(t)
	cs := h.sessionAs(h.tokenOf(a.Path), "")
	path := strings.Repeat("./", 2100) + strings.Repeat("../", 40) + "etc/passwd"
	wantForbiddenBeforeGateway(t, g, cs, "a long relative climb out", "fs__read", map[string]any{"path": path}, "names a path outside it")
	// Long text that stays where it is, such as a file's content, passes.
	if res := call(t, cs, "fs__read", map[string]any{"content": strings.Repeat("text ", 2000)}); res.IsError {
		t.Fatalf("long content refused: %s", text(t, res))
	}
}
