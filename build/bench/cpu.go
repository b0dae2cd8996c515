package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"codehydra/mcp"
)

// cpuSessions is how many MCP sessions call at once while the CPU per
// call is measured.
const cpuSessions = 8

// cpuResult is the server's CPU time per tools/call of one tool, the
// median of several rounds, and its memory while it was called.
type cpuResult struct {
	Era     string // the protocol era the clients asked for
	What    string // server and tool
	Bare    bool   // the era's yardstick: the bare go-sdk server
	Calls   int    // per round
	Rounds  []time.Duration
	PerCall time.Duration
	// RSS and Anon are the most VmRSS and RssAnon (kB, /proc/<pid>/status)
	// seen while the sessions called.
	RSS, Anon int
	// Note says why the row was not measured (PerCall is 0).
	Note string
	// One is the latency of each call of one session calling back to
	// back, in every round's latency pass.
	One []time.Duration
}

// cpuTarget is one server and tool whose CPU per call is measured.
type cpuTarget struct {
	era, what, url, token, tool string
	bare                        bool
	pid                         int
	workspaces                  []string // X-Workspace-Path of each session, in turn; nil for none
}

// benchCPUServer starts codehydra serve with 10 workspaces and runs
// benchCPU against it.
func (b *bench) benchCPUServer() error {
	e, err := b.newServerEnv("cpu")
	if err != nil {
		return err
	}
	if err := e.grow(b.ctx, 10); err != nil {
		return err
	}
	p, err := b.startServer(e)
	if err != nil {
		return err
	}
	defer p.stop()
	var others []cpuTarget
	for i, setting := range b.opts.gc {
		oe, err := b.newServerEnv(fmt.Sprintf("cpu-gc%d", i))
		if err != nil {
			return err
		}
		oe.gc = strings.Fields(setting)
		if err := oe.grow(b.ctx, 10); err != nil {
			return err
		}
		op, err := b.startServer(oe)
		if err != nil {
			return fmt.Errorf("serve with %s: %w", setting, err)
		}
		defer op.stop()
		others = append(others, cpuTarget{era: eraSessions, what: "codehydra serve with " + setting + ", " + mcp.ToolGetStatus,
			url: op.info.MCPURL, token: op.info.Token, tool: mcp.ToolGetStatus, pid: op.cmd.Process.Pid, workspaces: oe.workspaces})
	}
	return b.benchCPU(e, p, others)
}

// benchCPU measures the CPU time that the server process spends per
// tools/call, in both eras of the protocol: workspace_get_status and
// workspace_get_opencode_port on codehydra serve, and the one tool of the
// bare go-sdk server of each era (stateful and stateless) and of the Node
// SDK's (sessions only), in the same run, the rounds interleaved so that
// the machine's load falls on all alike. The clients (this process) are
// not counted. A server that does not answer in the era asked for gets a
// note instead of figures.
// others are more servers to measure in the same rounds (serve with other
// garbage collector settings).
func (b *bench) benchCPU(e *serverEnv, p *serverProc, others []cpuTarget) error {
	bare, err := b.startBare(false)
	if err != nil {
		return err
	}
	defer bare.stop()
	stateless, err := b.startBare(true)
	if err != nil {
		return err
	}
	defer stateless.stop()
	targets := []cpuTarget{
		{era: eraSessions, what: bareRow(eraSessions), url: bare.url, token: bare.token, tool: bareTool, pid: bare.cmd.Process.Pid, bare: true},
	}
	node, err := b.startNode()
	if err != nil {
		b.notes = append(b.notes, fmt.Sprintf("No Node SDK figures: %v", err))
	} else {
		defer node.stop()
		targets = append(targets, cpuTarget{era: eraSessions, what: "bare Node SDK server (" + nodeSDKVersion() + "), one tool", url: node.url, token: node.token, tool: bareTool, pid: node.cmd.Process.Pid})
	}
	serve := func(era, tool string) cpuTarget {
		return cpuTarget{era: era, what: "codehydra serve, " + tool, url: p.info.MCPURL, token: p.info.Token, tool: tool, pid: p.cmd.Process.Pid, workspaces: e.workspaces}
	}
	targets = append(targets,
		serve(eraSessions, mcp.ToolGetStatus),
		serve(eraSessions, mcp.ToolGetOpencodePort),
	)
	targets = append(targets, others...)
	targets = append(targets,
		cpuTarget{era: eraStateless, what: bareRow(eraStateless), url: stateless.url, token: stateless.token, tool: bareTool, pid: stateless.cmd.Process.Pid, bare: true},
		serve(eraStateless, mcp.ToolGetStatus),
		serve(eraStateless, mcp.ToolGetOpencodePort),
	)
	calls, rounds := 4000, 5
	if b.opts.quick {
		calls, rounds = 1000, 1
	}
	results := make([]cpuResult, len(targets))
	for i, t := range targets {
		results[i] = cpuResult{Era: t.era, What: t.what, Bare: t.bare, Calls: calls}
	}
	for r := range rounds {
		for i, t := range targets {
			if results[i].Note != "" {
				continue
			}
			per, mem, err := b.cpuPerCall(t, calls)
			var other *otherEra
			if errors.As(err, &other) {
				results[i].Note = fmt.Sprintf("not measured: the server answered in %s", other.spoke)
				b.say("CPU per call, %s in %s: %s", t.what, t.era, results[i].Note)
				continue
			}
			if err != nil && (t.bare || t.era == eraSessions) {
				return fmt.Errorf("%s in %s: %w", t.what, t.era, err)
			}
			if err != nil {
				// The newer era's side is the newer code: its failure is a
				// figure of its own, not the end of the run.
				results[i].Note = fmt.Sprintf("failed: %v", err)
				b.say("CPU per call, %s in %s: %s", t.what, t.era, results[i].Note)
				continue
			}
			res := &results[i]
			res.Rounds = append(res.Rounds, per)
			res.RSS, res.Anon = max(res.RSS, mem.rss), max(res.Anon, mem.anon)
			b.say("CPU per call, round %d, %s in %s: %s, RSS %d kB", r+1, t.what, t.era, ms(per), mem.rss)
		}
	}
	// The tail of one session's calls, on the same servers: serve's
	// beside the bare servers' shows how much of it is the SDK's and the
	// machine's.
	for range rounds {
		for i, t := range targets {
			if results[i].Note != "" {
				continue
			}
			lat, err := b.oneSession(t, oneSessionFor)
			if err != nil {
				return fmt.Errorf("%s in %s, one session: %w", t.what, t.era, err)
			}
			results[i].One = append(results[i].One, lat...)
		}
	}
	for i := range results {
		results[i].PerCall = median(results[i].Rounds)
		if one := results[i].One; len(one) > 0 {
			b.say("one session, %s in %s: p50 %s, p99 %s of %d calls", targets[i].what, targets[i].era, ms(percentile(one, 50)), ms(percentile(one, 99)), len(one))
		}
	}
	b.cpu = results
	return nil
}

