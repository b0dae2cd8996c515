//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"codehydra/internal/instance"
	"codehydra/internal/paths"
	"codehydra/internal/testenv"
	"codehydra/mcp"
)

// The app is killed with SIGKILL — no shutdown runs — while its agents are
// up. The next launch must leave no agent of the killed run behind, and
// every workspace, branch and metadata key must still be there. The app is
// the real binary; the agents are the fake opencode (named opencode, so
// that orphan reaping recognises it).

// buildApp builds the codehydra binary and the fake opencode.
func buildApp(t *testing.T) (app, fake string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	return builtApp(t), fakeOpencode(t)
}

// fakeOpencode builds the fake opencode for t alone (a test may count its
// processes by their program), named opencode as orphan reaping expects.
func fakeOpencode(t *testing.T) string {
	t.Helper()
	fake := filepath.Join(t.TempDir(), "bin", "opencode")
	if err := goBuild(fake, "../opencode/internal/fakeopencode"); err != nil {
		t.Fatal(err)
	}
	return fake
}

// appRun is one launch of the binary.
type appRun struct {
	cmd    *exec.Cmd
	out    *testenv.SyncBuffer
	exited chan error
	info   instance.Info
}

// launch starts the app with serve and waits for its instance file.
func launch(t *testing.T, bin string, env []string) *appRun {
	t.Helper()
	r := &appRun{cmd: exec.Command(bin, "serve"), out: &testenv.SyncBuffer{}, exited: make(chan error, 1)}
	r.cmd.Env = env
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.exited <- r.cmd.Wait() }()
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		<-r.exited
		r.exited <- nil
	})
	r.poll(t, "the instance file", func() bool {
		info, err := instance.Read(paths.InstanceFile())
		r.info = info
		return err == nil && info.PID == r.cmd.Process.Pid
	})
	return r
}

// poll waits for cond, failing early if the app exits.
func (r *appRun) poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	const timeout = 45 * time.Second
	held := testenv.Poll(timeout, 5*time.Millisecond, func() bool {
		select {
		case err := <-r.exited:
			r.exited <- err
			t.Fatalf("the app exited (%v) while waiting for %s\n%s", err, what, r.out)
		default:
		}
		return cond()
	})
	if !held {
		log, _ := os.ReadFile(paths.LogFile())
		t.Fatalf("timed out after %s waiting for %s\nthe app's output:\n%s\nits log:\n%s", timeout, what, r.out, log)
	}
}

// call calls a tool of the running app as the workspace ws ("" for none).
func (r *appRun) call(t *testing.T, ws, tool string, args any) (json.RawMessage, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	remote, err := mcp.Dial(ctx, mcp.DialOptions{URL: r.info.MCPURL, Token: r.info.Token, WorkspacePath: ws})
	if err != nil {
		return nil, err
	}
	defer remote.Close()
	return remote.Call(ctx, tool, args)
}

// agentsReady waits until every workspace of the app has a ready agent.
func (r *appRun) agentsReady(t *testing.T, workspaces []string) {
	t.Helper()
	for _, ws := range workspaces {
		r.poll(t, "the agent of "+ws, func() bool {
			port, err := r.call(t, ws, mcp.ToolGetOpencodePort, nil)
			return err == nil && string(port) != "null"
		})
	}
}

// killHard kills the app with SIGKILL and waits for it to be gone.
func (r *appRun) killHard(t *testing.T) {
	t.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := <-r.exited
	r.exited <- err
}

// stop ends the app with SIGTERM and checks it exits cleanly.
func (r *appRun) stop(t *testing.T) {
	t.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-r.exited:
		r.exited <- err
		if err != nil {
			t.Fatalf("the app did not stop cleanly: %v\n%s", err, r.out)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the app did not stop within 30 s\n%s", r.out)
	}
}

