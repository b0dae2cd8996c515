package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/gateway"
	"codehydra/internal/instance"
	"codehydra/internal/paths"
	"codehydra/mcp"
)

// Issue 14's figures: a real stdio MCP server (server-everything) for 10
// agents, once through the gateway of `codehydra serve` (one shared
// instance) and once as one copy per agent, as each agent's own config
// would start it; and what a call through the gateway adds over calling
// the server directly.

// gatewayAgents is how many agents the memory figure is for.
const gatewayAgents = 10

// gatewayResult is the gateway part's figures.
type gatewayResult struct {
	Date time.Time
	Node string // node --version, which runs server-everything
	// LoadBefore and LoadAfter are the load average (1 min) around the
	// part: other work on the machine skews the latencies.
	LoadBefore, LoadAfter string
	// Copies is the process trees of one copy of the server per agent;
	// Shared the gateway's servers under serve once every workspace
	// called.
	Copies, Shared usage
	// ServeIdle and Serve are serve itself before any call, and with the
	// gateway's server running after every workspace called.
	ServeIdle, Serve usage
	// Direct and Through are the latencies of echo called directly over
	// stdio and through serve's MCP server and its gateway, interleaved.
	Direct, Through []time.Duration
	// ServeCPU is the CPU time serve spent during the timed calls.
	ServeCPU time.Duration
}

// everythingServer is the program build/setup.sh installs beside
// opencode, "" when it is not there.
func everythingServer() string {
	p := filepath.Join(paths.ToolsDir(), "node_modules", ".bin", "mcp-server-everything")
	if fi, err := os.Stat(p); err != nil || fi.IsDir() {
		return ""
	}
	return p
}

// benchGateway measures the gateway against one copy per agent. Without
// server-everything installed it notes why and measures nothing.
func (b *bench) benchGateway() error {
	bin := everythingServer()
	if bin == "" {
		b.gatewayNote = "not measured: server-everything is not installed (run `make setup`)"
		return nil
	}
	r := &gatewayResult{Date: time.Now().UTC(), LoadBefore: loadAverage()}
	if out, err := exec.CommandContext(b.ctx, "node", "--version").Output(); err == nil {
		r.Node = strings.TrimSpace(string(out))
	}
	copies, err := b.startCopies(bin, gatewayAgents)
	defer closeAll(copies)
	if err != nil {
		return err
	}
	settle := 3 * time.Second
	if b.opts.quick {
		settle = time.Second
	}
	time.Sleep(settle)
	for _, c := range copies {
		u, err := treeUsage(c.pid, nil)
		if err != nil {
			return err
		}
		r.Copies.add(u)
	}
	b.say("%d copies of server-everything: %d processes, RSS %d kB, CPU %s", gatewayAgents, r.Copies.Procs, r.Copies.RSS, ms(r.Copies.CPU))
	closeAll(copies[1:]) // the first stays, for the direct calls

	e, p, remotes, err := b.startGatewayServe(bin, r, settle)
	if p != nil {
		defer p.stop()
	}
	defer closeRemotes(remotes)
	if err != nil {
		return err
	}
	b.say("serve's gateway after %d workspaces called: %d processes, RSS %d kB, CPU %s (serve itself %d kB)", len(e.workspaces), r.Shared.Procs, r.Shared.RSS, ms(r.Shared.CPU), r.Serve.RSS)
	if err := b.gatewayLatency(r, copies[0].sess, remotes[0], p.cmd.Process.Pid); err != nil {
		return err
	}
	b.say("echo: direct p50 %s p95 %s; through the gateway p50 %s p95 %s", ms(median(r.Direct)), ms(percentile(r.Direct, 95)), ms(median(r.Through)), ms(percentile(r.Through, 95)))
	r.LoadAfter = loadAverage()
	b.gateway = r
	return nil
}

// serverCopy is one copy of a stdio server with its client session.
type serverCopy struct {
	sess *sdk.ClientSession
	pid  int
}