// warmClient connects session i of t (over t's workspaces in turn) and
// makes calls warm-up calls. The client is returned, to be closed, once
// connected, even when the server speaks another era (an *otherEra) or a
// warm-up call fails.
func (b *bench) warmClient(t cpuTarget, i, calls int) (*benchClient, error) {
	ws := ""
	if len(t.workspaces) > 0 {
		ws = t.workspaces[i%len(t.workspaces)]
	}
	c, err := dialEra(b.ctx, t.url, t.token, ws, t.era)
	if err != nil {
		return nil, err
	}
	if c.era() != t.era {
		return c, &otherEra{spoke: c.era()}
	}
	for range calls {
		if err := c.call(b.ctx, t.tool); err != nil {
			return c, fmt.Errorf("warm-up call: %w", err)
		}
	}
	return c, nil
}

// oneSessionFor is how long one session calls back to back in each
// round's latency pass.
const oneSessionFor = 2 * time.Second

// oneSession is the latency of each call of one session of t calling
// back to back for dur, after a warm-up.
func (b *bench) oneSession(t cpuTarget, dur time.Duration) ([]time.Duration, error) {
	if b.opts.quick {
		dur = time.Second
	}
	c, err := b.warmClient(t, 0, 50)
	if c != nil {
		defer c.close()
	}
	if err != nil {
		return nil, err
	}
	var lat []time.Duration
	for end := time.Now().Add(dur); time.Now().Before(end); {
		start := time.Now()
		if err := c.call(b.ctx, t.tool); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(start))
	}
	return lat, nil
}

// otherEra is the error of a server that answered in another era than
// the one asked for.
type otherEra struct{ spoke string }

func (e *otherEra) Error() string { return "the server answered in " + e.spoke }

// memory is a process's resident memory, kB.
type memory struct{ rss, anon int }

