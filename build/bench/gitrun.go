package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"codehydra/mcp"
)

// One session's tail while git runs in the server's process tree: serve
// runs its Go code on one P once started (internal/daemon/gc.go), and a
// goroutine that waits for a git run in a blocking system call holds that
// P until the runtime's monitor takes it back. These figures set serve as
// installed beside serve on every core, under the same git load.

// gitChangeEvery is how often a file in the called workspace changes
// while its session calls, so that the status cache runs git for it all
// along.
const gitChangeEvery = 20 * time.Millisecond

// gitRunResult is one session's latency through the thin client while a
// file in its workspace changed every gitChangeEvery.
type gitRunResult struct {
	Era, What string
	Lat       []time.Duration
	Changes   int
}

// benchWhileGitRuns times one session calling workspace_get_opencode_port
// through the thin client on serve (p, in e) and on a second serve with
// GOMAXPROCS set to every core, in both eras, while a file in the called
// workspace changes every gitChangeEvery; the rounds interleave.
func (b *bench) benchWhileGitRuns(e *serverEnv, p *serverProc) error {
	all := fmt.Sprintf("GOMAXPROCS=%d", runtime.NumCPU())
	ae, ap, err := b.startServeWith("cpu-all-cores", []string{all})
	if err != nil {
		return err
	}
	defer ap.stop()
	tool := mcp.ToolGetOpencodePort
	var targets []cpuTarget
	for _, era := range []string{eraSessions, eraStateless} {
		targets = append(targets,
			cpuTarget{era: era, what: "codehydra serve, " + tool, url: p.info.MCPURL, token: p.info.Token, tool: tool, workspaces: e.workspaces},
			cpuTarget{era: era, what: "codehydra serve with " + all + ", " + tool, url: ap.info.MCPURL, token: ap.info.Token, tool: tool, workspaces: ae.workspaces})
	}
	results := make([]gitRunResult, len(targets))
	rounds, dur := 5, oneSessionFor
	if b.opts.quick {
		rounds, dur = 1, time.Second
	}
	for range rounds {
		for i, t := range targets {
			lat, changes, err := b.oneSessionWhileGitRuns(t, dur)
			if err != nil {
				return fmt.Errorf("%s in %s, while git runs: %w", t.what, t.era, err)
			}
			r := &results[i]
			r.Era, r.What = t.era, t.what
			r.Lat = append(r.Lat, lat...)
			r.Changes += changes
		}
	}
	for _, r := range results {
		b.say("one session while git runs, %s in %s: p50 %s, p99 %s of %d calls, %d changes", r.What, r.Era, ms(percentile(r.Lat, 50)), ms(percentile(r.Lat, 99)), len(r.Lat), r.Changes)
	}
	b.gitRuns = results
	return nil
}

// oneSessionWhileGitRuns replays t's call through the thin client for dur
// while a file in the session's workspace changes every gitChangeEvery,
// and returns the latencies and how many changes there were.
func (b *bench) oneSessionWhileGitRuns(t cpuTarget, dur time.Duration) ([]time.Duration, int, error) {
	c, err := b.warmClient(t, 0, 50)
	if c != nil {
		defer c.close()
	}
	if err != nil {
		return nil, 0, err
	}
	ctx, cancel := context.WithCancel(b.ctx)
	changed := make(chan int, 1)
	go func() { changed <- changeFiles(ctx, filepath.Join(t.workspaces[0], "bench-git-runs.txt")) }()
	lat, err := c.replayFor(ctx, dur)
	cancel()
	return lat, <-changed, err
}

// changeFiles writes file anew every gitChangeEvery until ctx ends, then
// removes it, and returns how many times it wrote it.
func changeFiles(ctx context.Context, file string) int {
	defer os.Remove(file)
	tick := time.NewTicker(gitChangeEvery)
	defer tick.Stop()
	n := 0
	for {
		select {
		case <-ctx.Done():
			return n
		case <-tick.C:
		}
		n++
		if os.WriteFile(file, []byte(strconv.Itoa(n)+"\n"), 0o644) != nil {
			return n
		}
	}
}

// reportWhileGitRuns writes benchWhileGitRuns's figures.
func (b *bench) reportWhileGitRuns(w *markdown) {
	if len(b.gitRuns) == 0 {
		return
	}
	w.p("*While git runs*: one session calling `%s` through the thin client on a workspace in which a file changes every %d ms (the status cache runs git for it all along: the file is new, then changed), for %d s per round, the rounds interleaved: serve as installed (one P once started), and a second serve with `GOMAXPROCS` set to every core. A goroutine that waits for git in a blocking system call holds the one P until Go's runtime takes it back; this is what that costs a call.", mcp.ToolGetOpencodePort, gitChangeEvery.Milliseconds(), int(oneSessionFor.Seconds()))
	w.p("")
	w.p("| era | server, tool | calls | p50 | p99 | file changes |")
	w.p("|---|---|---:|---:|---:|---:|")
	for _, r := range b.gitRuns {
		w.p("| %s | %s | %d | %s | %s | %d |", r.Era, r.What, len(r.Lat), ms(percentile(r.Lat, 50)), ms(percentile(r.Lat, 99)), r.Changes)
	}
	w.p("")
}
