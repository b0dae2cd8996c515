package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestAuditRecordsEveryCallWithoutSecrets(t *testing.T) {
	h := newHarness(t)
	ws := h.create("audited")
	const secret = "hunter2-secret-value"
	t.Setenv("CODEHYDRA_MCP_TOKEN", h.token.Value()) // an env value that must not leak either

	steps := []struct {
		header, tool string
		args         map[string]any
		outcome      string
		workspace    string
	}{
		{ws.Path, ToolSetMetadata, map[string]any{"key": "apiKey", "value": secret}, "ok", ws.Path},
		{ws.Path, ToolGetStatus, nil, "ok", ws.Path},
		{"", ToolGetStatus, nil, "invalid-input", ""},
		{"/no/such/place", ToolGetMetadata, nil, "workspace-not-found", "/no/such/place"},
		{"", ToolProjectList, nil, "ok", ""},
		{ws.Path, ToolSetMetadata, map[string]any{"key": "bad key", "value": secret}, "invalid-input", ws.Path},
	}
	for _, s := range steps {
		call(t, h.session(s.header), s.tool, s.args)
	}

	data, err := os.ReadFile(h.audit)
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{secret, h.token.Value()} {
		if bytes.Contains(data, []byte(leak)) {
			t.Fatalf("audit log contains a secret: %s", data)
		}
	}
	if runtime.GOOS != "windows" {
		assertMode(t, h.audit, 0o600)
	}
	var lines []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	if len(lines) != len(steps) {
		t.Fatalf("%d audit lines for %d calls:\n%s", len(lines), len(steps), data)
	}
	allowed := []string{"time", "caller", "workspace", "tool", "outcome", "durationMs", "args"}
	for i, line := range lines {
		s := steps[i]
		for k := range line {
			if !slices.Contains(allowed, k) {
				t.Errorf("line %d has key %q", i, k)
			}
		}
		if line["caller"] != userCaller || line["tool"] != s.tool || line["outcome"] != s.outcome || line["workspace"] != s.workspace {
			t.Errorf("line %d = %v, want caller user, tool %s outcome %s workspace %q", i, line, s.tool, s.outcome, s.workspace)
		}
		if _, err := time.Parse(time.RFC3339Nano, line["time"].(string)); err != nil {
			t.Errorf("line %d time: %v", i, err)
		}
		if d, ok := line["durationMs"].(float64); !ok || d < 0 {
			t.Errorf("line %d durationMs %v", i, line["durationMs"])
		}
	}
	if args := lines[0]["args"]; !jsonEqual(t, mustJSON(t, args), []byte(`["key","value"]`)) {
		t.Errorf("argument names %v", args)
	}
}

func TestAuditLogAppendsAcrossLaunchesAndTruncatesLongHeaders(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "audit.jsonl")
	for i := range 2 {
		a, err := openAuditLog(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.record(auditEntry{Time: time.Now(), Tool: "t", Workspace: strings.Repeat("w", 10<<10), Outcome: "ok"}); err != nil {
			t.Fatal(err)
		}
		if err := a.close(); err != nil {
			t.Fatal(err)
		}
		if err := a.record(auditEntry{Tool: "after close"}); err != nil {
			t.Fatalf("record after close: %v", err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(data, []byte("\n")); n != i+1 {
			t.Fatalf("launch %d: %d lines", i, n)
		}
		if len(data) > (i+1)*(maxAuditWorkspace+200) {
			t.Fatalf("a 10 KB header made a %d-byte log", len(data))
		}
	}
	var none *auditLog
	if err := none.record(auditEntry{}); err != nil {
		t.Fatal(err)
	}
}

func TestAuditLogRotatesBySizeUnderConcurrentCallsWithEveryLineWhole(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.RateLimit, o.Burst = 1e6, 1e6 })
	const limit = 2000
	if err := h.srv.SetAuditRotation(limit); err != nil {
		t.Fatal(err)
	}
	ws := h.create("rotated")
	const sessions, calls = 8, 25
	var wg sync.WaitGroup
	for range sessions {
		cs := h.session(ws.Path)
		wg.Go(func() {
			for range calls {
				call(t, cs, ToolGetStatus, nil)
			}
		})
	}
	wg.Wait()

	lines := 0
	for i, p := range []string{h.audit, h.audit + ".1", h.audit + ".2", h.audit + ".3"} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("file %d of the rotated audit log: %v", i, err)
		}
		if len(data) > limit {
			t.Errorf("%s is %d bytes, over the %d limit", p, len(data), limit)
		}
		if runtime.GOOS != "windows" {
			assertMode(t, p, 0o600)
		}
		for _, l := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
			var e auditEntry
			if err := json.Unmarshal(l, &e); err != nil || e.Tool != ToolGetStatus || e.Caller != userCaller {
				t.Fatalf("%s: line %q is not a whole audit entry: %v", p, l, err)
			}
			lines++
		}
	}
	if lines == 0 || lines >= sessions*calls {
		t.Errorf("%d lines kept of %d calls: the oldest files should have been dropped", lines, sessions*calls)
	}
	if _, err := os.Stat(h.audit + ".4"); err == nil {
		t.Error("audit.jsonl.4 exists: more than 3 old files kept")
	}
}
