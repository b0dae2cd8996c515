package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The two eras of MCP that the per-call figures are measured in: a client
// of 2025-11-25 opens a session (initialize, Mcp-Session-Id); one of
// 2026-07-28 opens none (server/discover, then each request on its own).
const (
	eraSessions  = "2025-11-25"
	eraStateless = "2026-07-28"
)

// benchClient is one go-sdk client of a server, in the era it asked for:
// the bench's own, so that it can ask for either era of any server
// (codehydra's, the bare go-sdk one, the Node SDK's).
type benchClient struct {
	session   *sdk.ClientSession
	transport *http.Transport
}

// dialEra connects to the MCP server at url with token (and, when ws is
// set, X-Workspace-Path) in era. A server that does not speak era
// answers in the one it does; era reports which it was.
func dialEra(ctx context.Context, url, token, ws, era string) (*benchClient, error) {
	header := http.Header{}
	header.Set("Authorization", "Bearer "+token)
	if ws != "" {
		header.Set("X-Workspace-Path", ws)
	}
	base := &http.Transport{Proxy: nil, ResponseHeaderTimeout: time.Minute}
	client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint:             url,
		HTTPClient:           &http.Client{Transport: headers{base, header}},
		MaxRetries:           -1,
		DisableStandaloneSSE: true,
	}, &sdk.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		base.CloseIdleConnections()
		return nil, fmt.Errorf("connect to %s in %s: %w", url, era, err)
	}
	return &benchClient{session: cs, transport: base}, nil
}

// era is the protocol version the server answered in.
func (c *benchClient) era() string {
	if r := c.session.InitializeResult(); r != nil {
		return r.ProtocolVersion
	}
	return ""
}

// call calls tool without arguments; a tool error is an error.
func (c *benchClient) call(ctx context.Context, tool string) error {
	res, err := c.session.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: map[string]any{}})
	if err != nil {
		return fmt.Errorf("call %s: %w", tool, err)
	}
	if res.IsError {
		return fmt.Errorf("call %s: error result", tool)
	}
	return nil
}

func (c *benchClient) close() {
	_ = c.session.Close()
	c.transport.CloseIdleConnections()
}

// headers adds fixed headers to every request.
type headers struct {
	base   http.RoundTripper
	header http.Header
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.header {
		r.Header[k] = v
	}
	return h.base.RoundTrip(r)
}
