package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"codehydra/internal/paths"
)

// The gateway's figures have a section of their own in docs/BENCHMARKS.md,
// so that `-only gateway -out docs/BENCHMARKS.md` can rewrite them without
// the core section (whose other parts take most of an hour).
const (
	gatewayBeginMarker = "<!-- bench-gateway:begin"
	gatewayEndMarker   = "<!-- bench-gateway:end -->"
)

// writeGatewaySection prints the gateway's section and writes it into
// -out, when the part ran and measured; without figures (server-everything
// missing) it leaves the file's section as it is.
func (b *bench) writeGatewaySection() error {
	if b.gateway == nil {
		if b.gatewayNote != "" {
			fmt.Printf("MCP gateway: %s\n", b.gatewayNote)
		}
		return nil
	}
	doc := b.reportGateway()
	fmt.Print(doc)
	if b.opts.out == "" {
		return nil
	}
	if err := writeMarked(b.opts.out, doc, gatewayBeginMarker, gatewayEndMarker); err != nil {
		return fmt.Errorf("write the gateway's figures: %w", err)
	}
	fmt.Fprintf(os.Stderr, "bench: wrote the gateway's figures into %s\n", b.opts.out)
	return nil
}

// reportGateway renders the gateway's figures, markers included.
func (b *bench) reportGateway() string {
	r, m := b.gateway, b.machine
	w := &markdown{}
	w.p("%s (written by `go run ./build/bench`, part gateway; edits here are overwritten) -->", gatewayBeginMarker)
	w.p("## MCP gateway (issue 14)")
	w.p("")
	w.p("Measured %s on %s (%d cores, %s RAM), %s, by `go run ./build/bench -only gateway -out docs/BENCHMARKS.md` (part of `make bench` too). The server is the real `@modelcontextprotocol/server-everything` %s over stdio, on node %s, as build/setup.sh installs it.",
		r.Date.Format("2006-01-02 15:04 MST"), m.CPU, m.Cores, m.RAM, m.Go, everythingVersion(), r.Node)
	w.p("")
	w.p("**The machine was loaded** while this ran: load average (1 min) %s when the part started and %s at its end, on %d cores, as other builds and test runs shared it. The latencies are therefore upper bounds, and both paths were timed alternately, one call of each in turn, so that the load weighs on both alike; memory hardly moves with load.", r.LoadBefore, r.LoadAfter, m.Cores)
	w.p("")
	w.p("### Memory: %d agents' worth of server-everything", gatewayAgents)
	w.p("")
	w.p("*One copy per agent* is what each agent's own MCP config does today: the bench starts %d copies of the server, each with its own go-sdk client session over stdio, and calls `echo` once on each. *Through the gateway* is `codehydra serve` (built from this tree) with the server configured once in settings `mcpServers` (scope shared) and %d workspaces, each opening its own MCP session with its workspace token (as its agent does) and calling `everything__echo` once: the gateway starts one instance and every workspace's call goes to it. RSS is VmRSS from /proc/<pid>/status summed over the server processes (a copy's process tree; under serve, the processes the gateway marks as its servers), %s after the last call. CPU is their user + system time since they started (/proc/<pid>/stat), mostly node starting up.", gatewayAgents, gatewayAgents, "a few seconds")
	w.p("")
	w.p("| %d agents | server processes | RSS, total | RSS per agent | CPU time, total |", gatewayAgents)
	w.p("|---|---:|---:|---:|---:|")
	w.p("| one copy per agent | %d | %s | %s | %s |", r.Copies.Procs, mb(r.Copies.RSS), mb(r.Copies.RSS/gatewayAgents), ms(r.Copies.CPU))
	w.p("| one shared instance through the gateway | %d | %s | %s | %s |", r.Shared.Procs, mb(r.Shared.RSS), mb(r.Shared.RSS/gatewayAgents), ms(r.Shared.CPU))
	w.p("| saved by the gateway | %d | %s | | %s |", r.Copies.Procs-r.Shared.Procs, mb(r.Copies.RSS-r.Shared.RSS), ms(r.Copies.CPU-r.Shared.CPU))
	w.p("")
	w.p("What the gateway costs CodeHydra itself: serve's own VmRSS was %s before the first call and %s with the server connected and the %d workspaces' sessions open (+%s).",
		mb(r.ServeIdle.RSS), mb(r.Serve.RSS), gatewayAgents, mb(r.Serve.RSS-r.ServeIdle.RSS))
	w.p("")
	w.p("### Latency a call through the gateway adds")
	w.p("")
	w.p("`echo` (`{\"message\":\"bench\"}`) called back to back, %d times each after 20 warm-up calls, alternating: *directly*, a go-sdk client session over stdio with one copy of server-everything (an agent's own copy); *through the gateway*, a go-sdk client session over Streamable HTTP (real HTTP on 127.0.0.1) with serve's MCP server, as workspace 1 with its workspace token, whose call passes the token check, the rate limit (raised for the bench, as in the `tools/call` figures above, so as not to measure the limiter), the timeout and the audit log (a line per call) before the gateway forwards it over stdio to the shared instance.", len(r.Direct))
	w.p("")
	w.p("| path | calls | p50 | p95 |")
	w.p("|---|---:|---:|---:|")
	w.p("| directly (client → stdio → server) | %d | %s | %s |", len(r.Direct), ms(median(r.Direct)), ms(percentile(r.Direct, 95)))
	w.p("| through the gateway (client → HTTP → serve → gateway → stdio → server) | %d | %s | %s |", len(r.Through), ms(median(r.Through)), ms(percentile(r.Through, 95)))
	w.p("| added by the gateway | | %s | %s |", signedMs(median(r.Through)-median(r.Direct)), signedMs(percentile(r.Through, 95)-percentile(r.Direct, 95)))
	w.p("")
	perCall := time.Duration(0)
	if len(r.Through) > 0 {
		perCall = r.ServeCPU / time.Duration(len(r.Through))
	}
	w.p("serve's CPU time over the %d timed calls through it: %s in all, %s per call (at the 10 ms resolution of /proc/<pid>/stat over the whole run).", len(r.Through), ms(r.ServeCPU), ms(perCall))
	w.p(gatewayEndMarker)
	return w.String()
}

// signedMs is ms with a sign, for differences.
func signedMs(d time.Duration) string {
	if d < 0 {
		return "−" + ms(-d)
	}
	return "+" + ms(d)
}

// everythingVersion is the installed server-everything's version, from
// its package.json; "" when unknown.
func everythingVersion() string {
	data, err := os.ReadFile(filepath.Join(paths.ToolsDir(), "node_modules", "@modelcontextprotocol", "server-everything", "package.json"))
	var pkg struct {
		Version string `json:"version"`
	}
	if err != nil || json.Unmarshal(data, &pkg) != nil {
		return ""
	}
	return pkg.Version
}
