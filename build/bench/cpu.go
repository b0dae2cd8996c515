package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
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
	// back, in every round's latency pass, through the go-sdk client;
	// Thin the same calls replayed by a thin client (benchClient.thinCall).
	One, Thin []time.Duration
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
	e, p, err := b.startServeWith("cpu", nil)
	if err != nil {
		return err
	}
	defer p.stop()
	var others []cpuTarget
	for i, setting := range b.opts.gc {
		oe, op, err := b.startServeWith(fmt.Sprintf("cpu-gc%d", i), strings.Fields(setting))
		if err != nil {
			return err
		}
		defer op.stop()
		others = append(others, cpuTarget{era: eraSessions, what: "codehydra serve with " + setting + ", " + mcp.ToolGetStatus,
			url: op.info.MCPURL, token: op.info.Token, tool: mcp.ToolGetStatus, pid: op.cmd.Process.Pid, workspaces: oe.workspaces})
	}
	if err := b.benchCPU(e, p, others); err != nil {
		return err
	}
	return b.benchWhileGitRuns(e, p)
}

// startServeWith starts codehydra serve in a new home name with 10
// workspaces and the runtime settings settings (e.g. "GOGC=100"; none:
// its own), and waits until it has settled.
func (b *bench) startServeWith(name string, settings []string) (*serverEnv, *serverProc, error) {
	e, err := b.newServerEnv(name)
	if err != nil {
		return nil, nil, err
	}
	e.gc = settings
	if err := e.grow(b.ctx, 10); err != nil {
		return nil, nil, err
	}
	p, err := b.startServer(e)
	if err != nil {
		return nil, nil, fmt.Errorf("serve with %s: %w", strings.Join(settings, " "), err)
	}
	if err := p.awaitSettled(e); err != nil {
		p.stop()
		return nil, nil, err
	}
	return e, p, nil
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
	// The bare go-sdk server with serve's one P, beside it: how much of
	// serve's figures the setting alone gives any go-sdk server.
	bareOneP, err := b.startBare(false, oneP)
	if err != nil {
		return err
	}
	defer bareOneP.stop()
	statelessOneP, err := b.startBare(true, oneP)
	if err != nil {
		return err
	}
	defer statelessOneP.stop()
	targets := []cpuTarget{
		{era: eraSessions, what: bareRow(eraSessions), url: bare.url, token: bare.token, tool: bareTool, pid: bare.cmd.Process.Pid, bare: true},
		{era: eraSessions, what: bareRow(eraSessions) + ", " + oneP, url: bareOneP.url, token: bareOneP.token, tool: bareTool, pid: bareOneP.cmd.Process.Pid},
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
		cpuTarget{era: eraStateless, what: bareRow(eraStateless) + ", " + oneP, url: statelessOneP.url, token: statelessOneP.token, tool: bareTool, pid: statelessOneP.cmd.Process.Pid},
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
	for r := range rounds {
		for i, t := range targets {
			if results[i].Note != "" {
				continue
			}
			lat, thin, err := b.oneSession(t, oneSessionFor, r%2 == 1)
			if err != nil {
				return fmt.Errorf("%s in %s, one session: %w", t.what, t.era, err)
			}
			results[i].One = append(results[i].One, lat...)
			results[i].Thin = append(results[i].Thin, thin...)
		}
	}
	for i := range results {
		results[i].PerCall = median(results[i].Rounds)
		if one, thin := results[i].One, results[i].Thin; len(one) > 0 && len(thin) > 0 {
			b.say("one session, %s in %s: thin client p50 %s, p99 %s of %d calls; go-sdk client p50 %s, p99 %s of %d calls", targets[i].what, targets[i].era,
				ms(percentile(thin, 50)), ms(percentile(thin, 99)), len(thin), ms(percentile(one, 50)), ms(percentile(one, 99)), len(one))
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

// oneP is serve's own GOMAXPROCS (internal/daemon/gc.go), for the bare
// go-sdk server's rows beside the yardstick.
const oneP = "GOMAXPROCS=1"

// oneSessionFor is how long one session calls back to back in each
// round's latency pass.
const oneSessionFor = 2 * time.Second

// oneSession is the latency of each call of one session of t calling
// back to back for dur, after a warm-up: through the go-sdk client
// (sdkLat), and the same call replayed by a thin client for as long on
// the same session (thin), whose own work and garbage are next to none,
// so that its tail is the server's and the machine's. thinFirst runs the
// thin client's pass first (the rounds take turns, so that neither pass
// has the warmer server).
func (b *bench) oneSession(t cpuTarget, dur time.Duration, thinFirst bool) (sdkLat, thin []time.Duration, err error) {
	if b.opts.quick {
		dur = time.Second
	}
	c, err := b.warmClient(t, 0, 50)
	if c != nil {
		defer c.close()
	}
	if err != nil {
		return nil, nil, err
	}
	viaSDK := func() error {
		for end := time.Now().Add(dur); time.Now().Before(end); {
			start := time.Now()
			if err := c.call(b.ctx, t.tool); err != nil {
				return err
			}
			sdkLat = append(sdkLat, time.Since(start))
		}
		return nil
	}
	replay := func() error {
		thin, err = c.replayFor(b.ctx, dur)
		return err
	}
	passes := []func() error{viaSDK, replay}
	if thinFirst {
		passes[0], passes[1] = replay, viaSDK
	}
	for _, pass := range passes {
		if err := pass(); err != nil {
			return nil, nil, err
		}
	}
	return sdkLat, thin, nil
}

// replayFor replays c's recorded call back to back for dur, after a
// warm-up, and returns each call's latency (thinCall).
func (c *benchClient) replayFor(ctx context.Context, dur time.Duration) ([]time.Duration, error) {
	var body, answer bytes.Buffer
	id := 1 << 20
	for range 20 { // warm-up
		id++
		if err := c.thinCall(ctx, id, &body, &answer); err != nil {
			return nil, err
		}
	}
	var lat []time.Duration
	for end := time.Now().Add(dur); time.Now().Before(end); {
		id++
		start := time.Now()
		err := c.thinCall(ctx, id, &body, &answer)
		lat = append(lat, time.Since(start))
		if err == nil {
			err = checkAnswer(answer.Bytes(), id)
		}
		if err != nil {
			return nil, err
		}
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
	w.p("CPU time (user + system, from /proc/<pid>/stat) that the server process spends per `tools/call`, with %d MCP sessions calling at once (%d calls per round, median of %d rounds, every row's rounds interleaved in the same run), in both eras of the protocol: *2025-11-25*, where each client opens a session (`initialize`, `Mcp-Session-Id`), and *2026-07-28*, where it opens none (`server/discover`, then each request on its own). *Bare go-sdk* is a go-sdk server with the same checks on what comes in (bearer token, Host, Origin, body limit) and one trivial tool that takes no input, registered through the SDK's low-level `Server.AddTool` (the cheapest a go-sdk tool can be), run as its own process with Go's default runtime settings (as many Ps as cores, GOGC 100, no memory limit), and beside it with serve's one P (`GOMAXPROCS=1`); in 2026-07-28 it serves on the SDK's stateless handler, the only one that speaks that era. *Bare Node SDK* is the same server written with the official TypeScript SDK (`build/bench/nodeserver.js`, a `McpServer` and transport per session, as its documentation shows) on node %s. *RSS under load* is the most VmRSS (and of it, RssAnon: heaps and stacks; the rest is mapped files, for codehydra mostly its own executable) read every 10 ms from /proc/<pid>/status while the sessions called. On a busy machine the absolute figures move; the ratios, measured in the same run, are what count (goal: ≤ ×1.3).",
		cpuSessions, b.cpu[0].Calls, len(b.cpu[0].Rounds), nodeVersion(b.ctx))
	w.p("")
	w.p("*One session* is the latency of one client's calls back to back, in a pass after each round's CPU figures, with no other session calling: %d s through a go-sdk client (its session, or in 2026-07-28 its per-request `_meta`), and %d s of the same call replayed by a *thin client* (the two passes take turns at going first): the bytes of the go-sdk client's first `tools/call` as they went on the wire (its headers, session id and `_meta`), a new JSON-RPC id each time, sent on the same HTTP client's connections, the whole answer read, timed, and then checked to be the call's successful result. The server does the same work for both; the thin client does next to none while it is timed, where the go-sdk client decodes every answer through new 32 KiB buffers (the SDK's JSON decoder) and collects its own garbage on the same %d cores: the thin client's tail is the server's and the machine's.", int(oneSessionFor.Seconds()), int(oneSessionFor.Seconds()), runtime.NumCPU())
	w.p("")
	w.p("| era | server, tool | CPU per call | rounds | vs bare go-sdk, same era | RSS under load | of it anonymous | one session, thin client: p50 / p99 | one session, go-sdk client: p50 / p99 |")
	w.p("|---|---|---:|---|---:|---:|---:|---:|---:|")
	bare := map[string]time.Duration{}
	for _, c := range b.cpu {
		if c.Bare {
			bare[c.Era] = c.PerCall
		}
	}
	for _, c := range b.cpu {
		if c.Note != "" {
			w.p("| %s | %s | – | %s | – | – | – | – | – |", c.Era, c.What, c.Note)
			continue
		}
		rounds := make([]string, len(c.Rounds))
		for i, r := range c.Rounds {
			rounds[i] = ms(r)
		}
		w.p("| %s | %s | %s | %s | %s | %s | %s | %s | %s |", c.Era, c.What, ms(c.PerCall), strings.Join(rounds, ", "), ratio(c.PerCall, bare[c.Era]), mb(c.RSS), mb(c.Anon), p50p99(c.Thin), p50p99(c.One))
	}
	w.p("")
	if old, stateless := bare[eraSessions], bare[eraStateless]; old > 0 && stateless > 0 {
		w.p("The bare go-sdk server's call costs %s in 2026-07-28 against its own in 2025-11-25: a stateless request is served by a server session of its own, made and dropped per request.", ratio(stateless, old))
		w.p("")
	}
	b.reportWhileGitRuns(w)
}

// p50p99 is "p50 / p99" of lat, "–" when it is empty.
func p50p99(lat []time.Duration) string {
	if len(lat) == 0 {
		return "–"
	}
	return ms(percentile(lat, 50)) + " / " + ms(percentile(lat, 99))
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
