package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The server speaks two eras of MCP side by side. A client of 2025-11-25
// or before opens a session (initialize, Mcp-Session-Id) and keeps it; the
// session side holds its place, its idle timer and its owner. A client of
// 2026-07-28 opens none: each of its requests names its protocol version
// in the Mcp-Protocol-Version header and in its _meta, and is served on
// its own by the SDK's stateless handler. Both sides sit behind the same
// HTTP checks (each request shows its token, which alone says who it is),
// and share the one SDK server, so tools, rate limits, timeouts, audit
// and telemetry are the same whatever the era.

// The protocol versions that start each era.
const (
	// ProtocolSessions is the newest protocol version with sessions.
	ProtocolSessions = "2025-11-25"
	// ProtocolStateless is the first protocol version without them.
	ProtocolStateless = "2026-07-28"
)

// protocolHeader carries a request's protocol version.
const protocolHeader = "Mcp-Protocol-Version"

// metaProtocolVersion is the _meta key in which a request of the
// stateless era names its version.
const metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// byEra sends each request to the side of the era it declares: stateless
// when its Mcp-Protocol-Version header is 2026-07-28 or later, or, for a
// POST without that header and without a session, when its body's _meta
// names a version (the stateless side then answers that the header is
// missing, instead of the session side's "not supported"). Every other
// request is the session side's, as before.
func byEra(stateless, sessions http.Handler) http.Handler {
	perRequest := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stateless.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), statelessKey{}, true)))
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := r.Header.Get(protocolHeader)
		switch {
		case v >= ProtocolStateless:
			perRequest.ServeHTTP(w, r)
		case v != "" || r.Method != http.MethodPost || r.Header.Get(sessionHeader) != "":
			sessions.ServeHTTP(w, r)
		default:
			// Most often an initialize: one a session.
			body, err := io.ReadAll(r.Body)
			if err != nil {
				var tooLarge *http.MaxBytesError
				if errors.As(err, &tooLarge) {
					http.Error(w, "request body larger than the limit", http.StatusRequestEntityTooLarge)
					return
				}
				http.Error(w, "cannot read the request body", http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			if metaVersion(body) != "" {
				perRequest.ServeHTTP(w, r)
				return
			}
			sessions.ServeHTTP(w, r)
		}
	})
}

// metaVersion is the protocol version a JSON-RPC request names in its
// params' _meta, "" when it names none (or is a batch, or not JSON).
func metaVersion(body []byte) string {
	var msg struct {
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	_ = json.Unmarshal(body, &msg)
	v, _ := msg.Params.Meta[metaProtocolVersion].(string)
	return v
}

// statelessKey marks the context of a request of the stateless era.
type statelessKey struct{}

// isStateless says whether ctx is a request's of the stateless era.
func isStateless(ctx context.Context) bool {
	v, _ := ctx.Value(statelessKey{}).(bool)
	return v
}

// sessionOf is the MCP session a request belongs to; nil for a request
// of the stateless era, whose SDK session lasts only as long as the
// request and so is no one's to remember.
func sessionOf(ctx context.Context, req sdk.Request) *sdk.ServerSession {
	ss, _ := req.GetSession().(*sdk.ServerSession)
	if ss == nil || isStateless(ctx) {
		return nil
	}
	return ss
}
