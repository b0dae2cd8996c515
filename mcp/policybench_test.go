package mcp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"codehydra/wsfs"
)

// BenchmarkGatewayPolicyChecks times, in process, the checks the MCP
// server makes of one gateway call before the gateway sees it
// (admitGateway: a hidden tool, confinement with the server's paths
// rules; then the server's own rate limit), for the call
// gateway.BenchmarkPolicyCall makes: one absolute path argument to an
// existing file two folders deep in the workspace. The end-to-end figure
// is that benchmark's (docs/BENCHMARKS.md); this one gives the checks'
// own cost, which the round trip's noise hides.
func BenchmarkGatewayPolicyChecks(b *testing.B) {
	ws := b.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "src"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "src", "a.txt"), []byte("a\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	args, _ := json.Marshal(map[string]string{"path": filepath.Join(ws, "src", "a.txt")})
	deny := wsfs.DenyPatterns(nil)
	base := GatewayTool{Server: "bench", PerWorkspace: true, WorkDir: b.TempDir()}
	confined := base
	confined.Confine = true
	paths := confined
	paths.PathsAllow, paths.PathsDeny = []string{"src/", "docs/"}, []string{".env", "secrets/"}
	limited := base
	limited.PerMinute = 1e9
	all := paths
	all.PerMinute = 1e9
	for _, c := range []struct {
		name string
		gt   GatewayTool
	}{{"none", base}, {"confine", confined}, {"paths", paths}, {"rateLimit", limited}, {"all", all}} {
		b.Run(c.name, func(b *testing.B) {
			limits := newServerLimits(time.Now)
			for b.Loop() {
				if err := admitGateway(context.Background(), "bench__read", c.gt, ws, deny, args); err != nil {
					b.Fatal(err)
				}
				if !limits.allow(c.gt.Server, c.gt.PerMinute) {
					b.Fatal("limited")
				}
			}
		})
	}
}
