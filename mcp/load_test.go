package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// soak says whether the long versions run (make soak).
func soak() bool { return os.Getenv("CODEHYDRA_SOAK") != "" }

// openFDs counts this process's open file descriptors.
func openFDs(t testing.TB) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(entries)
}

// settle waits until goroutines and open files are back at (or below)
// their baseline and returns what it saw last.
func settle(t testing.TB, goroutines, fds int) (int, int) {
	t.Helper()
	var g, f int
	settled := false
	defer func() {
		if !settled {
			buf := make([]byte, 1<<20)
			t.Logf("after the load: %d goroutines (baseline %d), %d open files (baseline %d)\n%s",
				g, goroutines, f, fds, buf[:runtime.Stack(buf, true)])
		}
	}()
	testenv.WaitFor(t, "goroutines and open files back at their baseline", 20*time.Second, func() bool {
		g, f = runtime.NumGoroutine(), openFDs(t)
		return g <= goroutines && f <= fds
	})
	settled = true
	return g, f
}

// The load: concurrent MCP sessions, each acting as the agent of one of a
// set of workspaces, calling every read tool and writing its own metadata.
// Every call must succeed and see only its own workspace; afterwards the
// server's goroutines and open files return to where they were.
//
// The per-(caller, tool) rate limit (20/s, burst 40 by default) is
// raised for this test: five sessions per workspace calling the cheap
// tools (project_list, workspace_get_opencode_port) go well past 20 calls
// a second per bucket, which the limiter is there to refuse. What is
// measured here is everything behind the limiter; the limiter itself is
// pinned by TestRateLimitIsPerWorkspaceAndTool.
func TestLoadManySessionsOverManyWorkspacesMakeNoErrorsAndLeakNothing(t *testing.T) {
	sessions, calls, nws := 10, 50, 10
	if soak() {
		sessions, calls = 50, 200
	}
	h := newHarness(t, func(o *Options) { o.RateLimit, o.Burst = 1e9, 1e9 })
	wss := make([]workspace.Workspace, nws)
	for i := range wss {
		wss[i] = h.create("load-" + strconv.Itoa(i))
	}
	// Warm up, so that what the server starts once (and keeps) is part of
	// the baseline.
	warm, warmTransport := loadSession(h, wss[0].Path)
	okJSON(t, call(t, warm, ToolGetStatus, nil), &map[string]any{})
	warm.Close()
	warmTransport.CloseIdleConnections()
	waitFor(t, "the warm-up session to close", func() bool { return h.srv.Sessions() == 0 })
	goroutines, fds := runtime.NumGoroutine(), openFDs(t)

	tools := []string{ToolGetStatus, ToolGetMetadata, ToolSetMetadata, ToolGetOpencodePort, ToolProjectList}
	var (
		errs      atomic.Int64
		firstErr  sync.Once
		errText   string
		mu        sync.Mutex
		latencies []time.Duration
		wg        sync.WaitGroup
		clients   []*sdk.ClientSession
		trs       []*http.Transport
	)
	for i := range sessions {
		cs, tr := loadSession(h, wss[i%nws].Path)
		clients, trs = append(clients, cs), append(trs, tr)
	}
	start := time.Now()
	for i, cs := range clients {
		ws := wss[i%nws]
		wg.Go(func() {
			key := "session-" + strconv.Itoa(i)
			mine := make([]time.Duration, 0, calls)
			last := ""
			for j := range calls {
				tool := tools[(i+j)%len(tools)]
				var args map[string]any
				if tool == ToolSetMetadata {
					last = strconv.Itoa(j)
					args = map[string]any{"key": key, "value": last}
				}
				t0 := time.Now()
				res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: orEmpty(args)})
				mine = append(mine, time.Since(t0))
				if bad := checkLoadResult(res, err, tool, ws, key, last); bad != "" {
					errs.Add(1)
					firstErr.Do(func() { errText = fmt.Sprintf("session %d call %d (%s): %s", i, j, tool, bad) })
				}
			}
			mu.Lock()
			latencies = append(latencies, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	took := time.Since(start)
	if n := errs.Load(); n > 0 {
		t.Errorf("%d of %d calls failed; the first: %s", n, sessions*calls, errText)
	}
	for i, cs := range clients {
		cs.Close()
		trs[i].CloseIdleConnections()
	}
	waitFor(t, "the sessions to close", func() bool { return h.srv.Sessions() == 0 })
	g, f := settle(t, goroutines, fds)
	slices.Sort(latencies)
	t.Logf("FIGURE load: sessions=%d calls=%d workspaces=%d errors=%d took=%s rate=%.0f/s latency p50=%s p99=%s max=%s goroutines %d->%d fds %d->%d",
		sessions, sessions*calls, nws, errs.Load(), took.Round(time.Millisecond), float64(sessions*calls)/took.Seconds(),
		latencies[len(latencies)/2].Round(time.Microsecond), latencies[len(latencies)*99/100].Round(time.Microsecond),
		latencies[len(latencies)-1].Round(time.Microsecond), goroutines, g, fds, f)
}

// loadSession opens a session as the agent of wsPath over a transport of
// its own, which the caller closes to drop the connections.
func loadSession(h *harness, wsPath string) (*sdk.ClientSession, *http.Transport) {
	tr := newTransport(h.t)
	hdr := h.authHeader(http.Header{})
	hdr.Set(WorkspaceHeader, wsPath)
	return h.sessionWith(&headerTransport{base: tr, header: hdr}), tr
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// checkLoadResult returns what is wrong with a call's result, "" if
// nothing.
func checkLoadResult(res *sdk.CallToolResult, err error, tool string, ws workspace.Workspace, key, last string) string {
	if err != nil {
		return err.Error()
	}
	txt := ""
	if len(res.Content) == 1 {
		if tc, ok := res.Content[0].(*sdk.TextContent); ok {
			txt = tc.Text
		}
	}
	if res.IsError {
		return "error result " + txt
	}
	var m map[string]any
	switch tool {
	case ToolGetStatus:
		if json.Unmarshal([]byte(txt), &m) != nil || m["path"] != ws.Path {
			return "status of another workspace: " + txt
		}
	case ToolGetMetadata:
		if json.Unmarshal([]byte(txt), &m) != nil || m["base"] != "main" || (last != "" && m[key] != last) {
			return fmt.Sprintf("metadata %s, want %s=%s", txt, key, last)
		}
	case ToolSetMetadata, ToolGetOpencodePort:
		if txt != "null" {
			return "want null, got " + txt
		}
	case ToolProjectList:
		if json.Unmarshal([]byte(txt), &m) != nil {
			return "project list " + txt
		}
	}
	return ""
}
