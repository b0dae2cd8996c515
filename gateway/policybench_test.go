//go:build unix

package gateway

// BenchmarkPolicyCall times one tools/call through the whole way a
// workspace's agent takes: a go-sdk client over real HTTP to CodeHydra's
// MCP server (token, caller's rate limit, the gateway's checks), the
// gateway, stdio, and a small real MCP server (this test binary, see
// init) whose tool answers at once, so that what changes from one case to
// the next is the policy the call passes. The cases are in
// policybench_cases_test.go; build/bench-gateway-policy.sh runs this file
// with that list here and with a shorter one on the gateway before the
// policies, and writes the table in docs/BENCHMARKS.md. The file (and
// served_test.go, copied with it) uses only what both have, so that it
// runs on both unchanged.

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/settings"
	"codehydra/internal/testenv"
	"codehydra/mcp"
	"codehydra/workspace"
)

// benchServerEnv makes the test binary a small MCP server over stdio
// whose tools "read" and "write" take a path and answer "ok" without
// opening it. It is checked in init, not TestMain, so that this file
// alone adds it (the gateway before the policies has its own TestMain).
const benchServerEnv = "CODEHYDRA_TEST_GATEWAY_BENCH_SERVER"

func init() {
	if os.Getenv(benchServerEnv) == "" {
		return
	}
	type in struct {
		Path string `json:"path"`
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
	ok := func(context.Context, *sdk.CallToolRequest, in) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil, nil
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "read", Description: "Answers ok."}, ok)
	sdk.AddTool(srv, &sdk.Tool{Name: "write", Description: "Answers ok too."}, ok)
	if err := srv.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "bench server:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

// policyCase is one configuration a call is timed under.
type policyCase struct {
	name string
	// server adds the case's policies to the server's settings.
	server func(settings.MCPServer) settings.MCPServer
	// gateway adds the case's gateway options (pinning); dir is a
	// folder of the benchmark's own.
	gateway func(o *Options, dir string)
	// refused, when set, is a call (tool, arguments) that the case's
	// policies refuse in the workspace ws: the benchmark checks that
	// they are in force before it times anything.
	refused func(ws string) (string, map[string]any)
}

// BenchmarkPolicyCall times a call of bench__read under each case, the
// cases taken in turn on every round (each with its own gateway, MCP
// server, client and server process, and each round starting at the next
// case) so that the machine's load weighs on them alike. It reports each
// case's median and 90th percentile in microseconds ("µs-p50/<case>",
// "µs-p90/<case>"), and the CPU time this process (client, CodeHydra's
// MCP server and the gateway; not the server process) spent per call
// ("µs-cpu/<case>"), which the load moves less. Run it with a fixed
// count: -benchtime 300x.
func BenchmarkPolicyCall(b *testing.B) {
	cases := policyCases()
	sessions := make([]*sdk.ClientSession, len(cases))
	args := make([]map[string]any, len(cases))
	for i, c := range cases {
		sessions[i], args[i] = policyBench(b, c)
	}
	call := func(i int) {
		res, err := sessions[i].CallTool(b.Context(), &sdk.CallToolParams{Name: "bench__read", Arguments: args[i]})
		if err != nil || res.IsError {
			b.Fatalf("call: %v %+v", err, res)
		}
	}
	for range 50 { // the instances, the connections and the buckets warm
		for i := range sessions {
			call(i)
		}
	}
	took := make([][]time.Duration, len(cases))
	cpu := make([]time.Duration, len(cases))
	round := 0
	b.ResetTimer()
	for b.Loop() {
		for k := range sessions {
			i := (round + k) % len(sessions)
			cpu0, start := cpuTime(b), time.Now()
			call(i)
			took[i] = append(took[i], time.Since(start))
			cpu[i] += cpuTime(b) - cpu0
		}
		round++
	}
	b.StopTimer()
	for i, c := range cases {
		slices.Sort(took[i])
		b.ReportMetric(float64(took[i][len(took[i])/2].Nanoseconds())/1e3, "µs-p50/"+c.name)
		b.ReportMetric(float64(took[i][len(took[i])*9/10].Nanoseconds())/1e3, "µs-p90/"+c.name)
		b.ReportMetric(float64(cpu[i].Nanoseconds())/1e3/float64(len(took[i])), "µs-cpu/"+c.name)
	}
}

// cpuTime is the user and system time this process used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// policyBench serves a gateway with the one workspace-scoped server
// "bench" (c's policies added) to a workspace's client (see
// servedAsWorkspace), checks that c's refused call is refused, and
// returns the session and the arguments of a call: the absolute path of
// the workspace's src/a.txt.
func policyBench(b *testing.B, c policyCase) (*sdk.ClientSession, map[string]any) {
	b.Helper()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	srvCfg := c.server(settings.MCPServer{Command: exe, Env: map[string]string{benchServerEnv: "1"}, Scope: settings.ScopeWorkspace})
	o := Options{Servers: map[string]settings.MCPServer{"bench": srvCfg}, StartTimeout: 20 * time.Second, StopTimeout: time.Second,
		Log: slog.New(slog.DiscardHandler)}
	c.gateway(&o, b.TempDir())
	g := New(o)
	b.Cleanup(func() { _ = g.Close() })
	cs, ws := servedAsWorkspace(b, g, "bench__read")
	if c.refused != nil {
		tool, args := c.refused(ws)
		res, err := cs.CallTool(b.Context(), &sdk.CallToolParams{Name: tool, Arguments: args})
		if err == nil && !res.IsError {
			b.Fatalf("%s: %s %v was let through: the case's policies are not in force", c.name, tool, args)
		}
	}
	return cs, map[string]any{"path": filepath.Join(ws, "src", "a.txt")}
}

// servedAsWorkspace serves g through CodeHydra's real MCP server over
// real HTTP (the caller's own rate limit raised, so as not to time or
// trip it) and returns a real go-sdk client session with the token of a
// workspace, a real git worktree whose files include src/a.txt ("a"),
// and the workspace's path, once tool is listed.
func servedAsWorkspace(tb testing.TB, g *Gateway, tool string) (*sdk.ClientSession, string) {
	tb.Helper()
	project := testenv.GitRepo(tb, "proj")
	testenv.CommitFile(tb, project, "src/a.txt", "a\n", "a file to name")
	mgr := workspace.NewManager(workspace.Options{Projects: []string{project}, WorktreeRoot: tb.TempDir()})
	if err := mgr.Load(tb.Context()); err != nil {
		tb.Fatal(err)
	}
	w, err := mgr.Create(tb.Context(), workspace.CreateOptions{ProjectPath: project, Name: "feat"})
	if err != nil {
		tb.Fatal(err)
	}
	s := serveMCP(tb, mcp.Options{Workspaces: mgr, Gateway: g, RateLimit: 1e9, Burst: 1e9, Logger: slog.New(slog.DiscardHandler)})
	tok, err := s.token.ForWorkspace(w.Path)
	if err != nil {
		tb.Fatal(err)
	}
	cs := s.connect(tb, nil, tok, "")
	if !testenv.Poll(30*time.Second, 20*time.Millisecond, func() bool {
		res, err := cs.ListTools(tb.Context(), nil)
		return err == nil && slices.ContainsFunc(res.Tools, func(t *sdk.Tool) bool { return t.Name == tool })
	}) {
		tb.Fatalf("%s never listed", tool)
	}
	return cs, w.Path
}
