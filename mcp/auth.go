package mcp

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/workspace"
)

// The checks below run before the SDK sees a request, cheapest and least
// revealing first: a foreign Host or a browser's cross-site request is
// refused before the token is even looked at.

// checkHost answers 403 unless the Host header names this server by a
// loopback name and the port it listens on. A DNS-rebinding page reaches
// 127.0.0.1 under its own host name, which this refuses; the SDK's own
// localhost protection (kept on) accepts any loopback host and any port, so
// this is the stricter of the two.
func checkHost(port *atomic.Int32, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host, int(port.Load())) {
			refuseAndClose(w, "Forbidden: the Host header must be 127.0.0.1, localhost or [::1] with this server's port", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func loopbackHost(host string, port int) bool {
	p := ":" + strconv.Itoa(port)
	name, ok := strings.CutSuffix(host, p)
	if !ok {
		return false
	}
	return name == "127.0.0.1" || name == "[::1]" || name == "localhost"
}

// checkOrigin answers 403 to cross-origin browser requests (Sec-Fetch-Site
// or Origin, as http.CrossOriginProtection judges them). CrossOriginProtection
// lets GET, HEAD and OPTIONS through as "safe"; here no method is safe — a GET
// opens an event stream — so every request is judged as if it were a POST.
func checkOrigin(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		probe := *r
		probe.Method = http.MethodPost
		if err := cop.Check(&probe); err != nil {
			refuseAndClose(w, "Forbidden: cross-origin requests are not allowed", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkToken answers 401 unless the request carries
// "Authorization: Bearer <token>" with the current master token or the
// token of a registered workspace, and tells the rest of the server who
// the caller is. The SDK's own bearer middleware then only carries the
// caller into the MCP session: it copies it into every request's Extra,
// where the call pipeline reads it, and refuses a session to any caller
// but the one that opened it, so a workspace token cannot ride on the
// user's session.
func checkToken(ids *identities, next http.Handler) http.Handler {
	carry := auth.RequireBearerToken(func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		who, ok := r.Context().Value(callerKey{}).(caller)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: who.name(), Extra: map[string]any{callerExtra: who}}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who, ok := ids.identify(bearer(r.Header.Get("Authorization")), r.Header.Get(WorkspaceHeader))
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="codehydra"`)
			refuseAndClose(w, "Unauthorized: send Authorization: Bearer <token>; `codehydra mcp-config` prints a working configuration", http.StatusUnauthorized)
			return
		}
		carry.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, who)))
	})
}

type callerKey struct{}

// callerExtra is the key of the caller in auth.TokenInfo.Extra.
const callerExtra = "codehydra.caller"

// userCaller is the name of the user (the master token's holder) in audit
// lines and logs; a workspace's caller is named by its path, which is
// absolute, so the two never meet.
const userCaller = "user"

// caller is who sent a request, as its credential proves: the user (the
// master token) or one workspace (that workspace's token).
type caller struct {
	// ws is the workspace whose token the request carried; zero for the
	// user.
	ws workspace.Workspace
	// nonce is the registration nonce the workspace's token was derived
	// with: a session stays bound to that registration, not to whatever
	// workspace later has the same path.
	nonce string
}

func (c caller) isUser() bool { return c.ws.Path == "" }

// name is the caller as audit lines show it.
func (c caller) name() string {
	if c.isUser() {
		return userCaller
	}
	return c.ws.Path
}

// callerOf is the caller of a tool call, as checkToken identified it. A
// request without one (which checkToken never lets through) is
// unidentified.
func callerOf(req sdk.Request) caller {
	if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil {
		if who, ok := extra.TokenInfo.Extra[callerExtra].(caller); ok {
			return who
		}
	}
	return unidentified()
}

// unidentified is the least trusted caller there is: a workspace that
// matches none, in no project.
func unidentified() caller { return caller{ws: workspace.Workspace{Path: "(unidentified)"}} }

// bearer returns the credentials of a Bearer Authorization header, "" for
// any other scheme. The scheme is case-insensitive (RFC 9110).
func bearer(h string) string {
	scheme, cred, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(cred)
}
