package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"codehydra/workspace"
)

func TestRemoteCallsToolsAndReportsToolErrors(t *testing.T) {
	h := newHarness(t)
	ws := h.create("remote")
	ctx := context.Background()

	r, err := Dial(ctx, DialOptions{URL: h.srv.URL(), Token: h.token.Value(), WorkspacePath: ws.Path})
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.Call(ctx, ToolGetStatus, nil)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(out, &st); err != nil || st["path"] != ws.Path {
		t.Fatalf("status %s (%v)", out, err)
	}
	if out, err := r.Call(ctx, ToolSetMetadata, map[string]any{"key": "k", "value": "v"}); err != nil || string(out) != "null" {
		t.Fatalf("set_metadata: %s %v", out, err)
	}
	_, err = r.Call(ctx, ToolCreate, map[string]any{"projectPath": t.TempDir(), "name": "x"})
	var te *ToolError
	if !errors.As(err, &te) || te.Code != workspace.CodeProjectNotFound || te.Message == "" {
		t.Fatalf("err %v, want a project-not-found ToolError", err)
	}
	if got := te.Error(); got != te.Message+" (project-not-found)" {
		t.Fatalf("Error() = %q", got)
	}
	// The newest protocol: the command line keeps no session.
	if n := h.srv.Sessions(); n != 0 {
		t.Fatalf("%d sessions, want none", n)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	r, err = Dial(ctx, DialOptions{URL: h.srv.URL(), Token: h.token.Value(), WorkspacePath: ws.Path, Protocol: ProtocolSessions})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Call(ctx, ToolGetStatus, nil); err != nil {
		t.Fatal(err)
	}
	if n := h.srv.Sessions(); n != 1 {
		t.Fatalf("%d sessions, want 1", n)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the session to end", func() bool { return h.srv.Sessions() == 0 })
}

func TestDialFailsWithWrongToken(t *testing.T) {
	h := newHarness(t)
	if _, err := Dial(context.Background(), DialOptions{URL: h.srv.URL(), Token: "wrong"}); err == nil {
		t.Fatal("Dial with a wrong token succeeded")
	}
}

func TestDialSaysWhyTheServerRefusedTheSession(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MaxSessions = 1 })
	h.session("")
	_, err := Dial(context.Background(), DialOptions{URL: h.srv.URL(), Token: h.token.Value(), Protocol: ProtocolSessions})
	if err == nil || !strings.Contains(err.Error(), "too many MCP sessions are open (limit 1)") || !strings.Contains(err.Error(), "mcpMaxSessions") {
		t.Fatalf("Dial past the session cap: %v, want the server's reason", err)
	}
	// The newest protocol opens no session, so the cap does not apply.
	r, err := Dial(context.Background(), DialOptions{URL: h.srv.URL(), Token: h.token.Value()})
	if err != nil {
		t.Fatalf("a stateless Dial with every session place taken: %v", err)
	}
	defer r.Close()
	if _, err := r.Call(context.Background(), ToolProjectList, nil); err != nil {
		t.Fatalf("a stateless call with every session place taken: %v", err)
	}
}
