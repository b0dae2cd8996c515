//go:build unix

package gateway

import (
	"path/filepath"

	"codehydra/internal/settings"
)

// policyCases are the configurations BenchmarkPolicyCall times: none,
// each policy of issue 24 alone, and all together. Each lets the call
// through; a rule that refused it would time the refusal. "confine" is
// the check the gateway had before (a path argument must lie in the
// caller's workspace, the deny list applies); "paths" is the server's own
// path rules on top of it. build/bench-gateway-policy.sh gives the
// gateway before the policies the cases it has ("none", "confine").
func policyCases() []policyCase {
	none := func(m settings.MCPServer) settings.MCPServer { return m }
	unpinned := func(o *Options, _ string) { o.Unpinned = true }
	pinned := func(o *Options, dir string) { o.PinsFile = dir + "/pins.json" }
	tools := func(m settings.MCPServer) settings.MCPServer {
		m.Tools = settings.ToolRules{Allow: []string{"read", "list*"}, Deny: []string{"write*", "delete*"}}
		return m
	}
	confine := func(m settings.MCPServer) settings.MCPServer { m.Confine = true; return m }
	paths := func(m settings.MCPServer) settings.MCPServer {
		m = confine(m)
		m.Paths = settings.PathRules{Allow: []string{"src/", "docs/"}, Deny: []string{".env", "secrets/"}}
		return m
	}
	// Far more than the benchmark calls: the bucket is checked, never empty.
	limit := func(m settings.MCPServer) settings.MCPServer { m.RateLimit.PerMinute = 1e9; return m }
	all := func(m settings.MCPServer) settings.MCPServer { return limit(paths(tools(m))) }
	hidden := func(string) (string, map[string]any) { return "bench__write", map[string]any{"path": "x"} }
	outside := func(string) (string, map[string]any) { return "bench__read", map[string]any{"path": "/etc/passwd"} }
	secret := func(ws string) (string, map[string]any) {
		return "bench__read", map[string]any{"path": filepath.Join(ws, "secrets", "key")}
	}
	return []policyCase{
		{"none", none, unpinned, nil},
		{"tools", tools, unpinned, hidden},
		{"confine", confine, unpinned, outside},
		{"paths", paths, unpinned, secret},
		{"rateLimit", limit, unpinned, nil},
		{"pins", none, pinned, nil},
		{"all", all, pinned, secret},
	}
}
