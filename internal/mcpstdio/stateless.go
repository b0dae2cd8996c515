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
// passes on what answers it.
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
	callCtx := ctx
	if msg.isRequest() {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithCancel(ctx)
		defer b.trackCall(msg.ID, cancel)()
	}
	resp, err := b.postStateless(callCtx, msg, version, line)
	if err != nil {
		if callCtx.Err() == nil {
			fmt.Fprintf(b.stderr, "codehydra mcp-stdio: %v\n", err)
			if msg.isRequest() {
				b.reply(msg.ID, err)
			}
		}
		return
	}
	defer resp.Body.Close()
	if err := b.relay(resp, msg); err != nil && callCtx.Err() == nil && msg.isRequest() {
		b.reply(msg.ID, err)
	}
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
	err = b.whileStarting(ctx, func() error {
		found, err := b.find()
		if err != nil {
			return err
		}
		resp, err = b.doWith(ctx, http.MethodPost, found, "", version, line, more)
		if err != nil {
			return fmt.Errorf("reach CodeHydra's MCP server at %s: %w (is CodeHydra still running?)", found.URL, err)
		}
		if resp.StatusCode == http.StatusUnauthorized {
			resp.Body.Close()
			return fmt.Errorf("CodeHydra's MCP server refused the token (%s)", resp.Status)
		}
		b.mu.Lock()
		changed := b.target != found
		b.target = found
		b.mu.Unlock()
		if changed {
			fmt.Fprintln(b.stderr, "codehydra mcp-stdio: found CodeHydra again (it restarted, or its token was rotated)")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// trackCall keeps cancel as the way to cancel the request id, until the
// returned func is called.
func (b *bridge) trackCall(id json.RawMessage, cancel context.CancelFunc) (done func()) {
	key := callKey(id)
	b.mu.Lock()
	if b.calls == nil {
		b.calls = map[string]context.CancelFunc{}
	}
	b.calls[key] = cancel
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		delete(b.calls, key)
		b.mu.Unlock()
		cancel()
	}
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
