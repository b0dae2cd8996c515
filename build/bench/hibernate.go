package main

// Hibernation's figures (issue 25, point 6): the memory of 10 workspaces
// with every agent running against all of them hibernated, CodeHydra and
// its agents together, and the time from a wake to ready. One run, with
// the real opencode (as build/setup.sh installs it, offline) under
// `codehydra serve`, driven over MCP with the user's token like any client.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"codehydra/internal/instance"
	"codehydra/internal/paths"
	"codehydra/mcp"
)

// hibernateAgents is how many workspaces, each with its agent, the part
// runs.
const hibernateAgents = 10

// hibernateWakes is how many of them are woken, one after another, for
// the time from a wake to ready.
const hibernateWakes = 5

// hibernateResult is the part's figures.
type hibernateResult struct {
	Date       time.Time
	Running    treeMemory
	Hibernated treeMemory
	// Wakes are workspace_wake's answers, one per workspace in turn:
	// each comes once that agent is ready.
	Wakes []time.Duration
	// Hibernates are workspace_hibernate's answers: each comes once the
	// agent's processes are gone.
	Hibernates []time.Duration
	LoadBefore string
	LoadAfter  string
	// Restarts counts the agents restarted because they were not ready
	// within the 30 s a start has (a loaded machine).
	Restarts int
}

// treeMemory is the memory of serve's process tree: serve and every
// agent's processes.
type treeMemory struct {
	RSS, PSS int // kB, summed
	Procs    int
}

// benchHibernate measures hibernation; without opencode it notes why and
// measures nothing.
func (b *bench) benchHibernate() error {
	oc := filepath.Join(paths.ToolsDir(), "node_modules", ".bin", "opencode")
	if _, err := os.Stat(oc); err != nil {
		b.hibernateNote = "not measured: opencode is not installed (run `make setup`)"
		return nil
	}
	r := &hibernateResult{Date: time.Now().UTC(), LoadBefore: loadAverage()}
	dir := filepath.Join(b.tmp, "hibernate")
	env := append(os.Environ(), "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1")
	for _, v := range []string{"HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"} {
		d := filepath.Join(dir, strings.ToLower(v))
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
		env = append(env, v+"="+d)
	}
	repo := filepath.Join(dir, "repo")
	cmds := [][]string{{"init", "-q", "-b", "main", repo}, {"-C", repo, "commit", "-q", "--allow-empty", "-m", "init"}}
	var wss []string
	for i := range hibernateAgents {
		wt := filepath.Join(dir, "wt", fmt.Sprintf("ws%02d", i+1))
		cmds = append(cmds, []string{"-C", repo, "worktree", "add", "-q", "-b", fmt.Sprintf("ws%02d", i+1), wt})
		wss = append(wss, wt)
	}
	for _, args := range cmds {
		if out, err := exec.CommandContext(b.ctx, "git", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %w\n%s", args, err, out)
		}
	}
	for i, wt := range wss {
		real, err := filepath.EvalSymlinks(wt)
		if err != nil {
			return err
		}
		wss[i] = real
	}
	set, _ := json.Marshal(map[string]any{"opencodeBin": oc, "projects": []string{repo}, "notifications": false,
		"toolTimeoutSeconds": 600, "rateLimit": map[string]any{"perSecond": 1000, "burst": 1000}})
	cfg := filepath.Join(dir, "xdg_config_home", "codehydra")
	if err := os.MkdirAll(cfg, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cfg, "settings.json"), set, 0o600); err != nil {
		return err
	}

	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.bin, "serve")
	cmd.Env = env
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}()
	records := filepath.Join(dir, "xdg_state_home", "codehydra", "agents")
	runtime := filepath.Join(dir, "xdg_runtime_dir", "codehydra", "instance.json")
	// On a loaded machine an agent may not be ready within the 30 s a
	// start has; it is restarted (as the user would), a few times.
	restarts := 0
	var why string
	if err := waitFor(ctx, "all agents ready", func() bool {
		if readyAgents(records) == hibernateAgents {
			return true
		}
		var ws string
		if ws, why = failedAgent(ctx, runtime); ws != "" && restarts < 3*hibernateAgents {
			restarts++
			b.say("restarting an agent that did not start in time (load average %s): %s", loadAverage(), why)
			restartAgent(ctx, runtime, ws)
		}
		return restarts >= 3*hibernateAgents
	}); err != nil {
		return err
	}
	if readyAgents(records) != hibernateAgents {
		return fmt.Errorf("agents failed to start (load average %s): %s", loadAverage(), why)
	}
	r.Restarts = restarts
	// Let the agents settle (their start-up's garbage) before reading.
	time.Sleep(10 * time.Second)
	var err error
	if r.Running, err = readTreeMemory(cmd.Process.Pid); err != nil {
		return err
	}
	b.say("10 agents running: RSS %d kB, PSS %d kB, %d processes", r.Running.RSS, r.Running.PSS, r.Running.Procs)

	info, err := instance.Read(runtime)
	if err != nil {
		return err
	}
	user, err := mcp.Dial(ctx, mcp.DialOptions{URL: info.MCPURL, Token: info.Token, Version: "bench"})
	if err != nil {
		return err
	}
	defer user.Close()
	for _, ws := range wss {
		t0 := time.Now()
		if _, err := user.Call(ctx, mcp.ToolHibernate, map[string]any{"workspace": ws}); err != nil {
			return fmt.Errorf("hibernate %s: %w", ws, err)
		}
		r.Hibernates = append(r.Hibernates, time.Since(t0))
	}
	time.Sleep(3 * time.Second)
	if r.Hibernated, err = readTreeMemory(cmd.Process.Pid); err != nil {
		return err
	}
	b.say("10 agents hibernated: RSS %d kB, PSS %d kB, %d processes", r.Hibernated.RSS, r.Hibernated.PSS, r.Hibernated.Procs)
	for _, ws := range wss[:hibernateWakes] {
		t0 := time.Now()
		if _, err := user.Call(ctx, mcp.ToolWake, map[string]any{"workspace": ws}); err != nil {
			return fmt.Errorf("wake %s: %w", ws, err)
		}
		r.Wakes = append(r.Wakes, time.Since(t0))
		b.say("wake to ready: %s", ms(r.Wakes[len(r.Wakes)-1]))
	}
	r.LoadAfter = loadAverage()
	b.hibernate = r
	return nil
}

