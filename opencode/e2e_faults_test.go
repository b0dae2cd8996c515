//go:build unix

package opencode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"codehydra/internal/paths"
	"codehydra/mcp"
	"codehydra/opencode"
	"codehydra/opencode/internal/fakemodel"
	"codehydra/workspace"
)

// holdAll holds every answer of the fake model while closed, so that a
// turn stays busy.
type holdAll struct {
	mu   sync.Mutex
	gate chan struct{}
}

func (h *holdAll) before(ctx context.Context, _ fakemodel.Request) {
	h.mu.Lock()
	g := h.gate
	h.mu.Unlock()
	if g == nil {
		return
	}
	select {
	case <-g:
	case <-ctx.Done():
	}
}

func (h *holdAll) hold() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gate == nil {
		h.gate = make(chan struct{})
	}
}

func (h *holdAll) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gate != nil {
		close(h.gate)
		h.gate = nil
	}
}

// agentPID is the pid in the agent record of the workspace at ws, 0 when
// there is none.
func agentPID(t *testing.T, ws string) int {
	t.Helper()
	recs, _ := os.ReadDir(paths.AgentsDir())
	for _, r := range recs {
		var rec opencode.AgentRecord
		if b, err := os.ReadFile(filepath.Join(paths.AgentsDir(), r.Name())); err == nil && json.Unmarshal(b, &rec) == nil && rec.Workspace == ws {
			return rec.PID
		}
	}
	return 0
}