// startCopies starts n copies of the stdio server bin, each with its own
// go-sdk client session, and calls echo once on each: what n agents' own
// configs would run.
func (b *bench) startCopies(bin string, n int) ([]serverCopy, error) {
	var copies []serverCopy
	client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
	for range n {
		cmd := exec.Command(bin)
		ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
		sess, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
		cancel()
		if err != nil {
			return copies, fmt.Errorf("start server-everything: %w", err)
		}
		copies = append(copies, serverCopy{sess: sess, pid: cmd.Process.Pid})
		if err := echoDirect(b.ctx, sess); err != nil {
			return copies, err
		}
	}
	return copies, nil
}

func closeAll(copies []serverCopy) {
	for _, c := range copies {
		_ = c.sess.Close()
	}
}

func closeRemotes(remotes []*sdk.ClientSession) {
	for _, r := range remotes {
		_ = r.Close()
	}
}

// echoArgs is what every echo call sends.
var echoArgs = map[string]any{"message": "bench"}

// echoDirect calls server-everything's echo on sess.
func echoDirect(ctx context.Context, sess *sdk.ClientSession) error {
	return echo(ctx, sess, "echo")
}

// echoThrough calls echo through the gateway of the CodeHydra that sess
// is a session with.
func echoThrough(ctx context.Context, sess *sdk.ClientSession) error {
	return echo(ctx, sess, "everything__echo")
}

// echo calls tool, server-everything's echo under the name sess knows it
// by, and checks that the answer is echo's.
func echo(ctx context.Context, sess *sdk.ClientSession, tool string) error {
	res, err := sess.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: echoArgs})
	if err != nil {
		return fmt.Errorf("call %s: %w", tool, err)
	}
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok && !res.IsError && t.Text == "Echo: bench" {
			return nil
		}
	}
	return fmt.Errorf("call %s: not echo's answer: %+v", tool, res.Content)
}

// dialServe opens a go-sdk client session with serve's MCP server as the
// agent of workspace ws does: its workspace token, and ws named in the
// X-Workspace-Path header, over real HTTP.
func dialServe(ctx context.Context, info instance.Info, ws string) (*sdk.ClientSession, error) {
	token, err := mcp.WorkspaceToken(info.Token, ws)
	if err != nil {
		return nil, err
	}
	header := http.Header{"Authorization": {"Bearer " + token}, mcp.WorkspaceHeader: {ws}}
	hc := &http.Client{Transport: headerTransport{base: &http.Transport{Proxy: nil}, header: header}}
	client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
	sess, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: info.MCPURL, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return nil, fmt.Errorf("connect to serve's MCP server as %s: %w", ws, err)
	}
	return sess, nil
}

// headerTransport adds header to every request.
type headerTransport struct {
	base   http.RoundTripper
	header http.Header
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	maps.Copy(r.Header, t.header)
	return t.base.RoundTrip(r)
}

// startGatewayServe runs `codehydra serve` with server-everything in its
// mcpServers and 10 workspaces, opens one MCP session per workspace with
// the workspace's own token (as its agent would), has each call echo
// through the gateway, and measures the servers' memory and serve's.
func (b *bench) startGatewayServe(bin string, r *gatewayResult, settle time.Duration) (*serverEnv, *serverProc, []*sdk.ClientSession, error) {
	e, err := b.newServerEnv("gateway")
	if err == nil {
		err = e.grow(b.ctx, gatewayAgents)
	}
	if err == nil {
		err = addMCPServers(e, map[string]any{"everything": map[string]any{"command": bin}})
	}
	if err != nil {
		return nil, nil, nil, err
	}
	p, err := b.startServer(e)
	if err != nil {
		return nil, nil, nil, err
	}
	serve := p.cmd.Process.Pid
	onlyServe := func(pid int) bool { return pid == serve }
	time.Sleep(settle)
	if r.ServeIdle, err = treeUsage(serve, onlyServe); err != nil {
		return e, p, nil, err
	}
	var remotes []*sdk.ClientSession
	for _, ws := range e.workspaces {
		rem, err := dialServe(b.ctx, p.info, ws)
		if err != nil {
			return e, p, remotes, err
		}
		remotes = append(remotes, rem)
		if err := echoThrough(b.ctx, rem); err != nil {
			return e, p, remotes, err
		}
	}
	time.Sleep(settle)
	if r.Shared, err = treeUsage(serve, isGatewayServer); err != nil {
		return e, p, remotes, err
	}
	r.Serve, err = treeUsage(serve, onlyServe)
	return e, p, remotes, err
}

