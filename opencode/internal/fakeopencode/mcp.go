package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"regexp"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// remoteServer is a "remote" entry under "mcp" in an opencode config.
type remoteServer struct {
	Type    string            `json:"type"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	Enabled *bool             `json:"enabled"`
}

// envRef is opencode's environment reference in a config file.
var envRef = regexp.MustCompile(`\{env:([^}]+)\}`)

// readMCPConfig reads the codehydra entry of the config file that
// OPENCODE_CONFIG names, nil when there is none. Like opencode it replaces
// every {env:NAME} in the file's text by $NAME ("" when unset) before
// parsing it.
func readMCPConfig() (*remoteServer, error) {
	path := os.Getenv("OPENCODE_CONFIG")
	if path == "" || os.Getenv("FAKEOC_NO_MCP") == "1" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read OPENCODE_CONFIG: %w", err)
	}
	text := envRef.ReplaceAllStringFunc(string(b), func(ref string) string {
		return os.Getenv(envRef.FindStringSubmatch(ref)[1])
	})
	var conf struct {
		MCP map[string]remoteServer `json:"mcp"`
	}
	if err := json.Unmarshal([]byte(text), &conf); err != nil {
		return nil, fmt.Errorf("parse OPENCODE_CONFIG %s: %w", path, err)
	}
	entry, ok := conf.MCP["codehydra"]
	if !ok {
		return nil, nil
	}
	return &entry, nil
}

// mcpLink is the fake's connection to the codehydra MCP server, reported
// by GET /mcp the way opencode reports it.
type mcpLink struct {
	entry *remoteServer // nil: none configured

	connecting sync.Mutex // one connect at a time

	mu       sync.Mutex
	status   string // "pending", "connected", "failed", "disabled"
	err      string
	session  *sdk.ClientSession
	requests int // POST /mcp/codehydra/connect received
	// reported is closed when GET /mcp first reports "connected".
	reported chan struct{}
}

// report is GET /mcp's answer.
func (l *mcpLink) report() map[string]any {
	if l.entry == nil {
		return map[string]any{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	st := map[string]any{"status": l.status}
	if l.status == "connected" {
		select {
		case <-l.reported:
		default:
			close(l.reported)
		}
	}
	if l.err != "" {
		st["error"] = l.err
	}
	return map[string]any{"codehydra": st}
}

// connect (re)connects to the configured server: a real MCP initialize
// over streamable HTTP with the configured headers, then tools/list, as
// opencode does.
func (l *mcpLink) connect() {
	l.connecting.Lock()
	defer l.connecting.Unlock()
	if l.entry.Enabled != nil && !*l.entry.Enabled {
		l.set("disabled", "", nil)
		return
	}
	if l.entry.Type != "remote" {
		l.set("failed", fmt.Sprintf("the fake connects only to remote MCP servers, not %q", l.entry.Type), nil)
		return
	}
	l.set("pending", "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "fake-opencode", Version: "0"}, nil)
	hc := &http.Client{Transport: headerTransport{header: l.entry.Headers}}
	session, err := client.Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint: l.entry.URL, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true,
	}, nil)
	if err == nil {
		if _, err = session.ListTools(ctx, nil); err != nil {
			session.Close()
		}
	}
	if err != nil {
		l.set("failed", err.Error(), nil)
		return
	}
	l.set("connected", "", session)
}

// set records the link's state; a replaced session is closed.
func (l *mcpLink) set(status, errText string, session *sdk.ClientSession) {
	l.mu.Lock()
	old := l.session
	l.status, l.err, l.session = status, errText, session
	l.mu.Unlock()
	if old != nil && old != session {
		old.Close()
	}
}

// headerTransport adds the configured headers to every request.
type headerTransport struct {
	header map[string]string
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.header {
		r.Header.Set(k, v)
	}
	tr := http.DefaultTransport.(*http.Transport)
	return tr.RoundTrip(r)
}
