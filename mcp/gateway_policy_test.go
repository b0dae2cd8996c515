package mcp

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"codehydra/internal/testenv"
	"codehydra/workspace"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The gateway's per-server policies (issue 24, points 1 to 3) as the app-
// wide server enforces them: real go-sdk servers behind the fake gateway,
// the real server over real HTTP, the real SDK client.

// TestAHiddenGatewayToolIsNotListedAndItsCallIsForbiddenNamingTheRule:
// a tool its server's tools rules hide is absent from tools/list, and a
// call of it by name is refused forbidden with the rule, before the
// gateway sees it.
func TestAHiddenGatewayToolIsNotListedAndItsCallIsForbiddenNamingTheRule(t *testing.T) {
	g := newFakeGateway(t)
	fs := g.add("fs", newProbe().fsTools)
	g.set(func() {
		fs.policy = func(tool string, gt *GatewayTool) {
			if tool == "read" {
				gt.Hidden = `tool read of server fs is hidden by its tools.deny rule "rea*"`
			}
		}
	})
	h := newHarness(t, withGateway(g))
	a := h.create("a")
	for _, cs := range []*sdk.ClientSession{h.sessionAs(h.tokenOf(a.Path), ""), h.session("")} {
		names := toolNames(t, cs)
		if slices.Contains(names, "fs__read") || !slices.Contains(names, "fs__echo") {
			t.Fatalf("tools/list = %v, want fs__echo and not the hidden fs__read", names)
		}
		wantForbiddenBeforeGateway(t, g, cs, "a hidden tool", "fs__read", map[string]any{}, `fs__read: tool read of server fs is hidden by its tools.deny rule "rea*"`)
		var out echoOut
		okJSON(t, call(t, cs, "fs__echo", map[string]any{"text": "still offered"}), &out)
	}
	// Shown again once the rules no longer hide it.
	g.set(func() { fs.policy = nil })
	cs := h.sessionAs(h.tokenOf(a.Path), "")
	testenv.WaitFor(t, "fs__read to be offered once its rule went", 10*time.Second, func() bool {
		return slices.Contains(toolNames(t, cs), "fs__read")
	})
	if res := call(t, cs, "fs__read", map[string]any{}); res.IsError {
		t.Fatalf("fs__read once offered: %s", text(t, res))
	}
}

// TestAConfinedServersPathRulesNarrowItsArgumentsWithinTheWorkspace: the
// server's paths.allow and paths.deny refuse, forbidden and naming the
// rule, a path of the caller's workspace outside an allow entry or inside
// a deny entry, however it is written; the workspace deny list still
// applies.
func TestAConfinedServersPathRulesNarrowItsArgumentsWithinTheWorkspace(t *testing.T) {
	h, g, a, _, _ := confinedFS(t)
	g.mu.Lock()
	fs := g.servers[0]
	g.mu.Unlock()
	g.set(func() {
		fs.policy = func(_ string, gt *GatewayTool) {
			gt.PathsAllow, gt.PathsDeny = []string{"src/", "docs/*.md"}, []string{"secrets/", "*.gen.go"}
		}
	})
	for _, f := range []string{"src/main.go", "src/secrets/k.txt", "src/x.gen.go", "docs/a.md", "docs/b.txt", "README.md", "srcx/a.go", ".env"} {
		testenv.WriteFile(t, filepath.Join(a.Path, f), "x")
	}
	if err := os.Symlink("../README.md", filepath.Join(a.Path, "src", "readme")); err != nil {
		t.Fatal(err)
	}
	cs := h.sessionAs(h.tokenOf(a.Path), "")
	// Let the list with the rules in place reach the server.
	deadline := time.Now().Add(10 * time.Second)
	for {
		gt, _ := h.srv.gw.lookup("fs__read")
		if len(gt.PathsAllow) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the rules never reached the server")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for name, c := range map[string]struct {
		path, says string
	}{
		"outside allow, absolute":      {filepath.Join(a.Path, "README.md"), `lies under none of its paths.allow rules ("src/", "docs/*.md"`},
		"outside allow, relative":      {"README.md", "paths.allow"},
		"outside allow, through ..":    {filepath.Join(a.Path, "src", "..", "README.md"), "paths.allow"},
		"outside allow, by a symlink":  {filepath.Join(a.Path, "src", "readme"), "paths.allow"},
		"a prefix that is no folder":   {filepath.Join(a.Path, "srcx", "a.go"), "paths.allow"},
		"the glob's other files":       {filepath.Join(a.Path, "docs", "b.txt"), "paths.allow"},
		"the workspace itself":         {a.Path, "paths.allow"},
		"a denied folder inside allow": {filepath.Join(a.Path, "src", "secrets", "k.txt"), `its paths.deny rule "secrets/"`},
		"a denied glob inside allow":   {"src/x.gen.go", `its paths.deny rule "*.gen.go"`},
		"the workspace deny list":      {filepath.Join(a.Path, ".env"), "deny list refuses"},
	} {
		wantForbiddenBeforeGateway(t, g, cs, name, "fs__read", map[string]any{"path": c.path}, c.says)
	}
	for _, p := range []string{filepath.Join(a.Path, "src", "main.go"), filepath.Join(a.Path, "src", "new.go"), filepath.Join(a.Path, "docs", "a.md"), "text that names no file"} {
		if res := call(t, cs, "fs__read", map[string]any{"path": p}); res.IsError {
			t.Errorf("%s: refused: %s", p, text(t, res))
		}
	}
}

