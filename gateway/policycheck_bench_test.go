package gateway

import (
	"testing"

	"codehydra/internal/settings"
)

// BenchmarkRefuses times, in process, the gateway's own check of a call
// (server.refuses): switched off, tools rules, a pinned definition that
// changed, the workspace's choice of servers. Pinning's per-call cost is a
// lookup among the withheld tools; its hashing happens when tools are
// listed, not per call. See BenchmarkPolicyCall for the whole call.
func BenchmarkRefuses(b *testing.B) {
	g := New(Options{Unpinned: true})
	b.Cleanup(func() { _ = g.Close() })
	rules := settings.ToolRules{Allow: []string{"read", "list*"}, Deny: []string{"write*", "delete*"}}
	for _, c := range []struct {
		name    string
		cfg     settings.MCPServer
		changed map[string]ToolChange
	}{
		{"none", settings.MCPServer{Command: "x"}, nil},
		{"tools", settings.MCPServer{Command: "x", Tools: rules}, nil},
		{"pins", settings.MCPServer{Command: "x"}, map[string]ToolChange{"other": {}}},
		{"all", settings.MCPServer{Command: "x", Tools: rules}, map[string]ToolChange{"other": {}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := newServer(g, "bench", c.cfg)
			s.changed = c.changed
			for b.Loop() {
				if err := s.refuses("/ws", "read"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
