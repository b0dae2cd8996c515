package mcpstdio

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// A client of protocol 2026-07-28 and later opens no session: it starts
// with server/discover, and every request names its protocol version in
// its _meta. The bridge posts each such request on its own, with the
// headers that protocol wants over HTTP (the version, the method, the
// name), and without a session id; the server answers it alone. Such a
// request is cancelled by dropping its HTTP request, since there is no
// session for a notifications/cancelled to find it in.

// isStateless says whether msg goes the stateless way: a request that
// names its protocol version, or a notification of a client that has
// only sent such requests so far.
func (b *bridge) isStateless(msg rpcMessage) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if v := msg.version(); v != "" {
		b.stateless = v
		return true
	}
	return !msg.isRequest() && b.session == "" && b.stateless != ""
}

// forwardStateless posts one message of the stateless protocol and
// passes on what answers it. A request's ctx is its own (startCall), so
// a notifications/cancelled of it drops its HTTP request.
func (b *bridge) forwardStateless(ctx context.Context, msg rpcMessage, line []byte) {
	if msg.Method == "notifications/cancelled" {
		b.cancelCall(msg.Params.RequestID)
		return
	}
	version := msg.version()
	if version == "" {
		b.mu.Lock()
		version = b.stateless
		b.mu.Unlock()
	}
	resp, err := b.postStateless(ctx, msg, version, line)
	b.answer(ctx, msg, resp, err)
}

// postStateless sends one message of the stateless protocol. When the
// server cannot be reached or refuses the token (CodeHydra restarted on
// another port, or rotated its token, or is starting), it finds the
// running instance again and sends the message again.
func (b *bridge) postStateless(ctx context.Context, msg rpcMessage, version string, line []byte) (*http.Response, error) {
	more := http.Header{methodHeader: {msg.Method}}
	if n := msg.name(); n != "" {
		more.Set(nameHeader, n)
	}
	b.mu.Lock()
	t := b.target
	b.mu.Unlock()
	resp, err := b.doWith(ctx, http.MethodPost, t, "", version, line, more)
	if err == nil && resp.StatusCode != http.StatusUnauthorized {
		return resp, nil
	}
	if resp != nil {
		resp.Body.Close()
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return b.postFound(ctx, func(t Target) (*http.Response, error) {
		return b.doWith(ctx, http.MethodPost, t, "", version, line, more)
	})
}

// startCall gives a request of the stateless protocol (one that names
// its version) its own context, which a notifications/cancelled of its id
// cancels until done is called. The read loop calls it before the
// request's goroutine starts, so a cancellation read right after it finds
// it. A request whose id is that of one still under way is refused: the
// cancellation of that id would be ambiguous. Other requests keep ctx.
func (b *bridge) startCall(ctx context.Context, msg rpcMessage) (callCtx context.Context, done func(), err error) {
	if msg.version() == "" {
		return ctx, func() {}, nil
	}
	key := callKey(msg.ID)
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.calls[key]; ok {
		return nil, nil, fmt.Errorf("a request with the id %s is still under way; ids of requests under way must differ", key)
	}
	if b.calls == nil {
		b.calls = map[string]context.CancelFunc{}
	}
	callCtx, cancel := context.WithCancel(ctx)
	b.calls[key] = cancel
	return callCtx, func() {
		b.mu.Lock()
		delete(b.calls, key)
		b.mu.Unlock()
		cancel()
	}, nil
}

// cancelCall drops the HTTP request of the request id, if it is under way.
func (b *bridge) cancelCall(id json.RawMessage) {
	b.mu.Lock()
	cancel := b.calls[callKey(id)]
	b.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// callKey is a JSON-RPC id as a map key: its JSON, without blanks.
func callKey(id json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, id) != nil {
		return string(id)
	}
	return buf.String()
}
