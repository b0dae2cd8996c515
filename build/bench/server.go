package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"codehydra/internal/instance"
)

// startupResult is the time from exec to ready, over several launches.
type startupResult struct {
	Workspaces int
	MCPReady   []time.Duration // instance file with the port + an authenticated request answered
	Loaded     []time.Duration // "CodeHydra is running": projects loaded
}

// rssResult is the idle memory of one process.
type rssResult struct {
	Mode       string // "serve" or "tray app"
	Workspaces int
	RSS, PSS   int // kB
	Anon       int // kB of Pss that is anonymous memory (heaps, stacks)
	Binary     int // kB of RSS that is the codehydra executable's pages
	GL         int // kB of RSS in the OpenGL driver and its libraries
	CHeap      int // kB of RSS in the C heap ([heap])
}

// serverEnv is a home for one codehydra under test: its XDG folders and a
// project with up to 10 workspaces.
type serverEnv struct {
	dir        string
	project    string
	workspaces []string
	gc         []string // GOGC=… and GOMEMLIMIT=… for serve, when set
}

func (b *bench) newServerEnv(name string) (*serverEnv, error) {
	e := &serverEnv{dir: filepath.Join(b.tmp, name)}
	for _, d := range []string{"config", "data", "state", "runtime", "home"} {
		if err := os.MkdirAll(filepath.Join(e.dir, d), 0o700); err != nil {
			return nil, err
		}
	}
	e.project = filepath.Join(e.dir, "project")
	if _, err := gitOut(b.ctx, "init", "-q", "-b", "main", e.project); err != nil {
		return nil, err
	}
	for i := range 20 {
		p := filepath.Join(e.project, "src", fmt.Sprintf("file%02d.go", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, []byte("package src\n"), 0o644); err != nil {
			return nil, err
		}
	}
	for _, args := range [][]string{{"-C", e.project, "add", "-A"}, {"-C", e.project, "commit", "-q", "-m", "start"}} {
		if _, err := gitOut(b.ctx, args...); err != nil {
			return nil, err
		}
	}
	settings := map[string]any{
		"projects":    []string{e.project},
		"opencodeBin": filepath.Join(e.dir, "no-opencode-here", "opencode"),
		// Raised for the bench: the default (20/s per workspace and tool)
		// would measure the limiter, not the server.
		"rateLimit":          map[string]any{"perSecond": 1e9, "burst": 1_000_000_000},
		"toolTimeoutSeconds": 30,
		"notifications":      false,
	}
	data, _ := json.MarshalIndent(settings, "", "  ")
	if err := os.MkdirAll(filepath.Join(e.dir, "config", "codehydra"), 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(e.dir, "config", "codehydra", "settings.json"), data, 0o600); err != nil {
		return nil, err
	}
	return e, nil
}

// grow adds worktrees until the project has n workspaces.
func (e *serverEnv) grow(ctx context.Context, n int) error {
	for len(e.workspaces) < n {
		i := len(e.workspaces) + 1
		path := filepath.Join(e.dir, "worktrees", fmt.Sprintf("ws%02d", i))
		if _, err := gitOut(ctx, "-C", e.project, "worktree", "add", "-q", "-b", fmt.Sprintf("ws%02d", i), path, "main"); err != nil {
			return err
		}
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			return err
		}
		e.workspaces = append(e.workspaces, real)
	}
	return nil
}

func (e *serverEnv) environ() []string {
	env := []string{}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "OTEL_") {
			// Telemetry off, as in a default install: the figures are those
			// of no provider at all.
			continue
		}
		switch name {
		case "HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "DISPLAY", "WAYLAND_DISPLAY":
			continue
		}
		env = append(env, kv)
	}
	if len(e.gc) > 0 {
		env = append(withoutRuntimeSettings(env), e.gc...)
	}
	return append(env,
		"HOME="+filepath.Join(e.dir, "home"),
		"XDG_CONFIG_HOME="+filepath.Join(e.dir, "config"),
		"XDG_DATA_HOME="+filepath.Join(e.dir, "data"),
		"XDG_STATE_HOME="+filepath.Join(e.dir, "state"),
		"XDG_RUNTIME_DIR="+filepath.Join(e.dir, "runtime"),
	)
}

func (e *serverEnv) instanceFile() string {
	return filepath.Join(e.dir, "runtime", "codehydra", "instance.json")
}

// serverProc is a running `codehydra serve`.
type serverProc struct {
	cmd      *exec.Cmd
	stdout   *syncBuffer
	done     chan error
	info     instance.Info
	mcpReady time.Duration
	loaded   time.Duration
}

