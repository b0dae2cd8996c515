package main

import (
	"fmt"
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
// median of several rounds.
type cpuResult struct {
	What    string // server and tool
	Calls   int    // per round
	Rounds  []time.Duration
	PerCall time.Duration
}

// cpuTarget is one server and tool whose CPU per call is measured.
type cpuTarget struct {
	what, url, token, tool string
	pid                    int
	workspaces             []string
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
	return b.benchCPU(e, p)
}

// benchCPU measures the CPU time that the server process spends per
// tools/call: workspace_get_status and workspace_get_opencode_port on
// codehydra serve, and the one tool of the bare go-sdk server, in the
// same run, the rounds interleaved so that the machine's load falls on
// all three alike. The clients (this process) are not counted.
func (b *bench) benchCPU(e *serverEnv, p *serverProc) error {
	bare, err := b.startBare()
	if err != nil {
		return err
	}
	defer bare.stop()
	targets := []cpuTarget{
		{what: "bare go-sdk server, one tool", url: bare.url, token: bare.token, tool: bareTool, pid: bare.cmd.Process.Pid, workspaces: e.workspaces},
		{what: "codehydra serve, " + mcp.ToolGetStatus, url: p.info.MCPURL, token: p.info.Token, tool: mcp.ToolGetStatus, pid: p.cmd.Process.Pid, workspaces: e.workspaces},
		{what: "codehydra serve, " + mcp.ToolGetOpencodePort, url: p.info.MCPURL, token: p.info.Token, tool: mcp.ToolGetOpencodePort, pid: p.cmd.Process.Pid, workspaces: e.workspaces},
	}
	calls, rounds := 4000, 3
	if b.opts.quick {
		calls, rounds = 1000, 1
	}
	results := make([]cpuResult, len(targets))
	for r := range rounds {
		for i, t := range targets {
			per, err := b.cpuPerCall(t, calls)
			if err != nil {
				return fmt.Errorf("%s: %w", t.what, err)
			}
			results[i].What, results[i].Calls = t.what, calls
			results[i].Rounds = append(results[i].Rounds, per)
			b.say("CPU per call, round %d, %s: %s", r+1, t.what, ms(per))
		}
	}
	for i := range results {
		results[i].PerCall = median(results[i].Rounds)
	}
	b.cpu = results
	return nil
}

// cpuPerCall opens cpuSessions sessions, warms them up, then makes calls
// tools/calls spread over them and divides the server's CPU time by them.
func (b *bench) cpuPerCall(t cpuTarget, calls int) (time.Duration, error) {
	remotes := make([]*mcp.Remote, 0, cpuSessions)
	defer func() {
		for _, r := range remotes {
			r.Close()
		}
	}()
	for i := range cpuSessions {
		r, err := mcp.Dial(b.ctx, mcp.DialOptions{URL: t.url, Token: t.token, WorkspacePath: t.workspaces[i%len(t.workspaces)], Version: "bench"})
		if err != nil {
			return 0, err
		}
		remotes = append(remotes, r)
		for range 20 {
			if _, err := r.Call(b.ctx, t.tool, nil); err != nil {
				return 0, fmt.Errorf("warm-up call: %w", err)
			}
		}
	}
	before, err := procCPU(t.pid)
	if err != nil {
		return 0, err
	}
	var (
		left     atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	left.Store(int64(calls))
	for _, r := range remotes {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if _, err := r.Call(b.ctx, t.tool, nil); err != nil {
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
	if err != nil {
		return 0, err
	}
	if firstErr != nil {
		return 0, firstErr
	}
	return (after - before) / time.Duration(calls), nil
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// reportCPU writes the CPU per call and its ratio to the bare server's.
func (b *bench) reportCPU(w *markdown) {
	if len(b.cpu) == 0 {
		return
	}
	w.p("### CPU per call (issue 16)")
	w.p("")
	w.p("CPU time (user + system, from /proc/<pid>/stat) that the server process spends per `tools/call`, with %d MCP sessions calling at once (%d calls per round, median of %d rounds, the three interleaved in the same run). *Bare* is a go-sdk server with the same checks on what comes in (bearer token, Host, Origin, body limit) and one trivial tool that takes no input, registered through the SDK's low-level `Server.AddTool` (the cheapest a go-sdk tool can be), run as its own process. On a busy machine the absolute figures move; the ratios are what count (goal: ≤ ×1.3).",
		cpuSessions, b.cpu[0].Calls, len(b.cpu[0].Rounds))
	w.p("")
	w.p("| server, tool | CPU per call | rounds | vs bare |")
	w.p("|---|---:|---|---:|")
	bare := b.cpu[0].PerCall
	for _, c := range b.cpu {
		rounds := make([]string, len(c.Rounds))
		for i, r := range c.Rounds {
			rounds[i] = ms(r)
		}
		w.p("| %s | %s | %s | %s |", c.What, ms(c.PerCall), strings.Join(rounds, ", "), ratio(c.PerCall, bare))
	}
	w.p("")
}