// waitFor polls cond every second until it holds or ctx ends.
func waitFor(ctx context.Context, what string, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		case <-time.After(time.Second):
		}
	}
	return nil
}

// failedAgent is the path of a workspace whose agent failed and why, as
// workspace_list tells the user; "" while none did (or the server cannot
// be asked yet).
func failedAgent(ctx context.Context, instanceFile string) (path, why string) {
	info, err := instance.Read(instanceFile)
	if err != nil {
		return "", ""
	}
	r, err := mcp.Dial(ctx, mcp.DialOptions{URL: info.MCPURL, Token: info.Token, Version: "bench"})
	if err != nil {
		return "", ""
	}
	defer r.Close()
	raw, err := r.Call(ctx, mcp.ToolList, nil)
	if err != nil {
		return "", ""
	}
	var list mcp.WorkspaceList
	if json.Unmarshal(raw, &list) != nil {
		return "", ""
	}
	for _, e := range list.Workspaces {
		if e.Agent.State == "failed" {
			return e.Path, e.Name + ": " + e.Agent.Detail
		}
	}
	return "", ""
}

// restartAgent restarts the agent of the workspace at path, as the user's
// client does (workspace_restart_agent with X-Workspace-Path).
func restartAgent(ctx context.Context, instanceFile, path string) {
	info, err := instance.Read(instanceFile)
	if err != nil {
		return
	}
	r, err := mcp.Dial(ctx, mcp.DialOptions{URL: info.MCPURL, Token: info.Token, WorkspacePath: path, Version: "bench"})
	if err != nil {
		return
	}
	defer r.Close()
	_, _ = r.Call(ctx, mcp.ToolRestartAgent, nil)
}

// readyAgents counts the agents whose record in dir has its port, which
// the supervisor writes once the agent is ready.
func readyAgents(dir string) int {
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	n := 0
	for _, f := range files {
		var rec struct {
			Port int `json:"port"`
		}
		if b, err := os.ReadFile(f); err == nil && json.Unmarshal(b, &rec) == nil && rec.Port != 0 {
			n++
		}
	}
	return n
}

// readTreeMemory sums VmRSS and Pss (smaps_rollup) over root and its
// descendants.
func readTreeMemory(root int) (treeMemory, error) {
	procs, err := readProcs()
	if err != nil {
		return treeMemory{}, err
	}
	var m treeMemory
	for queue := []int{root}; len(queue) > 0; queue = queue[1:] {
		pid := queue[0]
		queue = append(queue, procs.children[pid]...)
		rss, ok := vmRSS(pid)
		if !ok {
			continue
		}
		m.RSS += rss
		m.PSS += pss(pid)
		m.Procs++
	}
	if m.Procs == 0 {
		return m, fmt.Errorf("no process to measure under pid %d", root)
	}
	return m, nil
}