// syncBuffer is a bytes.Buffer safe for one writer and many readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// startServer launches `codehydra serve` and waits until its MCP server
// answers an authenticated request and its projects are loaded, timing
// both from the exec.
func (b *bench) startServer(e *serverEnv) (*serverProc, error) {
	os.Remove(e.instanceFile())
	cmd := exec.Command(b.bin, "serve")
	cmd.Env = e.environ()
	cmd.Dir = e.dir
	p := &serverProc{cmd: cmd, stdout: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stdout = p.stdout
	stderr, err := os.Create(filepath.Join(e.dir, "serve.err"))
	if err != nil {
		return nil, err
	}
	defer stderr.Close()
	cmd.Stderr = stderr
	client := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()

	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { p.done <- cmd.Wait() }()
	fail := func(what string) (*serverProc, error) {
		p.stop()
		data, _ := os.ReadFile(filepath.Join(e.dir, "serve.err"))
		return nil, fmt.Errorf("codehydra serve: no %s within 20 s; stderr:\n%s", what, data)
	}
	for p.mcpReady == 0 {
		if time.Since(t0) > 20*time.Second || p.exited() {
			return fail("MCP server")
		}
		info, err := instance.Read(e.instanceFile())
		if err == nil && info.MCPPort > 0 && authenticated(client, info) {
			p.info, p.mcpReady = info, time.Since(t0)
			break
		}
		time.Sleep(500 * time.Microsecond)
	}
	for !strings.Contains(p.stdout.String(), "CodeHydra is running") {
		if time.Since(t0) > 20*time.Second || p.exited() {
			return fail("announcement")
		}
		time.Sleep(500 * time.Microsecond)
	}
	p.loaded = time.Since(t0)
	return p, nil
}

// awaitSettled waits until serve has settled on its steady runtime
// settings (one P, settleAfter after its announcement, which it logs as
// "started up"), so that the figures taken next are its steady ones.
func (p *serverProc) awaitSettled(e *serverEnv) error {
	for t0 := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		data, _ := os.ReadFile(filepath.Join(e.dir, "serve.err"))
		if bytes.Contains(data, []byte("msg=\"started up\"")) {
			return nil
		}
		if time.Since(t0) > 20*time.Second || p.exited() {
			return fmt.Errorf("codehydra serve did not log that it started up within 20 s; stderr:\n%s", data)
		}
	}
}

// authenticated reports whether the MCP server of info answers an
// initialize request with its token.
func authenticated(client *http.Client, info instance.Info) bool {
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`
	req, err := http.NewRequest(http.MethodPost, info.MCPURL, strings.NewReader(body))
	if err != nil {
		return false
	}
	req.Header.Set("Authorization", "Bearer "+info.Token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (p *serverProc) exited() bool {
	select {
	case err := <-p.done:
		p.done <- err
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and waits (SIGKILL after 20 s).
func (p *serverProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (b *bench) benchServer() error {
	// The earlier parts wrote whole worktrees; flush them now, or the
	// writeback stalls the fsyncs of the app's start-up (OpenCode config,
	// instance file) and the figures measure this bench, not the app.
	syscall.Sync()
	e, err := b.newServerEnv("serve")
	if err != nil {
		return err
	}
	idle := 3 * time.Second
	launches := 5
	if b.opts.quick {
		idle, launches = time.Second, 2
	}
	for _, n := range []int{0, 3, 10} {
		if err := e.grow(b.ctx, n); err != nil {
			return err
		}
		su := startupResult{Workspaces: n}
		var last *serverProc
		for i := range launches {
			p, err := b.startServer(e)
			if err != nil {
				return err
			}
			su.MCPReady = append(su.MCPReady, p.mcpReady)
			su.Loaded = append(su.Loaded, p.loaded)
			if i < launches-1 {
				p.stop()
				continue
			}
			last = p
		}
		b.startups = append(b.startups, su)
		if err := last.awaitSettled(e); err != nil {
			last.stop()
			return err
		}
		time.Sleep(idle) // idle: nothing happens, the way a user leaves it
		rss, err := readRSS(last.cmd.Process.Pid, "serve", n)
		if err != nil {
			last.stop()
			return err
		}
		b.rss = append(b.rss, rss)
		b.say("serve with %d workspaces: MCP ready %s (each: %v), loaded %s, RSS %d kB", n, ms(median(su.MCPReady)), roundAll(su.MCPReady), ms(median(su.Loaded)), rss.RSS)
		if n == 10 {
			err = b.benchCalls(e, last)
		}
		last.stop()
		if err != nil {
			return err
		}
	}
	return nil
}

// readRSS reads the memory of process pid from /proc: VmRSS, Pss and what
// the pages are.
func readRSS(pid int, mode string, workspaces int) (rssResult, error) {
	r := rssResult{Mode: mode, Workspaces: workspaces}
	rollup, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return r, fmt.Errorf("read the memory of pid %d: %w", pid, err)
	}
	for line := range strings.Lines(string(rollup)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.Atoi(f[1])
		switch f[0] {
		case "Rss:":
			r.RSS = v
		case "Pss:":
			r.PSS = v
		case "Pss_Anon:":
			r.Anon = v
		}
	}
	smaps, err := os.Open(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return r, err
	}
	defer smaps.Close()
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	sc := bufio.NewScanner(smaps)
	var name string
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if strings.Contains(f[0], "-") && len(f) >= 5 {
			name = ""
			if len(f) >= 6 {
				name = f[5]
			}
			continue
		}
		if f[0] != "Rss:" || len(f) < 2 {
			continue
		}
		v, _ := strconv.Atoi(f[1])
		switch {
		case exe != "" && name == exe:
			r.Binary += v
		case name == "[heap]":
			r.CHeap += v
		case isGLLibrary(name):
			r.GL += v
		}
	}
	return r, errors.Join(sc.Err())
}

// isGLLibrary reports whether a mapped file is part of the OpenGL stack
// (Mesa's drivers and what they load).
func isGLLibrary(name string) bool {
	base := filepath.Base(name)
	for _, p := range []string{"libLLVM", "_dri.so", "libgallium", "libGL", "libEGL", "libglapi", "libdrm", "libz3", "libvulkan", "libelf", "libsensors", "libedit"} {
		if strings.Contains(base, p) {
			return true
		}
	}
	return false
}

// roundAll rounds durations to the millisecond, for logs.
func roundAll(d []time.Duration) []time.Duration {
	out := make([]time.Duration, len(d))
	for i, v := range d {
		out[i] = v.Round(time.Millisecond)
	}
	return out
}
