package main

import (
	"fmt"
	"sync"
	"time"

	"codehydra/mcp"
)

// callResult is tools/call (workspace_get_status) through the real server.
type callResult struct {
	Era      string // the protocol version the clients speak
	Sessions int
	Calls    int
	Errors   int
	P50, P99 time.Duration
	PerSec   float64
	Bare     time.Duration // `git status` on the same workspace
}

// benchCalls runs workspace_get_status from 1, 8 and 50 MCP sessions at
// once, each a real client on its own connection, in 2026-07-28 (what
// mcp.Dial speaks); one session also in 2025-11-25, whose p99 issue 27
// set its goal on.
func (b *bench) benchCalls(e *serverEnv, p *serverProc) error {
	bare, err := timeIt(5, func() error {
		_, err := gitOut(b.ctx, "-C", e.workspaces[0], "status", "--porcelain=v1", "-z", "--untracked-files=normal")
		return err
	})
	if err != nil {
		return err
	}
	dur := 3 * time.Second
	if b.opts.quick {
		dur = time.Second
	}
	runs := []struct {
		era      string
		sessions int
	}{{eraSessions, 1}, {eraStateless, 1}, {eraStateless, 8}, {eraStateless, 50}}
	for _, run := range runs {
		res, err := b.callsFrom(e, p, run.era, run.sessions, dur)
		if err != nil {
			return err
		}
		res.Bare = median(bare)
		b.calls = append(b.calls, res)
		b.say("tools/call in %s with %d sessions: p50 %s, p99 %s, %.0f calls/s", run.era, run.sessions, ms(res.P50), ms(res.P99), res.PerSec)
	}
	return nil
}

// callsFrom opens sessions MCP clients spread over the workspaces, warms
// up each, and then has all of them call workspace_get_status back to
// back for dur. Failed calls count as errors (and a note), not as a failed
// bench.
func (b *bench) callsFrom(e *serverEnv, p *serverProc, era string, sessions int, dur time.Duration) (callResult, error) {
	remotes := make([]*mcp.Remote, 0, sessions)
	defer func() {
		for _, r := range remotes {
			r.Close()
		}
	}()
	for i := range sessions {
		opts := mcp.DialOptions{URL: p.info.MCPURL, Token: p.info.Token, WorkspacePath: e.workspaces[i%len(e.workspaces)], Version: "bench"}
		if era == eraSessions {
			opts.Protocol = mcp.ProtocolSessions
		}
		r, err := mcp.Dial(b.ctx, opts)
		if err != nil {
			return callResult{}, err
		}
		remotes = append(remotes, r)
	}
	// Warm up every session and workspace, then measure.
	for _, r := range remotes {
		for range 20 {
			if _, err := r.Call(b.ctx, mcp.ToolGetStatus, nil); err != nil {
				return callResult{}, fmt.Errorf("warm-up call: %w", err)
			}
		}
	}
	var (
		mu       sync.Mutex
		all      []time.Duration
		errCount int
		firstErr error
		wg       sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(dur)
	for _, r := range remotes {
		wg.Go(func() {
			lat, errs, fe := b.callUntil(r, deadline)
			mu.Lock()
			all = append(all, lat...)
			errCount += errs
			if firstErr == nil {
				firstErr = fe
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		b.notes = append(b.notes, fmt.Sprintf("%d of the calls with %d sessions in %s failed; the first: %v", errCount, sessions, era, firstErr))
	}
	return callResult{
		Era: era, Sessions: sessions, Calls: len(all), Errors: errCount,
		P50: percentile(all, 50), P99: percentile(all, 99),
		PerSec: float64(len(all)) / elapsed.Seconds(),
	}, nil
}

// callUntil calls workspace_get_status on r back to back until deadline and
// returns each call's latency, how many failed and the first failure.
func (b *bench) callUntil(r *mcp.Remote, deadline time.Time) (lat []time.Duration, errs int, first error) {
	for time.Now().Before(deadline) {
		t0 := time.Now()
		_, err := r.Call(b.ctx, mcp.ToolGetStatus, nil)
		lat = append(lat, time.Since(t0))
		if err != nil {
			errs++
			if first == nil {
				first = err
			}
		}
	}
	return lat, errs, first
}
