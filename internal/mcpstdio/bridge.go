package mcpstdio

import (
	"bufio"
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

	"codehydra/internal/sse"
	"codehydra/mcp"
)

// The bridge behind mcp-stdio passes JSON-RPC messages, as they are,
// between a client on stdio (one message a line) and CodeHydra's
// streamable HTTP endpoint. It is a plain forwarder, not the SDK's
// client transport: that transport opens the stream of server
// notifications (tools/list_changed, …) and sends the protocol-version
// header only when the SDK's own Client tells it, through an unexported
// hook, that initialize is done; used as a pipe it would never deliver a
// notification outside a request. A forwarder also passes every field
// and method as the client and server wrote them, whatever version of
// the protocol they speak.

// The headers of the streamable HTTP transport.
const (
	sessionHeader  = "Mcp-Session-Id"
	protocolHeader = "Mcp-Protocol-Version"
	// Since 2026-07-28, a request names its method, and the tool, prompt
	// or resource it is for, in headers too.
	methodHeader = "Mcp-Method"
	nameHeader   = "Mcp-Name"
)

// notRunningCode is the JSON-RPC error code of an answer the bridge gives
// itself (the range -32000..-32099 is the implementation's own).
const notRunningCode = -32000

// invalidRequestCode is JSON-RPC's code of a request that is not a valid
// one: here, one whose id is that of a request still under way.
const invalidRequestCode = -32600

// bridge is one run of mcp-stdio.
type bridge struct {
	out    io.Writer
	outMu  sync.Mutex
	stderr io.Writer
	find   func() (Target, error)
	http   *http.Client
	// startGrace is how long a new session is tried for while CodeHydra
	// is (re)starting.
	startGrace time.Duration

	mu       sync.Mutex
	target   Target
	session  string
	protocol string
	// initialize is the client's initialize request, replayed to open a
	// new session when CodeHydra restarted or closed the idle one.
	initialize []byte
	// gen counts sessions, so that requests failing together open one.
	gen int
	// reopening lets one request at a time open a new session.
	reopening sync.Mutex
	// The stream of server messages outside any request (GET), wanted
	// once the client has said initialized.
	stopStream   context.CancelFunc
	streamWanted bool
	streams      sync.WaitGroup
	// stateless is the protocol version of the client's last request
	// that named one in its _meta (2026-07-28 on: no session), "" before.
	stateless string
	// calls cancel the HTTP requests of the stateless requests under
	// way, by JSON-RPC id: such a request is cancelled by dropping it.
	calls map[string]context.CancelFunc
}

func newBridge(out, stderr io.Writer, find func() (Target, error)) *bridge {
	// No proxy: the server is on loopback, and a proxy would see the token.
	tr := &http.Transport{Proxy: nil, ResponseHeaderTimeout: 0}
	return &bridge{out: out, stderr: stderr, find: find, http: &http.Client{Transport: tr}, startGrace: 20 * time.Second}
}

// rpcMessage is what the bridge reads of a message: enough to tell a
// request (method and id) from a notification (method, no id) and a
// response (id, no method), and, for the stateless protocol, the
// version, name and cancelled request it names.
type rpcMessage struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params struct {
		Meta      map[string]any  `json:"_meta"`
		Name      string          `json:"name"`
		URI       string          `json:"uri"`
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

// version is the protocol version the message names in its _meta, which
// a request of 2026-07-28 and later does: "" for none.
func (m rpcMessage) version() string {
	v, _ := m.Params.Meta["io.modelcontextprotocol/protocolVersion"].(string)
	return v
}

// name is what the Mcp-Name header says of the message: the tool,
// prompt or resource it is for.
func (m rpcMessage) name() string {
	switch m.Method {
	case "tools/call", "prompts/get":
		return m.Params.Name
	case "resources/read":
		return m.Params.URI
	}
	return ""
}

func (m rpcMessage) isRequest() bool {
	return m.Method != "" && len(m.ID) > 0 && string(m.ID) != "null"
}

// run forwards the client's messages from in until it closes in (exit 0).
// When CodeHydra is not running it says so on stderr and answers every
// request with that error (exit 1). Requests run side by side, each with its own HTTP
// request, so a long tool call does not hold up a cancellation or a ping;
// notifications and responses go in order.
func (b *bridge) run(ctx context.Context, in io.Reader) int {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
		b.close()
	}()
	target, findErr := b.find()
	if findErr != nil {
		fmt.Fprintf(b.stderr, "codehydra mcp-stdio: %v\n", findErr)
	}
	b.target = target
	r := bufio.NewReaderSize(in, 1<<16)
	for {
		line, err := r.ReadBytes('\n')
		if line = bytes.TrimSpace(line); len(line) > 0 {
			var msg rpcMessage
			_ = json.Unmarshal(line, &msg) // a batch or junk is forwarded as it is
			if findErr != nil {
				// Every request gets the reason until the client gives
				// up; leaving at once could close stdout before a client
				// has read the answer.
				if msg.isRequest() {
					b.reply(msg.ID, findErr)
				}
				continue
			}
			if msg.isRequest() {
				// Registered here, before the next line is read, so
				// that a notifications/cancelled right behind finds it.
				callCtx, done, err := b.startCall(ctx, msg)
				if err != nil {
					b.replyCode(msg.ID, invalidRequestCode, err)
					continue
				}
				wg.Add(1)
				go func() { defer wg.Done(); defer done(); b.forward(callCtx, msg, line) }()
			} else {
				b.forward(ctx, msg, line)
			}
		}
		if err != nil {
			if findErr != nil {
				return 1
			}
			return 0
		}
	}
}

