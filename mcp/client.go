package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/workspace"
)

// DialOptions say where a Remote connects.
type DialOptions struct {
	// URL and Token come from the instance file of the running app.
	URL   string
	Token string
	// WorkspacePath, if set, is sent as X-Workspace-Path on every request.
	WorkspacePath string
	// Version is reported as the client version.
	Version string
	// Protocol is the protocol version to ask for: "" for the newest
	// (stateless), ProtocolSessions for a session as before 2026-07-28.
	Protocol string
}

// Remote is one MCP client of a running CodeHydra, as the command line
// uses it: call a tool, get its JSON or a *ToolError. It speaks the
// newest protocol, stateless: a command costs server/discover and one
// POST per call, and holds none of the server's session places. A
// CodeHydra from before 2026-07-28 answers discover with its own
// versions, and the client opens a session with it instead.
type Remote struct {
	session   *sdk.ClientSession
	transport *http.Transport
}

// ToolError is a tool's error result.
type ToolError struct {
	Code    workspace.Code
	Message string
}

func (e *ToolError) Error() string { return e.Message + " (" + string(e.Code) + ")" }

// Dial connects to the MCP server at o.URL.
func Dial(ctx context.Context, o DialOptions) (*Remote, error) {
	header := http.Header{}
	header.Set("Authorization", "Bearer "+o.Token)
	if o.WorkspacePath != "" {
		header.Set(WorkspaceHeader, o.WorkspacePath)
	}
	base := &http.Transport{Proxy: nil, ResponseHeaderTimeout: time.Minute}
	ht := &headerTransport{base: base, header: header}
	hc := &http.Client{Transport: ht}
	version := o.Version
	if version == "" {
		version = "dev"
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "codehydra-cli", Version: version}, nil)
	session, err := client.Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint:             o.URL,
		HTTPClient:           hc,
		MaxRetries:           -1,
		DisableStandaloneSSE: true,
	}, &sdk.ClientSessionOptions{ProtocolVersion: o.Protocol})
	if err != nil {
		base.CloseIdleConnections()
		if why := ht.refusal(); why != "" {
			// The SDK reports a 503 by its status text only; the body
			// says which limit refused and what to do.
			return nil, fmt.Errorf("connect to %s: %s: %w", o.URL, why, err)
		}
		return nil, fmt.Errorf("connect to %s: %w", o.URL, err)
	}
	return &Remote{session: session, transport: base}, nil
}

// Call calls tool with args and returns the JSON of its result (the text
// content: an object, a number or null). A tool error is a *ToolError.
func (r *Remote) Call(ctx context.Context, tool string, args any) (json.RawMessage, error) {
	if args == nil {
		args = map[string]any{}
	}
	res, err := r.session.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("call %s: %w", tool, err)
	}
	text := ResultText(res)
	if res.IsError {
		var body errorResult
		if err := json.Unmarshal([]byte(text), &body); err != nil || body.Error.Code == "" {
			return nil, &ToolError{Code: workspace.CodeInternal, Message: text}
		}
		return nil, &ToolError{Code: workspace.Code(body.Error.Code), Message: body.Error.Message}
	}
	if !json.Valid([]byte(text)) {
		return nil, fmt.Errorf("call %s: the result is not JSON: %q", tool, text)
	}
	return json.RawMessage(text), nil
}

// Close ends the client (and a session, with a CodeHydra that keeps
// them) and drops its connections.
func (r *Remote) Close() error {
	err := r.session.Close()
	r.transport.CloseIdleConnections()
	if errors.Is(err, sdk.ErrConnectionClosed) {
		return nil
	}
	return err
}

// ResultText is the first text content of res, "" when it has none.
func ResultText(res *sdk.CallToolResult) string {
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			return t.Text
		}
	}
	return ""
}

// headerTransport adds fixed headers to every request, and keeps what the
// server said when it refused one with 503.
type headerTransport struct {
	base   http.RoundTripper
	header http.Header

	mu      sync.Mutex
	refused string
}

// maxRefusal bounds the body of a refusal that is read.
const maxRefusal = 64 << 10

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.header {
		r.Header[k] = v
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		return resp, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxRefusal))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	t.mu.Lock()
	t.refused = refusalMessage(body)
	t.mu.Unlock()
	return resp, nil
}

// refusal is the reason of the last 503, "" for none.
func (t *headerTransport) refusal() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.refused
}

// refusalMessage is the message of a JSON-RPC error body, else the body
// as text.
func refusalMessage(body []byte) string {
	var rpc struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &rpc); err == nil && rpc.Error.Message != "" {
		return rpc.Error.Message
	}
	return strings.TrimSpace(string(body))
}
