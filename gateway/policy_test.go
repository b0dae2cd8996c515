//go:build unix

package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"codehydra/internal/settings"
	"codehydra/internal/testenv"
	"codehydra/workspace"
)

func TestToolRulesHideToolsAndACallOfOneIsForbiddenNamingTheRule(t *testing.T) {
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	g := newGateway(t, map[string]settings.MCPServer{"every": {Command: every,
		Tools: settings.ToolRules{Allow: []string{"echo", "get-*"}, Deny: []string{"get-env"}}}})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	tools := g.Tools(ctx)
	hidden := map[string]string{}
	for _, tl := range tools {
		hidden[tl.Tool.Name] = tl.Hidden
	}
	for name, want := range map[string]string{
		"every__echo":                  "",
		"every__get-sum":               "",
		"every__get-env":               `tool get-env of server every is hidden by its tools.deny rule "get-env"`,
		"every__gzip-file-as-resource": `tool gzip-file-as-resource of server every is hidden by its tools.allow rules ("echo", "get-*"), none of which it matches`,
	} {
		got, ok := hidden[name]
		if !ok || got != want {
			t.Errorf("%s: listed %v, Hidden %q; want listed, Hidden %q", name, ok, got, want)
		}
	}
	_, err := g.Call(ctx, "", "every__get-env", nil)
	var we *workspace.Error
	if !errors.As(err, &we) || we.Code != workspace.CodeForbidden || !strings.Contains(we.Message, `tools.deny rule "get-env"`) {
		t.Fatalf("Call of a hidden tool = %v, want forbidden naming the rule", err)
	}
	if res, err := g.Call(ctx, "", "every__echo", args(t, map[string]string{"message": "hi"})); err != nil || res.IsError {
		t.Fatalf("Call of an allowed tool = %+v, %v", res, err)
	}
	if st := g.Statuses(); st[0].Calls != 1 {
		t.Fatalf("Calls = %d, want 1: the hidden tool's call must not reach the server", st[0].Calls)
	}
}

func TestADisabledServerIsNeitherStartedNorOfferedAndShowsDisabled(t *testing.T) {
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	off := settings.MCPServer{Command: every, StartAtLaunch: true, Enabled: new(false)}
	g := newGateway(t, map[string]settings.MCPServer{"every": off})
	g.Start()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if tools := g.Tools(ctx); len(tools) != 0 {
		t.Fatalf("Tools of a disabled server = %v, want none", toolNames(tools))
	}
	if st := g.Statuses(); len(st) != 1 || st[0].State != StateDisabled || st[0].Instances != 0 {
		t.Fatalf("Statuses = %+v, want every, disabled, not running", st)
	}
	if pids := serverPIDs(t); len(pids) != 0 {
		t.Fatalf("a disabled server runs: pids %v", pids)
	}
	_, err := g.Call(ctx, "", "every__echo", args(t, map[string]string{"message": "hi"}))
	var we *workspace.Error
	if !errors.As(err, &we) || we.Code != workspace.CodeForbidden || !strings.Contains(we.Message, "switched off") {
		t.Fatalf("Call of a disabled server = %v, want forbidden saying it is switched off", err)
	}

	on := off.Clone()
	on.Enabled = nil
	g.Reconfigure(map[string]settings.MCPServer{"every": on})
	if tools := g.Tools(ctx); !slices.Contains(toolNames(tools), "every__echo") {
		t.Fatalf("Tools once switched on = %v, want every__echo", toolNames(tools))
	}
	g.Reconfigure(map[string]settings.MCPServer{"every": off})
	if st := g.Statuses(); st[0].State != StateDisabled {
		t.Fatalf("Statuses once switched off again = %+v, want disabled", st)
	}
	if tools := g.Tools(ctx); len(tools) != 0 {
		t.Fatalf("Tools once switched off again = %v, want none", toolNames(tools))
	}
	if pids := serverPIDs(t); len(pids) != 0 {
		t.Fatalf("a server switched off still runs: pids %v", pids)
	}
}

