package opencode

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"codehydra/internal/proc"
	"codehydra/internal/reap"
	"codehydra/internal/sandbox"
)

// errSpawnerClosed is the error of a start asked for after the supervisor
// stopped.
var errSpawnerClosed = errors.New("supervisor is stopped")

// lineRing keeps the last lines written to it.
type lineRing struct {
	mu    sync.Mutex
	max   int
	lines []string
}

func newLineRing(max int) *lineRing { return &lineRing{max: max} }

func (r *lineRing) add(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, line)
	if len(r.lines) > r.max {
		r.lines = append(r.lines[:0:0], r.lines[len(r.lines)-r.max:]...)
	}
}

func (r *lineRing) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lines...)
}

// process is one running `opencode serve`.
type process struct {
	proc *proc.Process
	pid  int
	out  *lineRing
	port int // the --port asked for; 0 = dynamic

	startedAt time.Time
	// agentID is the marker in the agent's environment (agentIDEnv) that
	// every process of the agent inherits; startTime is when the kernel
	// started it (see reap.StartTime; 0 if unknown). The orphan reaper
	// needs both to prove that a process is this agent's.
	agentID   string
	startTime uint64

	// listening receives the port from the listening line, once.
	listening chan int
	// exited is closed once the process has been waited for and what it
	// left behind in its tree killed.
	exited <-chan struct{}
}

// processSpec says what to run.
type processSpec struct {
	bin   string
	dir   string
	env   []string
	port  int
	lines int
	// sandbox confines the agent when set.
	sandbox *sandbox.Policy
}

// agentIDEnv names the variable that marks every process of one agent
// with its random id.
const agentIDEnv = "CODEHYDRA_AGENT_ID"

// startProcess starts `opencode serve` in a process tree of its own,
// confined when spec says so, marked with a new agent id, and collects
// its output.
func startProcess(ctx context.Context, sp *reap.Spawner, spec processSpec) (*process, error) {
	agentID := rand.Text()
	p := &process{
		agentID:   agentID,
		out:       newLineRing(spec.lines),
		port:      spec.port,
		listening: make(chan int, 1),
	}
	// opencode prints its listening line on stdout; a line on stderr
	// never names the port.
	stdout, stderr := &lineWriter{line: p.onStdout}, &lineWriter{line: p.out.add}
	pr, err := proc.Start(ctx, proc.Options{
		Path:   spec.bin,
		Args:   []string{"serve", "--hostname", "127.0.0.1", "--port", fmt.Sprint(spec.port)},
		Dir:    spec.dir,
		Env:    append(slices.Clip(spec.env), agentIDEnv+"="+agentID),
		Marker: agentIDEnv + "=" + agentID,
		// A grandchild that inherited stdout would keep the wait going
		// after opencode itself is gone; this bounds it, and the tree is
		// killed afterwards.
		WaitDelay: time.Second,
		Stdout:    stdout, Stderr: stderr,
		Sandbox: spec.sandbox,
		Spawner: sp,
	})
	if err != nil {
		return nil, err
	}
	p.proc, p.pid, p.exited = pr, pr.Pid(), pr.Done()
	// Read before the process may be waited for, after which its pid
	// could be anyone's.
	p.startTime, _ = reap.StartTime(p.pid)
	go func() {
		<-pr.Done()
		// The wait has finished copying output, so the writers are idle.
		stdout.flush()
		stderr.flush()
	}()
	return p, nil
}

func (p *process) onStdout(line string) {
	p.out.add(line)
	if port, ok := ParseListeningLine(line); ok {
		select {
		case p.listening <- port:
		default: // only the first listening line counts
		}
	}
}

// lineWriter splits what is written to it into lines.
type lineWriter struct {
	line    func(string)
	partial []byte
}

// maxLine bounds a line kept in the output; the rest of a longer line is
// dropped.
const maxLine = 4096

func (w *lineWriter) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			w.partial = appendCapped(w.partial, b)
			break
		}
		w.partial = appendCapped(w.partial, b[:i])
		w.line(strings.TrimRight(string(w.partial), "\r"))
		w.partial = w.partial[:0]
		b = b[i+1:]
	}
	return n, nil
}

// flush passes on a last line that had no line end.
func (w *lineWriter) flush() {
	if len(w.partial) > 0 {
		w.line(strings.TrimRight(string(w.partial), "\r"))
		w.partial = nil
	}
}

func appendCapped(dst, src []byte) []byte {
	if room := maxLine - len(dst); len(src) > room {
		src = src[:max(room, 0)]
	}
	return append(dst, src...)
}

// stop ends the process tree: SIGTERM, then SIGKILL after grace, then
// waits until the leader is gone. ctx bounds the whole wait.
func (p *process) stop(ctx context.Context, grace time.Duration) error {
	return p.proc.Stop(ctx, grace)
}

// exitDescription says how the process ended, for the user.
func (p *process) exitDescription() string {
	err := p.proc.Err()
	if err == nil {
		return "exited"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ProcessState.String()
	}
	return err.Error()
}

// agentEnv is the agent's environment: the user's own, without any
// inherited CODEHYDRA_* or OPENCODE_CONFIG (a CodeHydra started from inside
// an agent's terminal must not leak its parent's settings), plus the four
// variables docs/DESIGN.md names and cfg's entry in OPENCODE_CONFIG_CONTENT.
func agentEnv(base []string, cfg agentConfig, wsPath string, mcpPort int, token string) []string {
	env := make([]string, 0, len(base)+5)
	inheritedContent := ""
	for _, kv := range base {
		k, v, _ := strings.Cut(kv, "=")
		if envKeyIs(k, "OPENCODE_CONFIG_CONTENT") {
			inheritedContent = v
			continue
		}
		if envKeyReserved(k) {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"OPENCODE_CONFIG="+cfg.path,
		"OPENCODE_CONFIG_CONTENT="+configContent(cfg, inheritedContent),
		"CODEHYDRA_WORKSPACE_PATH="+filepath.ToSlash(wsPath),
		fmt.Sprintf("CODEHYDRA_MCP_PORT=%d", mcpPort),
		"CODEHYDRA_MCP_TOKEN="+token,
	)
}

// envKeyIs compares environment names as the system does.
func envKeyIs(k, name string) bool {
	if runtime.GOOS == "windows" {
		return strings.EqualFold(k, name)
	}
	return k == name
}

func envKeyReserved(k string) bool {
	if runtime.GOOS == "windows" {
		// Windows environment names are case-insensitive.
		k = strings.ToUpper(k)
	}
	return k == "OPENCODE_CONFIG" || strings.HasPrefix(k, "CODEHYDRA_")
}
