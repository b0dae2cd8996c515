package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"codehydra/mcp"
)

// The markers around the section this bench owns in docs/BENCHMARKS.md.
const (
	beginMarker = "<!-- bench:begin -->"
	endMarker   = "<!-- bench:end -->"
)

// report renders the results as markdown, markers included: one section
// per part of the bench, each written by its own method.
func (b *bench) report() string {
	w := &markdown{}
	w.p(beginMarker)
	b.reportMachine(w)
	b.reportTargets(w)
	b.reportTargets27(w)
	b.reportStatus(w)
	b.reportCalls(w)
	b.reportCPU(w)
	b.reportCreates(w)
	b.reportStartups(w)
	b.reportMemory(w)
	b.reportNotes(w)
	w.p(endMarker)
	return w.String()
}

// markdown collects the report, one line per p.
type markdown struct{ strings.Builder }

// p writes one line: format with args, then a newline.
func (w *markdown) p(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }

// reportMachine writes the heading and the machine the figures come from.
func (b *bench) reportMachine(w *markdown) {
	m := b.machine
	w.p("## Core figures (`make bench`)")
	w.p("")
	w.p("Measured %s on %s (%d cores, %s RAM), %s, %s, git %s; load average %s when the bench started, inotify watch limit %s. Written by `go run ./build/bench`; rerun with `make bench`.",
		m.Date.Format("2006-01-02 15:04 MST"), m.CPU, m.Cores, m.RAM, m.Kernel, m.Go, m.Git, m.Load, m.WatchLimit)
	w.p("")
}

// reportTargets writes the targets of issue 7 and whether they were met.
func (b *bench) reportTargets(w *markdown) {
	w.p("### Targets (issue 7)")
	w.p("")
	w.p("| target | goal | measured | |")
	w.p("|---|---|---|---|")
	for _, t := range b.targets() {
		w.p("| %s | %s | %s | %s |", t.what, t.goal, t.got, t.verdict)
	}
	w.p("")
}

// bareRow is the CPU table's row of the bare go-sdk server of era.
func bareRow(era string) string {
	if era == eraStateless {
		return "bare go-sdk server, stateless handler, one tool"
	}
	return "bare go-sdk server, one tool"
}

// reportTargets27 writes issue 27's targets for CPU and memory together,
// from this run's figures.
func (b *bench) reportTargets27(w *markdown) {
	var rows []target
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**missed**"
	}
	for _, era := range []string{eraSessions, eraStateless} {
		yard, okBare := b.cpuRow(era, bareRow(era))
		st, ok := b.cpuRow(era, "codehydra serve, "+mcp.ToolGetStatus)
		if !ok || !okBare {
			continue
		}
		r := float64(st.PerCall) / float64(yard.PerCall)
		rows = append(rows, target{fmt.Sprintf("CPU per call, %s, %s, vs the bare go-sdk server (8 sessions)", mcp.ToolGetStatus, era), "≤ ×1.3",
			fmt.Sprintf("%s (%s against %s)", ratio(st.PerCall, yard.PerCall), ms(st.PerCall), ms(yard.PerCall)), verdict(r <= 1.3)})
	}
	var node cpuResult
	okNode := false
	for _, c := range b.cpu {
		if strings.HasPrefix(c.What, "bare Node SDK") && c.Note == "" {
			node, okNode = c, true
		}
	}
	serveRSS := 0
	for _, c := range b.cpu {
		if c.Era == eraSessions && strings.HasPrefix(c.What, "codehydra serve, ") {
			serveRSS = max(serveRSS, c.RSS)
		}
	}
	if okNode && serveRSS > 0 {
		r := float64(serveRSS) / float64(node.RSS)
		rows = append(rows, target{"RSS under the same 8-session load, codehydra serve vs the Node SDK's bare server", "≤ ×0.25",
			fmt.Sprintf("×%.2f (%s against %s)", r, mb(serveRSS), mb(node.RSS)), verdict(r <= 0.25)})
	}
	for _, era := range []string{eraSessions, eraStateless} {
		serve, okServe := b.cpuRow(era, "codehydra serve, "+mcp.ToolGetStatus)
		yard, okYard := b.cpuRow(era, bareRow(era))
		if !okServe || len(serve.Thin) == 0 {
			continue
		}
		p99 := percentile(serve.Thin, 99)
		got := ms(p99)
		if okYard && len(yard.Thin) > 0 {
			got += fmt.Sprintf(" (the bare go-sdk server's %s)", ms(percentile(yard.Thin, 99)))
		}
		sdkP99 := percentile(serve.One, 99)
		got += fmt.Sprintf("; through the go-sdk client %s", ms(sdkP99))
		if sdkP99 > 2*time.Millisecond {
			got += ", over 2 ms"
		}
		if okYard && len(yard.One) > 0 {
			got += fmt.Sprintf(" (the bare go-sdk server's %s)", ms(percentile(yard.One, 99)))
		}
		for _, c := range b.calls {
			if c.Sessions == 1 && c.Era == era {
				got += fmt.Sprintf(", in *`tools/call` over MCP* %s", ms(c.P99))
			}
		}
		rows = append(rows, target{"tools/call p99 of one session calling back to back, the server's (a thin client; " + mcp.ToolGetStatus + ", " + era + ")", "≤ 2 ms", got, verdict(p99 <= 2*time.Millisecond)})
	}
	if len(rows) == 0 {
		return
	}
	w.p("### Targets (issue 27): CPU and memory together")
	w.p("")
	w.p("From this one run, all three from the table *CPU and memory per call* below: the CPU ratio and the memory under its 8-session load, the p99 from its one-session pass, through the thin client, whose tail is the server's (and, beside it, through the go-sdk client, whose own decoding and garbage collection add to every call it makes, and the same session's in *`tools/call` over MCP*). serve runs as installed (%s).", gcSetting())
	w.p("")
	w.p("| target | goal | measured | |")
	w.p("|---|---|---|---|")
	for _, t := range rows {
		w.p("| %s | %s | %s | %s |", t.what, t.goal, t.got, t.verdict)
	}
	w.p("")
}