// forward posts one message and passes on what answers it.
func (b *bridge) forward(ctx context.Context, msg rpcMessage, line []byte) {
	if b.isStateless(msg) {
		b.forwardStateless(ctx, msg, line)
		return
	}
	if msg.Method == "initialize" {
		b.mu.Lock()
		b.initialize = line
		b.mu.Unlock()
	}
	var resp *http.Response
	var err error
	if msg.Method == "initialize" {
		resp, err = b.postInitialize(ctx, line)
	} else {
		resp, err = b.post(ctx, msg, line)
	}
	if err == nil && msg.Method == "initialize" && resp.StatusCode == http.StatusOK {
		b.mu.Lock()
		b.session = resp.Header.Get(sessionHeader)
		b.mu.Unlock()
	}
	b.answer(ctx, msg, resp, err)
	if err == nil && msg.Method == "notifications/initialized" && resp.StatusCode < 300 {
		b.mu.Lock()
		b.streamWanted = true
		b.mu.Unlock()
		b.openStream()
	}
}

// answer passes on to the client what the server answered to msg (resp,
// whose body it closes), or says why there is no answer (err): on stderr
// and, to a request, as its error. Nothing is said once ctx is done: the
// client gave up, or the bridge is ending.
func (b *bridge) answer(ctx context.Context, msg rpcMessage, resp *http.Response, err error) {
	if err != nil {
		if ctx.Err() == nil {
			fmt.Fprintf(b.stderr, "codehydra mcp-stdio: %v\n", err)
			if msg.isRequest() {
				b.reply(msg.ID, err)
			}
		}
		return
	}
	defer resp.Body.Close()
	if err := b.relay(resp, msg); err != nil && ctx.Err() == nil && msg.isRequest() {
		b.reply(msg.ID, err)
	}
}

// relay writes what the server answered to a message to the client: one
// JSON message, or the events of a stream (progress, then the result).
// A refusal with a JSON-RPC error (a protocol version the server does
// not take, a missing header) is passed on as the server wrote it, for
// the client to act on.
func (b *bridge) relay(resp *http.Response, msg rpcMessage) error {
	switch ct := resp.Header.Get("Content-Type"); {
	case resp.StatusCode == http.StatusAccepted:
		return nil
	case resp.StatusCode != http.StatusOK:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if answer, ok := rpcError(body, msg.ID); ok && msg.isRequest() {
			b.write(answer)
			return nil
		}
		if len(body) > 4096 {
			body = body[:4096]
		}
		return fmt.Errorf("CodeHydra's MCP server answered %s: %s", resp.Status, strings.TrimSpace(string(body)))
	case strings.HasPrefix(ct, "text/event-stream"):
		return readEvents(resp.Body, func(data []byte) {
			if msg.Method == "initialize" {
				b.learnProtocol(data)
			}
			b.write(data)
		})
	default:
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return fmt.Errorf("read the answer of CodeHydra's MCP server: %w", err)
		}
		if msg.Method == "initialize" {
			b.learnProtocol(body)
		}
		if len(bytes.TrimSpace(body)) > 0 {
			b.write(body)
		}
		return nil
	}
}

// learnProtocol keeps the protocol version the server chose, which every
// later request names in a header.
func (b *bridge) learnProtocol(data []byte) {
	var res struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if json.Unmarshal(data, &res) == nil && res.Result.ProtocolVersion != "" {
		b.mu.Lock()
		b.protocol = res.Result.ProtocolVersion
		b.mu.Unlock()
	}
}

// post sends one message. When the session is gone (CodeHydra restarted,
// rotated its token or closed the idle session), it opens a new one with
// the client's initialize and sends the message again, once.
func (b *bridge) post(ctx context.Context, msg rpcMessage, line []byte) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		b.mu.Lock()
		t, session, protocol, gen := b.target, b.session, b.protocol, b.gen
		b.mu.Unlock()
		resp, err := b.do(ctx, http.MethodPost, t, session, protocol, line)
		lost := err != nil || resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusUnauthorized
		if !lost || attempt > 0 || session == "" || msg.Method == "initialize" || ctx.Err() != nil {
			if err != nil {
				return nil, fmt.Errorf("reach CodeHydra's MCP server at %s: %w (is CodeHydra still running?)", t.URL, err)
			}
			return resp, nil
		}
		if resp != nil {
			resp.Body.Close()
		}
		if err := b.reopen(ctx, gen); err != nil {
			return nil, err
		}
	}
}