// addMCPServers adds servers as mcpServers to e's settings file.
func addMCPServers(e *serverEnv, servers map[string]any) error {
	path := filepath.Join(e.dir, "config", "codehydra", "settings.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read the bench's settings: %w", err)
	}
	var s map[string]any
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("read the bench's settings: %w", err)
	}
	s["mcpServers"] = servers
	data, _ = json.MarshalIndent(s, "", "  ")
	return os.WriteFile(path, data, 0o600)
}

// gatewayLatency times echo directly over stdio on sess and through the
// gateway on rem, alternating one of each so that the machine's other
// work weighs on both alike, after a warm-up of each.
// serve's CPU time over the timed calls is recorded too.
func (b *bench) gatewayLatency(r *gatewayResult, sess, rem *sdk.ClientSession, serve int) error {
	calls := 200
	if b.opts.quick {
		calls = 40
	}
	direct := func() error { return echoDirect(b.ctx, sess) }
	through := func() error { return echoThrough(b.ctx, rem) }
	for range 20 {
		if err := errors.Join(direct(), through()); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	onlyServe := func(pid int) bool { return pid == serve }
	before, err := treeUsage(serve, onlyServe)
	if err != nil {
		return err
	}
	for range calls {
		d, err := timeIt(1, direct)
		if err != nil {
			return err
		}
		t, err := timeIt(1, through)
		if err != nil {
			return err
		}
		r.Direct, r.Through = append(r.Direct, d...), append(r.Through, t...)
	}
	after, err := treeUsage(serve, onlyServe)
	r.ServeCPU = after.CPU - before.CPU
	return err
}

// isGatewayServer reports whether pid is a process of one of the
// gateway's stdio servers (the gateway marks their environment).
func isGatewayServer(pid int) bool {
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	return err == nil && bytes.Contains(env, []byte(gateway.MarkerEnv+"="))
}

// usage is the memory and CPU time of a set of processes.
type usage struct {
	RSS   int           // VmRSS summed, kB
	CPU   time.Duration // user + system time summed, since each started
	Procs int
}

// treeUsage sums the usage of root and of its descendants that keep says
// to count (all when keep is nil).
func treeUsage(root int, keep func(pid int) bool) (usage, error) {
	procs, err := readProcs()
	if err != nil {
		return usage{}, err
	}
	var u usage
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = append(queue[1:], procs.children[pid]...)
		if keep != nil && !keep(pid) {
			continue
		}
		rss, ok := vmRSS(pid)
		if !ok {
			continue // gone meanwhile
		}
		u.RSS += rss
		u.CPU += procs.cpu[pid]
		u.Procs++
	}
	if u.Procs == 0 {
		return u, fmt.Errorf("no process to measure under pid %d", root)
	}
	return u, nil
}

func (u *usage) add(v usage) {
	u.RSS += v.RSS
	u.CPU += v.CPU
	u.Procs += v.Procs
}

// loadAverage is the load average over the last minute, from /proc.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(data)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

// procTable is what /proc says of the live processes.
type procTable struct {
	children map[int][]int
	cpu      map[int]time.Duration
}

// clockTick is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on
// every Linux that Go runs on.
const clockTick = 10 * time.Millisecond

// readProcs reads each live process's parent and CPU time from /proc.
func readProcs() (procTable, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return procTable{}, fmt.Errorf("list processes: %w", err)
	}
	t := procTable{children: map[int][]int{}, cpu: map[int]time.Duration{}}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The fields after the command's name, which may hold spaces
		// and parentheses: from the state (field 3 of proc(5)) on.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 13 || f[0] == "Z" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		utime, _ := strconv.Atoi(f[11])
		stime, _ := strconv.Atoi(f[12])
		t.children[ppid] = append(t.children[ppid], pid)
		t.cpu[pid] = time.Duration(utime+stime) * clockTick
	}
	return t, nil
}

// vmRSS is the VmRSS of pid in kB; false when it is gone.
func vmRSS(pid int) (int, bool) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			v, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return v, err == nil
		}
	}
	return 0, false
}