// TestAServersRateLimitIsSharedByAllItsCallersAndNamesIt: a server's
// rateLimit counts the calls of every caller together, on top of each
// caller's own limit, and its refusal names the server; another server
// is not affected.
func TestAServersRateLimitIsSharedByAllItsCallersAndNamesIt(t *testing.T) {
	g := newFakeGateway(t)
	fs := g.add("fs", newProbe().fsTools)
	g.set(func() { fs.policy = func(_ string, gt *GatewayTool) { gt.PerMinute = 3 } })
	g.add("other", newProbe().fsTools)
	h := newHarness(t, withGateway(g))
	a, b := h.create("a"), h.create("b")
	ca, cb := h.sessionAs(h.tokenOf(a.Path), ""), h.sessionAs(h.tokenOf(b.Path), "")
	var out echoOut
	okJSON(t, call(t, ca, "fs__echo", map[string]any{"text": "1"}), &out)
	okJSON(t, call(t, cb, "fs__echo", map[string]any{"text": "2"}), &out)
	if res := call(t, ca, "fs__read", map[string]any{}); res.IsError {
		t.Fatalf("the third call: %s", text(t, res))
	}
	before := len(g.reached())
	code, msg := errCode(t, call(t, cb, "fs__echo", map[string]any{"text": "4"}))
	if code != workspace.CodeRateLimited || !strings.Contains(msg, `MCP server "fs"`) || !strings.Contains(msg, "3 per minute") {
		t.Fatalf("the fourth call in a minute from two callers: %s %q, want rate-limited naming fs and its limit", code, msg)
	}
	if len(g.reached()) != before {
		t.Fatal("a call over the server's limit reached the gateway")
	}
	okJSON(t, call(t, cb, "other__echo", map[string]any{"text": "another server"}), &out)
}

func TestAServersBucketTakesPerMinuteAtOnceThenRefillsAtThatRate(t *testing.T) {
	now := time.Now()
	l := newServerLimits(func() time.Time { return now })
	for i := range 3 {
		if !l.allow("fs", 3) {
			t.Fatalf("call %d of a burst of 3 refused", i+1)
		}
	}
	if l.allow("fs", 3) || !l.allow("other", 3) || !l.allow("fs", 0) {
		t.Fatal("the fourth call in a minute passed, or it took another server's or an unlimited server's token")
	}
	now = now.Add(20 * time.Second) // one call's worth at 3 a minute
	if !l.allow("fs", 3) || l.allow("fs", 3) {
		t.Fatal("20 s later: want one call, and only one")
	}
	if !l.allow("fs", 4) {
		t.Fatal("a changed limit does not start a new bucket")
	}
}