// pss is the proportional set size of pid in kB (shared pages divided
// among the processes that map them); 0 when it cannot be read.
func pss(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0
	}
	for line := range bytes.Lines(data) {
		if rest, ok := bytes.CutPrefix(line, []byte("Pss:")); ok {
			v, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(string(rest)), " kB"))
			return v
		}
	}
	return 0
}

// The part's section of docs/BENCHMARKS.md.
const (
	hibernateBeginMarker = "<!-- bench-hibernate:begin"
	hibernateEndMarker   = "<!-- bench-hibernate:end -->"
)

// writeHibernateSection prints the part's section and writes it into
// -out when it measured.
func (b *bench) writeHibernateSection() error {
	if b.hibernate == nil {
		if b.hibernateNote != "" {
			fmt.Printf("hibernate: %s\n", b.hibernateNote)
		}
		return nil
	}
	doc := b.reportHibernate()
	fmt.Print(doc)
	if b.opts.out == "" {
		return nil
	}
	if err := writeMarked(b.opts.out, doc, hibernateBeginMarker, hibernateEndMarker); err != nil {
		return fmt.Errorf("write the hibernation figures: %w", err)
	}
	fmt.Fprintf(os.Stderr, "bench: wrote the hibernation figures into %s\n", b.opts.out)
	return nil
}

func (b *bench) reportHibernate() string {
	r, m := b.hibernate, b.machine
	mb := func(kB int) string { return fmt.Sprintf("%.0f MB", float64(kB)/1024) }
	w := &markdown{}
	w.p("%s (written by `go run ./build/bench`, part hibernate; edits here are overwritten) -->", hibernateBeginMarker)
	w.p("## Hibernation (issue 25)")
	w.p("")
	w.p("Measured %s on %s (%d cores, %s RAM), %s, %s, by `go run ./build/bench -only hibernate -out docs/BENCHMARKS.md` (part of `make bench` too); one run. Load average (1 min) %s when the part started, %s at its end.",
		r.Date.Format("2006-01-02 15:04 MST"), m.CPU, m.Cores, m.RAM, m.Kernel, m.Go, r.LoadBefore, r.LoadAfter)
	w.p("")
	w.p("`codehydra serve` with one project of %d workspaces and the real opencode (offline; no model called), sandbox as by default. *Running*: every agent ready and idle, read 10 s after the last was ready. *Hibernated*: after `workspace_hibernate` on each (the user's token, over MCP), read 3 s later. Memory is serve's process tree, CodeHydra and every agent's processes together, from /proc: VmRSS summed (shared pages counted in each process) and Pss summed (shared pages divided among the processes that map them, so the sum is what the tree holds).", hibernateAgents)
	w.p("")
	if r.Restarts > 0 {
		w.p("The machine was loaded by other work: %d starts were not ready within the 30 s a start has and were restarted (`workspace_restart_agent`, as the user would) before every agent ran.", r.Restarts)
		w.p("")
	}
	w.p("| %d workspaces | processes | RSS, summed | PSS, summed |", hibernateAgents)
	w.p("|---|---:|---:|---:|")
	w.p("| every agent running | %d | %s | %s |", r.Running.Procs, mb(r.Running.RSS), mb(r.Running.PSS))
	w.p("| all hibernated | %d | %s | %s |", r.Hibernated.Procs, mb(r.Hibernated.RSS), mb(r.Hibernated.PSS))
	w.p("| freed | %d | %s | %s |", r.Running.Procs-r.Hibernated.Procs, mb(r.Running.RSS-r.Hibernated.RSS), mb(r.Running.PSS-r.Hibernated.PSS))
	w.p("")
	each := make([]string, len(r.Wakes))
	for i, d := range r.Wakes {
		each[i] = ms(d)
	}
	w.p("*Wake to ready* is `workspace_wake`'s answer, timed at the client: it answers once the agent is ready (healthy, and connected to CodeHydra's MCP server), so it is the wake's whole cost as a caller sees it. %d of the agents were woken, one after another.", len(r.Wakes))
	w.p("")
	w.p("| | median | p95 | each |")
	w.p("|---|---:|---:|---|")
	w.p("| wake to ready | %s | %s | %s |", ms(median(r.Wakes)), ms(percentile(r.Wakes, 95)), strings.Join(each, ", "))
	w.p("| hibernate (processes gone) | %s | %s | |", ms(median(r.Hibernates)), ms(percentile(r.Hibernates, 95)))
	w.p("%s", hibernateEndMarker)
	return w.String()
}
