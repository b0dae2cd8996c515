package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
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
	sent      *sentCall
}

// sentCall is the first tools/call a benchClient's go-sdk client sent, as
// it went on the wire (the client's own headers, its session id or its
// per-request _meta, and the bench's headers), for replay: the body
// split around its JSON-RPC id.
type sentCall struct {
	mu            sync.Mutex
	url           string
	header        http.Header
	before, after []byte
}

// record keeps r as the call to replay, once: the first tools/call.
func (s *sentCall) record(r *http.Request) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.header != nil || r.Method != http.MethodPost || r.GetBody == nil {
		return nil
	}
	rc, err := r.GetBody()
	if err != nil {
		return err
	}
	body, err := io.ReadAll(rc)
	if err != nil {
		return err
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method != "tools/call" {
		return nil
	}
	// The go-sdk writes the id before the params: the first "id": is it.
	key := []byte(`"id":`)
	at := bytes.Index(body, key)
	end := at + len(key) + len(msg.ID)
	if at < 0 || !bytes.HasPrefix(body[at+len(key):], msg.ID) || end >= len(body) || (body[end] != ',' && body[end] != '}') {
		return fmt.Errorf("cannot find the id %s in the tools/call the client sent", msg.ID)
	}
	s.url, s.header = r.URL.String(), r.Header.Clone()
	s.before, s.after = slices.Clone(body[:end-len(msg.ID)]), slices.Clone(body[end:])
	return nil
}

// thinCall sends the client's recorded tools/call again with id, on the
// same HTTP client's connections, as a client that only writes bytes and
// reads the whole answer would: the server does the same work as for the
// go-sdk client's call, the client next to none (no JSON decoding, no
// garbage to speak of). body and answer are reused from call to call;
// answer holds the answer as it came (checkAnswer checks it, after the
// call is timed).
func (c *benchClient) thinCall(ctx context.Context, id int, body, answer *bytes.Buffer) error {
	s := c.sent
	s.mu.Lock()
	url, header, before, after := s.url, s.header, s.before, s.after
	s.mu.Unlock()
	if header == nil {
		return errors.New("no tools/call to replay: the client sent none")
	}
	body.Reset()
	body.Write(before)
	body.WriteString(strconv.Itoa(id))
	body.Write(after)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body.Bytes()))
	if err != nil {
		return err
	}
	req.Header = header
	resp, err := c.transport.RoundTrip(req)
	if err != nil {
		return fmt.Errorf("replayed call: %w", err)
	}
	answer.Reset()
	_, err = answer.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("replayed call: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("replayed call: HTTP %d: %.300s", resp.StatusCode, answer.Bytes())
	}
	return nil
}

// checkAnswer checks that answer, what thinCall read, is one JSON-RPC
// response to id, as JSON or as the data of an event stream: a tool
// result with content that is not an error.
func checkAnswer(answer []byte, id int) error {
	msg := answer
	if !bytes.HasPrefix(bytes.TrimSpace(msg), []byte("{")) {
		msg = nil
		for line := range bytes.Lines(answer) {
			if data, ok := bytes.CutPrefix(line, []byte("data:")); ok && len(bytes.TrimSpace(data)) > 0 {
				if msg != nil {
					return fmt.Errorf("replayed call: more than one message in the answer: %.300s", answer)
				}
				msg = data
			}
		}
	}
	var resp struct {
		ID     int `json:"id"`
		Result *struct {
			Content []json.RawMessage `json:"content"`
			IsError bool              `json:"isError"`
		} `json:"result"`
	}
	if err := json.Unmarshal(msg, &resp); err != nil {
		return fmt.Errorf("replayed call: the answer is not a JSON-RPC response (%v): %.300s", err, answer)
	}
	if resp.ID != id || resp.Result == nil || resp.Result.IsError || len(resp.Result.Content) == 0 {
		return fmt.Errorf("replayed call %d: not the call's successful result: %.300s", id, answer)
	}
	return nil
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
	sent := &sentCall{}
	client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint:             url,
		HTTPClient:           &http.Client{Transport: headers{base, header, sent}},
		MaxRetries:           -1,
		DisableStandaloneSSE: true,
	}, &sdk.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		base.CloseIdleConnections()
		return nil, fmt.Errorf("connect to %s in %s: %w", url, era, err)
	}
	return &benchClient{session: cs, transport: base, sent: sent}, nil
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

// headers adds fixed headers to every request, and records the first
// tools/call in sent.
type headers struct {
	base   http.RoundTripper
	header http.Header
	sent   *sentCall
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.header {
		r.Header[k] = v
	}
	if err := h.sent.record(r); err != nil {
		return nil, err
	}
	return h.base.RoundTrip(r)
}