func TestAWorkspaceScopedServerSeesItsWorkspaceVariables(t *testing.T) {
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	ws := t.TempDir()
	asked := make(chan string, 10)
	g := New(Options{
		Servers: map[string]settings.MCPServer{"every": {Command: every, Scope: settings.ScopeWorkspace, Env: map[string]string{
			"DB_NAME": "db_{workspace.name}", "WS_BRANCH": "{workspace.branch}", "WS_PATH": "{workspace.path}",
			"WS_OLD": "{workspace}", "PROJECT": "{project.path}",
		}}},
		Workspace: func(_ context.Context, path string) (settings.WorkspaceVars, error) {
			asked <- path
			return settings.WorkspaceVars{Name: "feature-x", Branch: "feature/x", ProjectPath: "/projects/app"}, nil
		},
		StartTimeout: 20 * time.Second, StopTimeout: time.Second,
	})
	t.Cleanup(func() { _ = g.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	res, err := g.Call(ctx, ws, "every__get-env", nil)
	if err != nil || res.IsError {
		t.Fatalf("get-env = %+v, %v", res, err)
	}
	var env map[string]string
	if err := json.Unmarshal([]byte(text(t, res)), &env); err != nil {
		t.Fatalf("get-env answered %q: %v", text(t, res), err)
	}
	want := map[string]string{"DB_NAME": "db_feature-x", "WS_BRANCH": "feature/x", "WS_PATH": ws, "WS_OLD": ws, "PROJECT": "/projects/app"}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	if p := <-asked; p != ws {
		t.Fatalf("the resolver was asked for %q, want the workspace %q", p, ws)
	}
}

func TestAWorkspaceThatCannotBeResolvedStartsNoInstanceAndSaysWhy(t *testing.T) {
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	g := New(Options{
		Servers: map[string]settings.MCPServer{"every": {Command: every, Scope: settings.ScopeWorkspace, Env: map[string]string{"DB": "{workspace.name}"}}},
		Workspace: func(context.Context, string) (settings.WorkspaceVars, error) {
			return settings.WorkspaceVars{}, errors.New("no workspace there")
		},
		StartTimeout: 20 * time.Second, StopTimeout: time.Second,
	})
	t.Cleanup(func() { _ = g.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err := g.Call(ctx, t.TempDir(), "every__get-env", nil)
	if err == nil || !strings.Contains(err.Error(), "no workspace there") {
		t.Fatalf("Call = %v, want the resolver's error", err)
	}
}

func TestAServerSwitchedOffForAWorkspaceStopsItsInstanceThereOnly(t *testing.T) {
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	a, b := t.TempDir(), t.TempDir()
	var mu sync.Mutex
	off := map[string]map[string]string{}
	g := New(Options{
		Servers: map[string]settings.MCPServer{"every": {Command: every, Scope: settings.ScopeWorkspace}},
		Choice: func(_ context.Context, path string) (map[string]string, error) {
			mu.Lock()
			defer mu.Unlock()
			return maps.Clone(off[path]), nil
		},
		StartTimeout: 20 * time.Second, StopTimeout: time.Second,
	})
	t.Cleanup(func() { _ = g.Close() })
	changed := make(chan struct{}, 8)
	g.OnToolsChanged(func() { changed <- struct{}{} })
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	for _, ws := range []string{a, b} {
		if res, err := g.Call(ctx, ws, "every__echo", args(t, map[string]string{"message": "hi"})); err != nil || res.IsError {
			t.Fatalf("echo from %s: %v", ws, err)
		}
	}
	if st := g.Statuses()[0]; st.Instances != 2 {
		t.Fatalf("instances %d, want a's and b's", st.Instances)
	}
	for len(changed) > 0 {
		<-changed
	}

	mu.Lock()
	off[a] = map[string]string{"every": "the MCP server every is switched off for this workspace"}
	mu.Unlock()
	g.Rechoose(a)
	if st := g.Statuses()[0]; st.Instances != 1 {
		t.Fatalf("instances after every was switched off for a: %d, want b's only", st.Instances)
	}
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("Rechoose did not tell the listeners")
	}
	_, err := g.Call(ctx, a, "every__echo", args(t, map[string]string{"message": "hi"}))
	if workspace.CodeOf(err) != workspace.CodeForbidden || !strings.Contains(err.Error(), "switched off for this workspace") {
		t.Fatalf("a's call with every off for it = %v, want forbidden saying so", err)
	}
	if st := g.Statuses()[0]; st.Instances != 1 {
		t.Fatalf("a's refused call started an instance: %d running", st.Instances)
	}
	if res, err := g.Call(ctx, b, "every__echo", args(t, map[string]string{"message": "hi"})); err != nil || res.IsError {
		t.Fatalf("b's echo after every was switched off for a: %v", err)
	}
}