// gcSetting says which runtime settings serve ran with: its own unless
// the bench's environment set GOMAXPROCS, GOGC or GOMEMLIMIT.
func gcSetting() string {
	var set []string
	for _, k := range runtimeSettings() {
		if v, ok := os.LookupEnv(k); ok {
			set = append(set, k+"="+v)
		}
	}
	if len(set) == 0 {
		return "its built-in runtime settings: one P, GOGC 300 and a memory limit that follows the live heap, docs/DESIGN.md"
	}
	return "with " + strings.Join(set, " ") + " from the bench's environment"
}

// reportStatus writes Manager.Status against bare git status, per
// repository size.
func (b *bench) reportStatus(w *markdown) {
	w.p("### Workspace status")
	w.p("")
	w.p("In-process `workspace.Manager.Status` on a generated repository (one commit, %d files per folder, plus an ignored `node_modules/` of %d files) and its linked worktree. *Bare* is `git status --porcelain` alone; *uncached* is Status without the cache (what every call cost before). *Cold* is the first call after `Run` starts: it sets up the file watches and runs the first git status. *Warm* calls answer from the cache. *Change → shown* is how long a new file (and then its removal) takes to show in Status.", filesPerDir, ignoredFiles)
	w.p("")
	w.p("| files | folders | bare git status | uncached Status | cold | warm p50 | warm p99 | warm p99 vs bare | inotify watches | change → dirty | change → clean |")
	w.p("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for i, s := range b.status {
		c := b.changes[i]
		w.p("| %d | %d | %s | %s | %s | %s | %s | %s | %d | %s | %s |",
			s.Files, s.Dirs, ms(s.Bare), ms(s.Uncached), ms(s.Cold), ms(s.WarmP50), ms(s.WarmP99), ratio(s.WarmP99, s.Bare), s.Watches, ms(c.Dirty), ms(c.Clean))
	}
	w.p("")
}

// reportCalls writes tools/call through the real server, per number of
// sessions.
func (b *bench) reportCalls(w *markdown) {
	w.p("### `tools/call` over MCP")
	w.p("")
	w.p("`workspace_get_status` through `codehydra serve` (built from this tree) with 10 workspaces, each session a real MCP client (`mcp.Dial`, its own HTTP connection) spread over the workspaces, calling back to back for a few seconds: in 2026-07-28 (no session on the server: each call is a request of its own), and one session also in 2025-11-25 (`initialize`, then the calls in its session). The rate limit is raised for the bench (settings `rateLimit` 10⁹/s): at the default 20 calls/s per workspace and tool it would measure the limiter. Every call is audited (audit.jsonl) as in normal use.")
	w.p("")
	w.p("| era | sessions | calls | p50 | p99 | calls/s | errors | p50 vs bare git status (%s) |", ms(firstBare(b.calls)))
	w.p("|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, c := range b.calls {
		w.p("| %s | %d | %d | %s | %s | %.0f | %d | %s |", c.Era, c.Sessions, c.Calls, ms(c.P50), ms(c.P99), c.PerSec, c.Errors, ratio(c.P50, c.Bare))
	}
	w.p("")
}

