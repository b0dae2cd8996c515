package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/workspace"
)

// TestCallsInFlightDuringADeleteGetTheirResultOrWorkspaceNotFound deletes a
// workspace while 20 clients call its tools as fast as they can. Each call
// must end in its normal result or in a clean workspace-not-found — never
// an internal error, a conflict, a timeout or a protocol failure — and
// once the delete is done no call may succeed any more.
func TestCallsInFlightDuringADeleteGetTheirResultOrWorkspaceNotFound(t *testing.T) {
	trials := 3
	if soak() {
		trials = 30
	}
	h := newHarness(t, func(o *Options) { o.RateLimit, o.Burst = 1e9, 1e9 })
	tools := []struct {
		name string
		args map[string]any
	}{
		{ToolGetStatus, nil}, {ToolGetMetadata, nil}, {ToolSetMetadata, map[string]any{"key": "note", "value": "racing"}},
		{ToolGetOpencodePort, nil}, {ToolSetMetadata, map[string]any{"key": "note", "value": nil}},
	}
	outcomes := map[string]int{}
	failures := 0
	for trial := range trials {
		ok := t.Run(fmt.Sprintf("trial %d", trial), func(t *testing.T) {
			ws := h.create(fmt.Sprintf("doomed-%d", trial))
			var clients []*sdk.ClientSession
			for range 20 {
				clients = append(clients, h.session(ws.Path))
			}
			var (
				mu      sync.Mutex
				bad     []string
				counts  = map[string]int{}
				wg      sync.WaitGroup
				started sync.WaitGroup
				done    = make(chan struct{})
			)
			started.Add(len(clients))
			for i, cs := range clients {
				wg.Go(func() {
					first := true
					for n := 0; ; n++ {
						tool := tools[(i+n)%len(tools)]
						args := tool.args
						if args == nil {
							args = map[string]any{}
						}
						res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool.name, Arguments: args})
						if first {
							started.Done()
							first = false
						}
						outcome := raceOutcome(res, err)
						mu.Lock()
						counts[outcome]++
						if outcome != "ok" && outcome != string(workspace.CodeWorkspaceNotFound) {
							bad = append(bad, fmt.Sprintf("%s: %s", tool.name, outcome))
						}
						mu.Unlock()
						if outcome == string(workspace.CodeWorkspaceNotFound) {
							return // from now on every call must be refused; checked below
						}
						select {
						case <-done:
							return
						default:
						}
					}
				})
			}
			started.Wait()
			// The delete comes from the manager (the GUI's path); the
			// workspace's own clients keep calling meanwhile.
			if err := h.mgr.Delete(context.Background(), ws.Path, workspace.DeleteOptions{}); err != nil {
				t.Fatalf("delete: %v", err)
			}
			close(done)
			wg.Wait()
			for _, cs := range clients {
				code, _ := errCode(t, call(t, cs, ToolGetStatus, nil))
				if code != workspace.CodeWorkspaceNotFound {
					t.Fatalf("a call after the delete: %s", code)
				}
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
	t.Logf("FIGURE delete-during-calls: trials=%d failures=%d clients=20 outcomes: %s", trials, failures, strings.Join(parts, " "))
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
