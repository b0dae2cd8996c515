package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"codehydra/internal/paths"
	"codehydra/internal/proc"
	"codehydra/internal/sandbox"
)

// Issue 20's figures: what the kernel sandbox costs. A confined process
// starts as a re-exec of the codehydra binary that builds its Landlock
// rules and execs the program; the bench times that against a plain
// start, and an agent's start to ready and its memory with the sandbox
// off and on, with the real opencode.

// sandboxRuns is how many starts each way the re-exec figure takes;
// sandboxAgentRuns how many agent starts each way.
const (
	sandboxRuns      = 40
	sandboxAgentRuns = 3
)

// sandboxResult is the sandbox part's figures.
type sandboxResult struct {
	Date     time.Time
	ABI      int
	Rules    int // the rules the policy of the re-exec figure expands to
	Plain    []time.Duration
	Confined []time.Duration
	// Binary is `codehydra version`: what starting the binary itself
	// costs, which the re-exec pays before it builds any rule.
	Binary     []time.Duration
	AgentOff   []agentStart
	AgentOn    []agentStart
	LoadBefore string
	LoadAfter  string
}

// agentStart is one start of an agent: launch of serve to its agent's
// ready, and the agent's process tree's memory once ready.
type agentStart struct {
	Ready time.Duration
	RSS   int // kB
}

// benchSandbox measures the sandbox. Where the kernel has no Landlock it
// notes why and measures nothing.
func (b *bench) benchSandbox() error {
	st := sandbox.Probe()
	if !st.Enforced {
		b.sandboxNote = "not measured: " + st.Reason
		return nil
	}
	r := &sandboxResult{Date: time.Now().UTC(), ABI: st.ABI, LoadBefore: loadAverage()}
	if err := b.benchReexec(r); err != nil {
		return err
	}
	b.say("start of /bin/true: plain p50 %s, confined p50 %s (%d rules)", ms(median(r.Plain)), ms(median(r.Confined)), r.Rules)
	oc := filepath.Join(paths.ToolsDir(), "node_modules", ".bin", "opencode")
	if _, err := os.Stat(oc); err != nil {
		b.sandboxNote = "agent starts not measured: opencode is not installed (run `make setup`)"
	} else {
		for i := range sandboxAgentRuns {
			for _, mode := range []string{"off", "auto"} {
				a, err := b.agentStartWith(oc, mode, i)
				if err != nil {
					return fmt.Errorf("agent start, sandbox %s: %w", mode, err)
				}
				b.say("agent start with sandbox %s: ready in %s, %d kB", mode, ms(a.Ready), a.RSS)
				if mode == "off" {
					r.AgentOff = append(r.AgentOff, a)
				} else {
					r.AgentOn = append(r.AgentOn, a)
				}
			}
		}
	}
	r.LoadAfter = loadAverage()
	b.sandbox = r
	return nil
}

// benchReexec times starts of /bin/true through package proc, plain and
// confined (the codehydra binary as the helper, under a policy shaped
// like an agent's in this user's home), alternately.
func (b *bench) benchReexec(r *sandboxResult) error {
	home, _ := os.UserHomeDir()
	ws := filepath.Join(b.tmp, "sandbox-ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return err
	}
	l := sandbox.Layout{
		Private:    []string{paths.ConfigDir(), paths.DataDir(), paths.StateDir(), paths.RuntimeDir()},
		SharedRead: []string{paths.ToolsDir(), paths.OpencodeConfigFile()},
		Writable:   sandbox.Existing(filepath.Join(home, ".cache"), filepath.Join(home, ".npm"), filepath.Join(home, "go")),
	}
	pol := l.For(sandbox.Workspace{Path: ws, Temp: filepath.Join(b.tmp, "sandbox-tmp")})
	rules, err := sandbox.Expand(pol)
	if err != nil {
		return err
	}
	r.Rules = len(rules)
	run := func(p *sandbox.Policy) (time.Duration, error) {
		start := time.Now()
		pr, err := proc.Start(b.ctx, proc.Options{Path: "/bin/true", Sandbox: p, Self: b.bin})
		if err != nil {
			return 0, err
		}
		if err := pr.Err(); err != nil {
			return 0, err
		}
		return time.Since(start), nil
	}
	for range sandboxRuns {
		d, err := run(nil)
		if err != nil {
			return err
		}
		r.Plain = append(r.Plain, d)
		d, err = run(&pol)
		if err != nil {
			return err
		}
		r.Confined = append(r.Confined, d)
		start := time.Now()
		if err := exec.CommandContext(b.ctx, b.bin, "version").Run(); err != nil {
			return err
		}
		r.Binary = append(r.Binary, time.Since(start))
	}
	return nil
}

// agentStartWith runs serve with one workspace and the real opencode,
// sandbox mode as given, and measures its agent's start.
func (b *bench) agentStartWith(oc, mode string, n int) (agentStart, error) {
	dir := filepath.Join(b.tmp, fmt.Sprintf("sandbox-agent-%s-%d", mode, n))
	env := append(os.Environ(), "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1")
	for _, v := range []string{"HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"} {
		d := filepath.Join(dir, strings.ToLower(v))
		if err := os.MkdirAll(d, 0o700); err != nil {
			return agentStart{}, err
		}
		env = append(env, v+"="+d)
	}
	repo := filepath.Join(dir, "repo")
	wt := filepath.Join(dir, "wt")
	for _, args := range [][]string{{"init", "-q", "-b", "main", repo}, {"-C", repo, "commit", "-q", "--allow-empty", "-m", "init"},
		{"-C", repo, "worktree", "add", "-q", "-b", "feat", wt}} {
		if out, err := exec.CommandContext(b.ctx, "git", args...).CombinedOutput(); err != nil {
			return agentStart{}, fmt.Errorf("git %v: %w\n%s", args, err, out)
		}
	}
	set, _ := json.Marshal(map[string]any{"opencodeBin": oc, "projects": []string{repo}, "sandbox": mode})
	cfg := filepath.Join(dir, "xdg_config_home", "codehydra")
	if err := os.MkdirAll(cfg, 0o700); err != nil {
		return agentStart{}, err
	}
	if err := os.WriteFile(filepath.Join(cfg, "settings.json"), set, 0o600); err != nil {
		return agentStart{}, err
	}
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.bin, "serve")
	cmd.Env = env
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return agentStart{}, err
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}()
	records := filepath.Join(dir, "xdg_state_home", "codehydra", "agents")
	for {
		if rec, ok := readyAgent(records); ok {
			a := agentStart{Ready: time.Since(start)}
			time.Sleep(2 * time.Second) // let it settle before reading its memory
			u, err := treeUsage(rec, nil)
			a.RSS = u.RSS
			return a, err
		}
		select {
		case <-ctx.Done():
			return agentStart{}, fmt.Errorf("the agent was not ready within 2 minutes")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// readyAgent is the pid of an agent whose record in dir has its port,
// which the supervisor writes once the agent is ready.
func readyAgent(dir string) (int, bool) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, f := range files {
		var rec struct {
			PID  int `json:"pid"`
			Port int `json:"port"`
		}
		if b, err := os.ReadFile(f); err == nil && json.Unmarshal(b, &rec) == nil && rec.Port != 0 {
			return rec.PID, true
		}
	}
	return 0, false
}