// reportCreates writes Create and Delete against the bare git commands.
func (b *bench) reportCreates(w *markdown) {
	w.p("### Create and delete")
	w.p("")
	w.p("`workspace.Manager.Create` (validation, `git worktree add -b`, base metadata in git config, discovery) and `Delete` (stop agent, remove metadata, the worktree set aside and removed through an `os.Root` with git's record, `git branch -D`) against the bare git commands on the same repository, median of 5.")
	w.p("")
	w.p("| files | `git worktree add -b` | Create | ratio | `git worktree remove` + `git branch -D` | Delete | ratio |")
	w.p("|---:|---:|---:|---:|---:|---:|---:|")
	for _, c := range b.creates {
		w.p("| %d | %s | %s | %s | %s | %s | %s |", c.Files, ms(c.BareAdd), ms(c.Create), ratio(c.Create, c.BareAdd), ms(c.BareRemove), ms(c.Delete), ratio(c.Delete, c.BareRemove))
	}
	w.p("")
}

// reportStartups writes the start-up times of serve and, when measured,
// of the tray app.
func (b *bench) reportStartups(w *markdown) {
	w.p("### Start-up")
	w.p("")
	w.p("From exec of `codehydra serve` to: *MCP ready* — the instance file names the port and an authenticated `initialize` is answered; *loaded* — projects and workspaces discovered (\"CodeHydra is running\"). Agents are excluded (opencodeBin points at a missing file). Median of the launches, slowest in brackets.")
	w.p("")
	w.p("| workspaces | launches | MCP ready | loaded |")
	w.p("|---:|---:|---:|---:|")
	for _, s := range b.startups {
		w.p("| %d | %d | %s (%s) | %s (%s) |", s.Workspaces, len(s.MCPReady), ms(median(s.MCPReady)), ms(percentile(s.MCPReady, 100)), ms(median(s.Loaded)), ms(percentile(s.Loaded, 100)))
	}
	if b.gui != nil {
		w.p("")
		w.p("Tray app (`codehydra` on Xvfb with xfce4-panel as the StatusNotifier host, from `build/desktop.sh`, 10 workspaces, %d launches): exec → the tray menu is on D-Bus with its items, median %s (slowest %s); → the menu lists the 10 workspaces, median %s (slowest %s). `build/bench-gui.sh` measures it too, with 3 workspaces and with agents (its section below).",
			len(b.gui.TrayReady), ms(median(b.gui.TrayReady)), ms(percentile(b.gui.TrayReady, 100)), ms(median(b.gui.Listed)), ms(percentile(b.gui.Listed, 100)))
		w.p("")
		w.p("Opening a window: from the click on *Settings…* (over D-Bus) to its window on screen, %s, once, on the last launch: the window process starts, asks the app for the settings and loads the GL driver (what the tray process no longer holds).", ms(b.gui.WindowShown))
	} else {
		w.p("")
		w.p("Tray app: %s.", b.guiNote)
	}
	w.p("")
}

// reportMemory writes the idle memory of each process measured.
func (b *bench) reportMemory(w *markdown) {
	w.p("### Memory, idle")
	w.p("")
	w.p("Read from /proc a few seconds after start-up, agents excluded. *Executable* is the resident pages of the codehydra binary itself (clean, shared with the page cache); *GL driver* is Mesa and what it loads (on Xvfb: llvmpipe, i.e. libLLVM); *C heap* is malloc's heap (`serve` has none; on the tray app it is the GL driver's).")
	w.p("")
	w.p("Where the tray app's memory goes: the tray process shows its menu through the systray library over D-Bus and opens no window, so it never loads the GL driver; each window (Settings, New workspace, a question…) opens in a short-lived window process of the GUI program (`codehydra-gui ui-window`), which loads it and gives it all back when its window closes. *Before* is the tray app of commit %s, built from this repository's history and measured the same way in this run: there Fyne's own tray opened a hidden OpenGL window (\"SystrayMonitor\") as soon as a tray menu was set, so the GL driver was loaded though no window was shown. When there is no tray host and the small main window is shown instead, windows stay in the one process, and Fyne's parsed font faces add about 19 MB of Go heap, 12 MB of it the bundled emoji font, which `go build -tags no_emoji` leaves out.", trayBefore)
	w.p("")
	w.p("| process | workspaces | RSS | PSS | anonymous (PSS) | executable | GL driver | C heap |")
	w.p("|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range b.memoryRows() {
		w.p("| %s | %d | %s | %s | %s | %s | %s | %s |", r.Mode, r.Workspaces, mb(r.RSS), mb(r.PSS), mb(r.Anon), mb(r.Binary), mb(r.GL), mb(r.CHeap))
	}
	w.p("")
}

// memoryRows are the idle processes, then the tray app before the lighter
// tray, and the tray app with Settings open and after it closed.
func (b *bench) memoryRows() []rssResult {
	rows := b.idleMemory()
	if g := b.gui; g != nil {
		if g.Before != nil {
			rows = append(rows, *g.Before)
		}
		rows = append(rows, g.TrayWindowOpen, g.Window, g.TrayAfterWindow)
	}
	return rows
}

