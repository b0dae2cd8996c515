package main

import (
	"fmt"
	"os"
	"time"
)

// The sandbox's figures have a section of their own in docs/BENCHMARKS.md,
// like the gateway's (`-only sandbox -out docs/BENCHMARKS.md`).
const (
	sandboxBeginMarker = "<!-- bench-sandbox:begin"
	sandboxEndMarker   = "<!-- bench-sandbox:end -->"
)

// writeSandboxSection prints the sandbox's section and writes it into
// -out when the part measured.
func (b *bench) writeSandboxSection() error {
	if b.sandbox == nil {
		if b.sandboxNote != "" {
			fmt.Printf("sandbox: %s\n", b.sandboxNote)
		}
		return nil
	}
	doc := b.reportSandbox()
	fmt.Print(doc)
	if b.opts.out == "" {
		return nil
	}
	if err := writeMarked(b.opts.out, doc, sandboxBeginMarker, sandboxEndMarker); err != nil {
		return fmt.Errorf("write the sandbox's figures: %w", err)
	}
	fmt.Fprintf(os.Stderr, "bench: wrote the sandbox's figures into %s\n", b.opts.out)
	return nil
}

// reportSandbox renders the sandbox's figures, markers included.
func (b *bench) reportSandbox() string {
	r, m := b.sandbox, b.machine
	w := &markdown{}
	w.p("%s (written by `go run ./build/bench`, part sandbox; edits here are overwritten) -->", sandboxBeginMarker)
	w.p("## Kernel sandbox (issue 20)")
	w.p("")
	w.p("Measured %s on %s (%d cores, %s RAM), %s, %s, Landlock ABI %d, by `go run ./build/bench -only sandbox -out docs/BENCHMARKS.md` (part of `make bench` too). Load average (1 min) %s when the part started, %s at its end.",
		r.Date.Format("2006-01-02 15:04 MST"), m.CPU, m.Cores, m.RAM, m.Kernel, m.Go, r.ABI, r.LoadBefore, r.LoadAfter)
	w.p("")
	w.p("### The re-exec")
	w.p("")
	w.p("A confined process starts as the codehydra binary (built from this tree) running its hidden `sandbox-exec` command, which builds the Landlock rules, confines itself and execs the program. The bench starts `/bin/true` through `internal/proc` %d times each way, alternately, and times each start until the process has been waited for. The policy is shaped like an agent's on this machine (the system and this user's home readable, CodeHydra's folders cut out, a workspace and its temporary folder and the caches writable): it expands to %d rules.", sandboxRuns, r.Rules)
	w.p("")
	w.p("| start of `/bin/true` | p50 | p95 |")
	w.p("|---|---:|---:|")
	w.p("| plain (a session and process group of its own) | %s | %s |", ms(median(r.Plain)), ms(percentile(r.Plain, 95)))
	w.p("| confined (re-exec, rules, exec) | %s | %s |", ms(median(r.Confined)), ms(percentile(r.Confined, 95)))
	w.p("| the sandbox's cost per start | %s | |", ms(median(r.Confined)-median(r.Plain)))
	w.p("| of which: the codehydra binary starting (`codehydra version`) | %s | %s |", ms(median(r.Binary)), ms(percentile(r.Binary, 95)))
	w.p("")
	w.p("Most of the cost is the codehydra binary starting, not the rules: for serve the core program, which links no GUI toolkit (the tray app, `codehydra-gui`, still starts its confined processes through itself), runs its packages' initialisation before `sandbox-exec` reads its policy. Before the two programs (466508e) the one binary linked Fyne's X11 and OpenGL libraries, and the same start cost 284 ms (p50, at a load average of 10) of a 344 ms sandbox cost. Against an agent's start of several seconds it does not show; a task run by `workspace_run_task` pays it once.")
	w.p("")
	if len(r.AgentOff) == 0 {
		w.p("Agent starts were not measured: %s.", b.sandboxNote)
		w.p("%s", sandboxEndMarker)
		return w.String()
	}
	w.p("### An agent's start and memory")
	w.p("")
	w.p("`codehydra serve` with one project and one workspace and the real opencode (as build/setup.sh installs it, offline), settings `sandbox` `\"off\"` and `\"auto\"`, %d launches each, alternately, each in fresh folders. *Ready* is the launch of serve to the agent's record holding its port (the supervisor writes it once opencode answers healthy and is connected to CodeHydra's MCP server). RSS is VmRSS summed over the agent's process tree 2 s after it was ready.", sandboxAgentRuns)
	w.p("")
	w.p("| sandbox | ready, median | ready, each | agent RSS, median |")
	w.p("|---|---:|---|---:|")
	for _, row := range []struct {
		name string
		runs []agentStart
	}{{"off", r.AgentOff}, {"auto (confined)", r.AgentOn}} {
		var ready []time.Duration
		var rss []time.Duration // kB as durations, to reuse median
		each := ""
		for i, a := range row.runs {
			ready = append(ready, a.Ready)
			rss = append(rss, time.Duration(a.RSS))
			if i > 0 {
				each += ", "
			}
			each += ms(a.Ready)
		}
		w.p("| %s | %s | %s | %d MB |", row.name, ms(median(ready)), each, int(median(rss))/1024)
	}
	w.p("")
	w.p("%s", sandboxEndMarker)
	return w.String()
}