// cpuPerCall opens cpuSessions sessions, warms them up, then makes calls
// tools/calls spread over them and divides the server's CPU time by them.
// It also returns the most memory the server held meanwhile.
func (b *bench) cpuPerCall(t cpuTarget, calls int) (time.Duration, memory, error) {
	clients := make([]*benchClient, 0, cpuSessions)
	defer func() {
		for _, c := range clients {
			c.close()
		}
	}()
	for i := range cpuSessions {
		c, err := b.warmClient(t, i, 20)
		if c != nil {
			clients = append(clients, c)
		}
		if err != nil {
			return 0, memory{}, err
		}
	}
	stopWatch := make(chan struct{})
	peak := make(chan memory, 1)
	go func() { peak <- watchMemory(t.pid, stopWatch) }()
	before, err := procCPU(t.pid)
	if err != nil {
		close(stopWatch)
		return 0, memory{}, err
	}
	var (
		left     atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	left.Store(int64(calls))
	for _, c := range clients {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if err := c.call(b.ctx, t.tool); err != nil {
					mu.Lock()
					firstErr = cmpOr(firstErr, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	after, err := procCPU(t.pid)
	close(stopWatch)
	mem := <-peak
	if err != nil {
		return 0, mem, err
	}
	if firstErr != nil {
		return 0, mem, firstErr
	}
	return (after - before) / time.Duration(calls), mem, nil
}

// watchMemory reads pid's VmRSS and RssAnon every 10 ms until stop is
// closed and returns the most of each it saw.
func watchMemory(pid int, stop <-chan struct{}) memory {
	var most memory
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if m, err := readStatusMemory(pid); err == nil {
			most.rss, most.anon = max(most.rss, m.rss), max(most.anon, m.anon)
		}
		select {
		case <-stop:
			return most
		case <-tick.C:
		}
	}
}

// readStatusMemory reads VmRSS and RssAnon from /proc/<pid>/status.
func readStatusMemory(pid int) (memory, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	var m memory
	for line := range strings.Lines(string(data)) {
		name, rest, _ := strings.Cut(line, ":")
		kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
		switch name {
		case "VmRSS":
			m.rss = kb
		case "RssAnon":
			m.anon = kb
		}
	}
	return m, nil
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// reportCPU writes the CPU per call and its ratio to the bare go-sdk
// server's of the same era, and the servers' memory under that load.
func (b *bench) reportCPU(w *markdown) {
	if len(b.cpu) == 0 {
		return
	}
	w.p("### CPU and memory per call, both eras (issues 16 and 27)")
	w.p("")
	w.p("CPU time (user + system, from /proc/<pid>/stat) that the server process spends per `tools/call`, with %d MCP sessions calling at once (%d calls per round, median of %d rounds, every row's rounds interleaved in the same run), in both eras of the protocol: *2025-11-25*, where each client opens a session (`initialize`, `Mcp-Session-Id`), and *2026-07-28*, where it opens none (`server/discover`, then each request on its own). *Bare go-sdk* is a go-sdk server with the same checks on what comes in (bearer token, Host, Origin, body limit) and one trivial tool that takes no input, registered through the SDK's low-level `Server.AddTool` (the cheapest a go-sdk tool can be), run as its own process with Go's default garbage collector settings; in 2026-07-28 it serves on the SDK's stateless handler, the only one that speaks that era. *Bare Node SDK* is the same server written with the official TypeScript SDK (`build/bench/nodeserver.js`, a `McpServer` and transport per session, as its documentation shows) on node %s. *RSS under load* is the most VmRSS (and of it, RssAnon: heaps and stacks; the rest is mapped files, for codehydra mostly its own executable) read every 10 ms from /proc/<pid>/status while the sessions called. On a busy machine the absolute figures move; the ratios, measured in the same run, are what count (goal: ≤ ×1.3).",
		cpuSessions, b.cpu[0].Calls, len(b.cpu[0].Rounds), nodeVersion(b.ctx))
	w.p("")
	w.p("*One session* is the latency of one client's calls back to back, in a pass after each round's CPU figures (%d s per server per round): with no other session calling, the tail is the SDK's, the garbage collector's and the machine's (the client shares the cores).", int(oneSessionFor.Seconds()))
	w.p("")
	w.p("| era | server, tool | CPU per call | rounds | vs bare go-sdk, same era | RSS under load | of it anonymous | one session: p50 / p99 |")
	w.p("|---|---|---:|---|---:|---:|---:|---:|")
	bare := map[string]time.Duration{}
	for _, c := range b.cpu {
		if c.Bare {
			bare[c.Era] = c.PerCall
		}
	}
	for _, c := range b.cpu {
		if c.Note != "" {
			w.p("| %s | %s | – | %s | – | – | – | – |", c.Era, c.What, c.Note)
			continue
		}
		rounds := make([]string, len(c.Rounds))
		for i, r := range c.Rounds {
			rounds[i] = ms(r)
		}
		one := "–"
		if len(c.One) > 0 {
			one = ms(percentile(c.One, 50)) + " / " + ms(percentile(c.One, 99))
		}
		w.p("| %s | %s | %s | %s | %s | %s | %s | %s |", c.Era, c.What, ms(c.PerCall), strings.Join(rounds, ", "), ratio(c.PerCall, bare[c.Era]), mb(c.RSS), mb(c.Anon), one)
	}
	w.p("")
	if old, stateless := bare[eraSessions], bare[eraStateless]; old > 0 && stateless > 0 {
		w.p("The bare go-sdk server's call costs %s in 2026-07-28 against its own in 2025-11-25: a stateless request is served by a server session of its own, made and dropped per request.", ratio(stateless, old))
		w.p("")
	}
}

// cpuRow is the result of what in era; ok is false when it was not
// measured.
func (b *bench) cpuRow(era, what string) (cpuResult, bool) {
	for _, c := range b.cpu {
		if c.Era == era && c.What == what && c.Note == "" && c.PerCall > 0 {
			return c, true
		}
	}
	return cpuResult{}, false
}

// nodeVersion is `node --version`.
func nodeVersion(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "node", "--version").Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}