// reportNotes writes what went wrong during the run, if anything.
func (b *bench) reportNotes(w *markdown) {
	if len(b.notes) > 0 {
		w.p("Notes:")
		for _, n := range b.notes {
			w.p("- %s", n)
		}
		w.p("")
	}
}

// target is one line of the targets table.
type target struct{ what, goal, got, verdict string }

func (b *bench) targets() []target {
	var out []target
	verdict := func(ok bool, miss string) string {
		if ok {
			return "met"
		}
		return "**missed** " + miss
	}
	if n := len(b.status); n > 0 {
		s := b.status[n-1]
		out = append(out, target{
			fmt.Sprintf("warm status, %d files", s.Files), "≤ 1 ms",
			fmt.Sprintf("p50 %s, p99 %s", ms(s.WarmP50), ms(s.WarmP99)),
			verdict(s.WarmP99 <= time.Millisecond, fmt.Sprintf("by %s", ms(s.WarmP99-time.Millisecond))),
		})
		var worst time.Duration
		for _, c := range b.changes {
			worst = max(worst, c.Dirty, c.Clean)
		}
		out = append(out, target{"isDirty right after a change (any size)", "≤ 1 s", "slowest median " + ms(worst),
			verdict(worst <= time.Second, fmt.Sprintf("by %s", ms(worst-time.Second)))})
	}
	if len(b.startups) > 0 {
		var all []time.Duration
		for _, s := range b.startups {
			all = append(all, s.MCPReady...)
		}
		worst := percentile(all, 100)
		out = append(out, target{"MCP server answering after launch (all launches)", "≤ 100 ms",
			fmt.Sprintf("median %s, slowest %s of %d", ms(median(all)), ms(worst), len(all)),
			verdict(worst <= 100*time.Millisecond, fmt.Sprintf("by %s (the slowest launch)", ms(worst-100*time.Millisecond)))})
	}
	if b.gui != nil {
		worst := percentile(b.gui.Listed, 100)
		out = append(out, target{"tray ready after launch (menu lists the 10 workspaces)", "≤ 1 s",
			fmt.Sprintf("median %s, slowest %s", ms(median(b.gui.Listed)), ms(worst)),
			verdict(worst <= time.Second, fmt.Sprintf("by %s", ms(worst-time.Second)))})
	} else {
		out = append(out, target{"tray ready after launch", "≤ 1 s", "–", b.guiNote})
	}
	for _, r := range b.idleMemory() {
		if r.Workspaces != 10 {
			continue
		}
		// serve: issue 16's "idle serve ≤ 40 MB"; the tray app: its
		// "lighter tray" (≤ 80 MB, from 103–115 MB).
		limit := 40 * 1024
		if r.Mode != "serve" {
			limit = 80 * 1024
		}
		miss := fmt.Sprintf("by %s", mb(r.RSS-limit))
		if r.GL > 0 {
			miss += fmt.Sprintf("; without the GL driver and its heap (%s): %s", mb(r.GL+r.CHeap), mb(r.RSS-r.GL-r.CHeap))
		}
		out = append(out, target{fmt.Sprintf("RSS idle, %s, 10 workspaces", r.Mode), fmt.Sprintf("≤ %d MB", limit/1024), mb(r.RSS), verdict(r.RSS <= limit, miss)})
	}
	return out
}

// idleMemory is every process whose idle memory was measured: serve, and
// the tray app when it ran.
func (b *bench) idleMemory() []rssResult {
	if b.gui == nil {
		return b.rss
	}
	return append(slices.Clip(b.rss), b.gui.RSS)
}

func firstBare(c []callResult) time.Duration {
	if len(c) == 0 {
		return 0
	}
	return c[0].Bare
}

// mb formats kB as MB with one decimal.
func mb(kb int) string {
	if kb == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f MB", float64(kb)/1024)
}

// writeSection puts doc (markers included) into the file at path: in place
// of the old section, or appended; other content stays.
func writeSection(path, doc string) error {
	return writeMarked(path, doc, beginMarker, endMarker)
}

// writeMarked puts doc, which starts with beginMark and ends with
// endMark, into the file at path: in place of the old section between the
// marks, or appended; other content stays.
func writeMarked(path, doc, beginMark, endMark string) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	text := string(old)
	var out string
	begin, end := strings.Index(text, beginMark), strings.Index(text, endMark)
	switch {
	case begin >= 0 && end > begin:
		out = text[:begin] + doc + strings.TrimPrefix(text[end+len(endMark):], "\n")
	case text == "":
		out = "# Benchmarks\n\nFigures measured on real parts: the `codehydra` binary, real git, real HTTP.\n\n" + doc
	default:
		out = strings.TrimRight(text, "\n") + "\n\n" + doc
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(out), 0o644)
}