// TestRealOpencodeKilledMidTurnIsReadyWithinFiveSeconds is the soak version
// of TestAnAgentKilledMidTurnIsReadyWithinFiveSecondsAndItsStatusRecovers
// with the real opencode and a model: a turn is running (the model's
// answer is held), the agent is killed with SIGKILL, and it must be ready
// again — healthy and connected to the MCP server — within 5 s, report no
// busy session it no longer has, and run the next turn to its end. Each
// trial kills a fresh agent, so that every kill meets the first restart
// delay (1 s; later crashes of one agent wait longer, on purpose).
func TestRealOpencodeKilledMidTurnIsReadyWithinFiveSeconds(t *testing.T) {
	if os.Getenv("CODEHYDRA_SOAK") == "" {
		t.Skip("soak test with the real opencode: run with CODEHYDRA_SOAK=1 (make soak)")
	}
	bin := realOpencode(t)
	tmp := t.TempDir()
	agentEnv := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(tmp, "home"), "OPENCODE_DISABLE_MODELS_FETCH=1"}
	for k, v := range map[string]string{
		"GIT_CONFIG_GLOBAL": os.DevNull, "GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.com",
		"GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.com",
	} {
		t.Setenv(k, v)
		agentEnv = append(agentEnv, k+"="+v)
	}
	for _, v := range []string{"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"} {
		dir := filepath.Join(tmp, strings.ToLower(v))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		t.Setenv(v, dir)
		agentEnv = append(agentEnv, v+"="+dir)
	}
	paths.Reload()
	t.Cleanup(paths.Reload)

	gate := &holdAll{}
	model := &fakemodel.Server{BeforeReply: gate.before}
	if err := model.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	defer gate.release()

	project := filepath.Join(tmp, "project")
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	mustGit(t, project, "init", "-q", "-b", "main")
	mustGit(t, project, "commit", "-q", "--allow-empty", "-m", "initial")
	project, _ = filepath.EvalSymlinks(project)
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	mgr := workspace.NewManager(workspace.Options{Projects: []string{project}, WorktreeRoot: filepath.Join(tmp, "worktrees"), Logger: logger})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := mgr.Load(ctx); err != nil {
		t.Fatal(err)
	}
	token, err := mcp.LoadOrCreateToken(paths.TokenFile())
	if err != nil {
		t.Fatal(err)
	}
	var srv *mcp.Server
	sup := opencode.NewSupervisor(opencode.SupervisorOptions{
		Bin: bin, MCPPort: func() int { return srv.Port() }, MCPToken: token.Value, Logger: logger, Env: agentEnv,
	})
	mgr.SetAgents(sup)
	srv, err = mcp.New(mcp.Options{Token: token, Workspaces: mgr, Agents: sup, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer scancel()
		if err := sup.StopAll(sctx); err != nil {
			t.Errorf("stop agents: %v", err)
		}
		if err := srv.Shutdown(sctx); err != nil {
			t.Errorf("shutdown MCP server: %v", err)
		}
		<-served
	})
	cfg := paths.OpencodeConfigFile()
	var conf map[string]any
	if err := json.Unmarshal(opencode.ConfigJSON(), &conf); err != nil {
		t.Fatal(err)
	}
	conf["provider"] = map[string]any{"fake": map[string]any{
		"npm":     "@ai-sdk/openai-compatible",
		"options": map[string]any{"baseURL": model.BaseURL(), "apiKey": "x"},
		"models":  map[string]any{"m": map[string]any{"tool_call": true}},
	}}
	conf["model"] = "fake/m"
	conf["autoupdate"] = false
	b, _ := json.Marshal(conf)
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}

	trials := 5
	var recoveries []time.Duration
	failures := 0
	for i := range trials {
		ok := t.Run(fmt.Sprintf("trial %d", i), func(t *testing.T) {
			ws, err := mgr.Create(ctx, workspace.CreateOptions{ProjectPath: project, Name: fmt.Sprintf("kill-%d", i)})
			if err != nil {
				t.Fatal(err)
			}
			sup.Start(ws)
			// ready waits until an agent other than the process notPID is
			// ready (opencode takes port 4096 when it is free, so the port
			// may be the same after a restart).
			ready := func(what string, within time.Duration, notPID int) workspace.AgentStatus {
				var st workspace.AgentStatus
				waitFor(t, what, within, func() bool {
					// The same new process before and after reading the
					// status: the status is that process's.
					pid := agentPID(t, ws.Path)
					st = sup.AgentStatus(ws.Path)
					return pid != 0 && pid != notPID && agentPID(t, ws.Path) == pid && st.State == workspace.AgentStateReady
				})
				return st
			}
			st := ready("the agent ready", 90*time.Second, 0)
			api := agentAPI{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", st.Port)}
			session := api.newSession()
			gate.hold()
			turn := make(chan error, 1)
			go func() { turn <- api.prompt(ctx, session, "a long turn") }()
			waitFor(t, "the turn busy", 30*time.Second, func() bool { return sup.AgentStatus(ws.Path).Type == workspace.AgentBusy })

			pid := agentPID(t, ws.Path)
			if pid == 0 {
				t.Fatal("no agent record")
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed := time.Now()
			<-turn // the turn's request fails with its server
			after := ready("the agent ready again", 60*time.Second, pid)
			took := time.Since(killed)
			recoveries = append(recoveries, took)
			if took > 5*time.Second {
				t.Errorf("ready again after %s, want within 5 s", took.Round(time.Millisecond))
			}
			if after.Type == workspace.AgentBusy {
				t.Errorf("after the restart the dead turn is still reported: %+v", after)
			}
			// The next turn in the same (persisted) session runs to its end.
			gate.release()
			api = agentAPI{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", after.Port)}
			if err := api.prompt(ctx, session, "after the crash"); err != nil {
				t.Fatalf("turn after the restart: %v", err)
			}
			waitFor(t, "idle after the next turn", 30*time.Second, func() bool {
				return sup.AgentStatus(ws.Path).Type == workspace.AgentIdle
			})
			if err := mgr.Delete(ctx, ws.Path, workspace.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		})
		if !ok {
			failures++
		}
	}
	slices.Sort(recoveries)
	if len(recoveries) > 0 {
		t.Logf("FIGURE agent-killed-mid-turn (real opencode 1.18.33): trials=%d failures=%d kill-to-ready p50=%s max=%s",
			trials, failures, recoveries[len(recoveries)/2].Round(time.Millisecond), recoveries[len(recoveries)-1].Round(time.Millisecond))
	}
}
