package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/workspace"
)

// TestCallsInFlightDuringADeleteGetTheirResultOrWorkspaceNotFound deletes a
// workspace while 20 clients call its tools as fast as they can. Each call
// must end in its normal result or in a clean workspace-not-found — never
// an internal error, a conflict, a timeout or a protocol failure. The
// clients go on calling after the delete has returned, each at least
// afterCalls times over at least afterWindow, cycling through every
// workspace tool (workspace_delete too): every one of those calls must be
// workspace-not-found.
func TestCallsInFlightDuringADeleteGetTheirResultOrWorkspaceNotFound(t *testing.T) {
	const (
		clientCount = 20
		afterCalls  = 5
		afterWindow = 200 * time.Millisecond
	)
	trials := 3
	if soak() {
		trials = 30
	}
	h := newHarness(t, func(o *Options) { o.RateLimit, o.Burst = 1e9, 1e9 })
	type toolCall struct {
		name string
		args map[string]any
	}
	tools := []toolCall{
		{ToolGetStatus, nil}, {ToolGetMetadata, nil}, {ToolSetMetadata, map[string]any{"key": "note", "value": "racing"}},
		{ToolGetOpencodePort, nil}, {ToolSetMetadata, map[string]any{"key": "note", "value": nil}},
	}
	// Before the delete has returned a workspace_delete call would start a
	// second delete; after it, it must be refused like every other tool.
	afterTools := append(slices.Clone(tools), toolCall{ToolDelete, nil})
	outcomes := map[string]int{}
	after, afterBad := 0, 0
	failures := 0
	for trial := range trials {
		ok := t.Run(fmt.Sprintf("trial %d", trial), func(t *testing.T) {
			ws := h.create(fmt.Sprintf("doomed-%d", trial))
			var clients []*sdk.ClientSession
			for range clientCount {
				clients = append(clients, h.session(ws.Path))
			}
			var (
				mu          sync.Mutex
				bad         []string
				badAfter    []string
				counts      = map[string]int{}
				afterCount  int
				wg          sync.WaitGroup
				started     sync.WaitGroup
				deleted     atomic.Bool
				windowEnded atomic.Bool
			)
			started.Add(len(clients))
			for i, cs := range clients {
				wg.Go(func() {
					calledAfter := 0
					for n := 0; calledAfter < afterCalls || !windowEnded.Load(); n++ {
						// A call counts as after the delete only if it
						// began after Delete returned.
						isAfter := deleted.Load()
						tool := tools[(i+n)%len(tools)]
						if isAfter {
							tool = afterTools[(i+n)%len(afterTools)]
						}
						args := tool.args
						if args == nil {
							args = map[string]any{}
						}
						res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool.name, Arguments: args})
						if n == 0 {
							started.Done()
						}
						outcome := raceOutcome(res, err)
						mu.Lock()
						switch {
						case isAfter:
							calledAfter++
							afterCount++
							if outcome != string(workspace.CodeWorkspaceNotFound) {
								badAfter = append(badAfter, fmt.Sprintf("%s: %s", tool.name, outcome))
							}
						default:
							counts[outcome]++
							if outcome != "ok" && outcome != string(workspace.CodeWorkspaceNotFound) {
								bad = append(bad, fmt.Sprintf("%s: %s", tool.name, outcome))
							}
						}
						mu.Unlock()
					}
				})
			}
			started.Wait()
			// The delete comes from the manager (the GUI's path); the
			// workspace's own clients keep calling meanwhile and after.
			if err := h.mgr.Delete(context.Background(), ws.Path, workspace.DeleteOptions{}); err != nil {
				t.Errorf("delete: %v", err)
			}
			deleted.Store(true)
			time.Sleep(afterWindow)
			windowEnded.Store(true)
			wg.Wait()
			if t.Failed() {
				return
			}
			if _, err := os.Stat(ws.Path); !os.IsNotExist(err) {
				t.Fatalf("the workspace folder is still there: %v", err)
			}
			// No call wrote metadata for the deleted branch behind the
			// delete's back (a new workspace of that name would inherit it).
			if out := gitConfigRegexp(t, h.project, `^branch\.`+ws.Branch+`\.`); out != "" {
				t.Errorf("metadata of the deleted workspace left in git config: %q", out)
			}
			mu.Lock()
			defer mu.Unlock()
			for k, v := range counts {
				outcomes[k] += v
			}
			after += afterCount
			afterBad += len(badAfter)
			if afterCount < clientCount*afterCalls {
				t.Errorf("%d calls after the delete, want at least %d", afterCount, clientCount*afterCalls)
			}
			if len(badAfter) > 0 {
				t.Errorf("%d of %d calls after the delete were not workspace-not-found, e.g. %s", len(badAfter), afterCount, strings.Join(badAfter[:min(len(badAfter), 5)], "; "))
			}
			if len(bad) > 0 {
				t.Errorf("%d calls ended neither in their result nor in workspace-not-found, e.g. %s", len(bad), strings.Join(bad[:min(len(bad), 5)], "; "))
			}
		})
		if !ok {
			failures++
		}
	}
	var parts []string
	for k, v := range outcomes {
		parts = append(parts, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(parts)
	t.Logf("FIGURE delete-during-calls: trials=%d failures=%d clients=%d during: %s; after the delete: calls=%d not-workspace-not-found=%d",
		trials, failures, clientCount, strings.Join(parts, " "), after, afterBad)
}

// gitConfigRegexp lists the project's config entries matching re ("" for
// none).
func gitConfigRegexp(t *testing.T, repo, re string) string {
	t.Helper()
	cmd := exec.Command("git", "config", "--get-regexp", re)
	cmd.Dir = repo
	out, err := cmd.Output()
	if err != nil && cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("git config --get-regexp: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// raceOutcome names how a call ended: "ok", an error code, or what went
// wrong below the tool level.
func raceOutcome(res *sdk.CallToolResult, err error) string {
	if err != nil {
		return "protocol error: " + err.Error()
	}
	if !res.IsError {
		return "ok"
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var body errorResult
	if json.Unmarshal(raw, &body) != nil || body.Error.Code == "" {
		return "unclassified error result"
	}
	if body.Error.Code != string(workspace.CodeWorkspaceNotFound) {
		return body.Error.Code + " (" + body.Error.Message + ")"
	}
	return body.Error.Code
}