// postInitialize sends the client's initialize, finding the instance
// again and trying again while it is starting (a client and CodeHydra
// started together at login).
func (b *bridge) postInitialize(ctx context.Context, line []byte) (*http.Response, error) {
	return b.postFound(ctx, func(t Target) (*http.Response, error) {
		return b.do(ctx, http.MethodPost, t, "", "", line)
	})
}

// postFound finds the running instance, makes it the target and posts to
// it with post, trying again while it is starting or refuses the token
// (CodeHydra restarted on another port, rotated its token, or is
// starting).
func (b *bridge) postFound(ctx context.Context, post func(Target) (*http.Response, error)) (*http.Response, error) {
	var resp *http.Response
	err := b.whileStarting(ctx, func() error {
		t, err := b.find()
		if err != nil {
			return err
		}
		b.mu.Lock()
		changed := b.target != t
		b.target = t
		b.mu.Unlock()
		if changed {
			fmt.Fprintln(b.stderr, "codehydra mcp-stdio: found CodeHydra again (it restarted, or its token was rotated)")
		}
		resp, err = post(t)
		if err != nil {
			return fmt.Errorf("reach CodeHydra's MCP server at %s: %w (is CodeHydra still running?)", t.URL, err)
		}
		if resp.StatusCode == http.StatusUnauthorized {
			resp.Body.Close()
			return fmt.Errorf("CodeHydra's MCP server refused the token (%s)", resp.Status)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// rpcError is body, a JSON-RPC error answer, as the answer to the
// request id (the server may not have read the id it refused).
func rpcError(body []byte, id json.RawMessage) ([]byte, bool) {
	var answer map[string]json.RawMessage
	if json.Unmarshal(body, &answer) != nil || len(answer["error"]) == 0 || string(answer["error"]) == "null" {
		return nil, false
	}
	answer["id"] = id
	out, err := json.Marshal(answer)
	return out, err == nil
}

// do sends one HTTP request to the target.
func (b *bridge) do(ctx context.Context, method string, t Target, session, protocol string, body []byte) (*http.Response, error) {
	return b.doWith(ctx, method, t, session, protocol, body, nil)
}

// doWith is do with more headers.
func (b *bridge) doWith(ctx context.Context, method string, t Target, session, protocol string, body []byte, more http.Header) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.URL, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+t.Token)
	if t.Workspace != "" {
		req.Header.Set(mcp.WorkspaceHeader, t.Workspace)
	}
	if session != "" {
		req.Header.Set(sessionHeader, session)
	}
	if protocol != "" {
		req.Header.Set(protocolHeader, protocol)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range more {
		req.Header[k] = v
	}
	return b.http.Do(req)
}

// write sends one message to the client, whole, on one line.
func (b *bridge) write(data []byte) {
	var buf bytes.Buffer
	if json.Compact(&buf, data) != nil {
		buf.Reset()
		buf.Write(bytes.ReplaceAll(data, []byte("\n"), nil))
	}
	buf.WriteByte('\n')
	b.outMu.Lock()
	defer b.outMu.Unlock()
	_, _ = b.out.Write(buf.Bytes())
}

// reply answers the request id with an error of the bridge's own.
func (b *bridge) reply(id json.RawMessage, err error) { b.replyCode(id, notRunningCode, err) }

// replyCode answers the request id with the JSON-RPC error code and err.
func (b *bridge) replyCode(id json.RawMessage, code int, err error) {
	type rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	data, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}{"2.0", id, rpcError{code, "codehydra mcp-stdio: " + err.Error()}})
	b.write(data)
}

// close ends the session, so the server need not wait for it to idle out.
func (b *bridge) close() {
	b.mu.Lock()
	t, session, protocol := b.target, b.session, b.protocol
	if b.stopStream != nil {
		b.stopStream()
	}
	b.mu.Unlock()
	b.streams.Wait()
	if session == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if resp, err := b.do(ctx, http.MethodDelete, t, session, protocol, nil); err == nil {
		resp.Body.Close()
	}
	b.http.CloseIdleConnections()
}

// maxEvent bounds one event of CodeHydra's MCP server that the bridge
// holds: a tool's result, or a notification.
const maxEvent = 16 << 20

// readEvents calls fn with the data of each event of a server-sent event
// stream until it ends. An event over maxEvent is refused: the stream is
// not read further. An event the end of the stream cut off is passed on:
// it may lack only its blank line.
func readEvents(r io.Reader, fn func(data []byte)) error {
	sr := sse.NewReader(r, maxEvent)
	for {
		data, err := sr.Next()
		if len(data) > 0 {
			fn(data)
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return nil
		case errors.Is(err, sse.ErrTooLarge):
			return fmt.Errorf("refused an event of CodeHydra's MCP server over %d MiB", maxEvent>>20)
		default:
			return fmt.Errorf("read CodeHydra's event stream: %w", err)
		}
	}
}