// processesOf lists the live processes running the executable exe
// (zombies excluded: they are dead and wait only to be collected).
func processesOf(t *testing.T, exe string) []int {
	t.Helper()
	var pids []int
	for _, pid := range allPids(t) {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil || strings.TrimSuffix(target, " (deleted)") != exe {
			continue
		}
		if state, _, ok := procStat(pid); ok && state != "Z" && state != "X" {
			pids = append(pids, pid)
		}
	}
	return pids
}

// allPids are the processes in /proc now.
func allPids(t *testing.T) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// procStat is pid's state ("R", "S", "Z"…) and parent; ok=false when it
// is gone.
func procStat(pid int) (state string, ppid int, ok bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, false
	}
	// pid (comm) state ppid …; comm may hold spaces and parentheses.
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(f) < 2 {
		return "", 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	return f[0], ppid, true
}

func TestAnAppKilledHardLeavesNoOrphanedAgentAndLosesNothing(t *testing.T) {
	tests := []struct {
		name string
		env  []string
	}{
		// On Linux agents get SIGTERM when the app dies.
		{"agents die with the app", nil},
		// A child an agent started (a language server, a tool) is not
		// told that the app died, and outlives its agent.
		{"agents die with the app, their children do not", []string{"FAKEOC_GRANDCHILD_PIDFILE={pidfile}"}},
		// As on macOS, or an agent that hangs in its shutdown: the agents
		// outlive the app, and so do the children they started.
		{"agents and their children outlive the app", []string{"FAKEOC_IGNORE_TERM=1", "FAKEOC_GRANDCHILD_PIDFILE={pidfile}"}},
	}
	bin, fake := buildApp(t)
	t.Cleanup(func() {
		// Whatever a failed run left behind.
		for _, pid := range processesOf(t, fake) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	kills := 1
	if n, _ := strconv.Atoi(os.Getenv("CODEHYDRA_SOAK_APP_KILLS")); n > 0 {
		kills = n
	} else if os.Getenv("CODEHYDRA_SOAK") != "" {
		kills = 10
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := isolate(t)
			repo := testenv.GitRepo(t, "repo")
			wsDir := filepath.Join(t.TempDir(), "worktrees")
			one, two := filepath.Join(wsDir, "one"), filepath.Join(wsDir, "two")
			for _, args := range [][]string{
				{"worktree", "add", "-q", "-b", "one", one}, {"worktree", "add", "-q", "-b", "two", two},
				{"config", "branch.one.codehydra.note", "set by hand"},
			} {
				testenv.Git(t, repo, args...)
			}
			// The fake opencode writes its grandchild's pid here: a folder
			// its sandbox lets it write (settings sandbox.writable).
			reports := filepath.Join(base, "reports")
			if err := os.MkdirAll(reports, 0o700); err != nil {
				t.Fatal(err)
			}
			set := map[string]any{"opencodeBin": fake, "projects": []string{repo}, "worktreeRoot": filepath.Join(base, "roots"),
				"sandbox": map[string]any{"mode": "auto", "writable": []string{reports}}}
			b, _ := json.Marshal(set)
			if err := os.MkdirAll(filepath.Dir(paths.SettingsFile()), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(paths.SettingsFile(), b, 0o600); err != nil {
				t.Fatal(err)
			}
			env := append(os.Environ(), "FAKEOC_HEARTBEAT=1s")
			for _, kv := range tt.env {
				env = append(env, strings.ReplaceAll(kv, "{pidfile}", filepath.Join(reports, "grandchild.pid")))
			}

			app := launch(t, bin, env)
			workspaces := []string{one, two}
			app.agentsReady(t, workspaces)
			// Changes made through the app before it dies.
			raw, err := app.call(t, "", mcp.ToolCreate, map[string]any{"projectPath": repo, "name": "made-by-app"})
			if err != nil {
				t.Fatalf("create through the app: %v", err)
			}
			var made struct{ Path string }
			if err := json.Unmarshal(raw, &made); err != nil || made.Path == "" {
				t.Fatalf("created %s: %v", raw, err)
			}
			workspaces = append(workspaces, made.Path)
			if _, err := app.call(t, two, mcp.ToolSetMetadata, map[string]any{"key": "ticket", "value": "CH-6"}); err != nil {
				t.Fatalf("set metadata through the app: %v", err)
			}
			app.agentsReady(t, workspaces)
			wantWorktrees := listWorktrees(t, repo)
			wantConfig := metadataOf(t, repo)

			var recoveries []time.Duration
			for kill := range kills {
				agents := processesOf(t, fake)
				want := len(workspaces)
				if len(tt.env) > 0 && strings.Contains(tt.env[len(tt.env)-1], "GRANDCHILD") {
					want *= 2
				}
				if len(agents) != want {
					t.Fatalf("kill %d: %d agent processes for %d workspaces, want %d", kill, len(agents), len(workspaces), want)
				}
				app.killHard(t)
				killedAt := time.Now()
				app = launch(t, bin, env)
				app.agentsReady(t, workspaces)
				recoveries = append(recoveries, time.Since(killedAt))
				for _, pid := range agents {
					if slices.Contains(processesOf(t, fake), pid) {
						t.Errorf("kill %d: process %d of the killed run still runs after the next launch\n%s", kill, pid, app.out)
					}
				}
				if got := processesOf(t, fake); len(got) != len(agents) {
					t.Errorf("kill %d: %d agent processes after the relaunch, %d before the kill", kill, len(got), len(agents))
				}
				if got := listWorktrees(t, repo); !slices.Equal(got, wantWorktrees) {
					t.Errorf("kill %d: worktrees %v, want %v", kill, got, wantWorktrees)
				}
				if got := metadataOf(t, repo); got != wantConfig {
					t.Errorf("kill %d: metadata\n%s\nwant\n%s", kill, got, wantConfig)
				}
				var list struct {
					Projects []struct{ Workspaces []struct{ Path string } }
				}
				raw, err := app.call(t, "", mcp.ToolProjectList, nil)
				if err != nil || json.Unmarshal(raw, &list) != nil || len(list.Projects) != 1 || len(list.Projects[0].Workspaces) != 3 {
					t.Errorf("kill %d: project list %s, %v", kill, raw, err)
				}
			}
			app.stop(t)
			testenv.WaitFor(t, "no agent process left after a clean stop", 10*time.Second, func() bool {
				return len(processesOf(t, fake)) == 0
			})
			slices.Sort(recoveries)
			t.Logf("FIGURE app-killed (%s): kills=%d failures=%d kill-to-all-agents-ready p50=%s max=%s",
				tt.name, kills, btoi(t.Failed()), recoveries[len(recoveries)/2].Round(time.Millisecond), recoveries[len(recoveries)-1].Round(time.Millisecond))
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// listWorktrees lists the project's worktrees with their branches.
func listWorktrees(t *testing.T, repo string) []string {
	t.Helper()
	out := testenv.Git(t, repo, "worktree", "list", "--porcelain")
	var got []string
	for rec := range strings.SplitSeq(out, "\n\n") {
		var path, branch string
		for line := range strings.Lines(rec) {
			line = strings.TrimSpace(line)
			if p, ok := strings.CutPrefix(line, "worktree "); ok {
				path = p
			}
			if b, ok := strings.CutPrefix(line, "branch "); ok {
				branch = b
			}
		}
		got = append(got, path+" "+branch)
	}
	branches := testenv.Git(t, repo, "branch", "--format=%(refname)")
	return append(got, strings.Fields(branches)...)
}

// metadataOf is every CodeHydra metadata key of the project.
func metadataOf(t *testing.T, repo string) string {
	t.Helper()
	return testenv.Git(t, repo, "config", "--get-regexp", `^branch\..*\.codehydra\.`)
}
