package mcp

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
			http.Error(w, "Forbidden: the Host header must be 127.0.0.1, localhost or [::1] with this server's port", http.StatusForbidden)
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
			http.Error(w, "Forbidden: cross-origin requests are not allowed", http.StatusForbidden)
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
			http.Error(w, "Unauthorized: send Authorization: Bearer <token>; `codehydra mcp-config` prints a working configuration", http.StatusUnauthorized)
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

// tokenWorkspaces is what identities needs of the workspace domain.
type tokenWorkspaces interface {
	Resolve(path string) (workspace.Workspace, error)
	AllWorkspaces() []workspace.Workspace
}

// identities tells which caller a bearer token stands for: the master
// token is the user; a workspace token (WorkspaceToken) is its workspace
// while that workspace is registered. Tokens are always compared in
// constant time.
//
// An agent names its own workspace in every request, so one derivation
// identifies it. A workspace token sent with another workspace's
// X-Workspace-Path, or with none, is found through a map from the SHA-256
// digest of each workspace's token (a lookup by digest reveals nothing
// usable about the token) to its workspace; the map is rebuilt from the
// registered workspaces when the master token rotated, or when a token is
// not in it, at most every minRefresh, so that a flood of wrong tokens
// cannot make every request list and derive every workspace.
type identities struct {
	master     *Token
	workspaces tokenWorkspaces
	now        func() time.Time

	mu        sync.Mutex
	derived   string    // the master token the maps below belong to
	refreshed time.Time // when the maps were last rebuilt
	byPath    map[string][32]byte
	byDigest  map[[32]byte]string
}

// minRefresh bounds how often an unknown token rebuilds the digest map.
const minRefresh = 250 * time.Millisecond

// identify returns the caller that cred stands for, false for no one.
// wsHeader is the request's X-Workspace-Path, "" for none.
func (ids *identities) identify(cred, wsHeader string) (caller, bool) {
	master := ids.master.Value()
	if master == "" || !validToken(cred) {
		return caller{}, false
	}
	if subtle.ConstantTimeCompare([]byte(cred), []byte(master)) == 1 {
		return caller{}, true
	}
	// An agent names its own workspace as registered: one HMAC tells,
	// and only then is the path looked up, so that a wrong token costs no
	// file-system work.
	if wsHeader != "" && subtle.ConstantTimeCompare([]byte(cred), []byte(WorkspaceToken(master, filepath.Clean(wsHeader)))) == 1 {
		if ws, ok := ids.owner(master, cred, wsHeader); ok {
			return caller{ws: ws}, true
		}
	}
	if path, ok := ids.candidate(master, sha256.Sum256([]byte(cred))); ok {
		// The map may predate the workspace's removal; owner checks that
		// it is still registered.
		if ws, ok := ids.owner(master, cred, path); ok {
			return caller{ws: ws}, true
		}
	}
	return caller{}, false
}

// owner reports whether cred is the token of the registered workspace at
// path, and returns that workspace.
func (ids *identities) owner(master, cred, path string) (workspace.Workspace, bool) {
	if path == "" {
		return workspace.Workspace{}, false
	}
	ws, err := ids.workspaces.Resolve(path)
	if err != nil {
		return workspace.Workspace{}, false
	}
	return ws, subtle.ConstantTimeCompare([]byte(cred), []byte(WorkspaceToken(master, ws.Path))) == 1
}

// candidate finds the workspace whose token has the given digest.
func (ids *identities) candidate(master string, digest [32]byte) (string, bool) {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	if ids.derived == master {
		if path, ok := ids.byDigest[digest]; ok {
			return path, true
		}
		if ids.now().Sub(ids.refreshed) < minRefresh {
			return "", false
		}
	}
	ids.refresh(master)
	path, ok := ids.byDigest[digest]
	return path, ok
}

// refresh rebuilds the maps for the registered workspaces, deriving tokens
// only for workspaces it has not derived under master yet. The caller
// holds ids.mu.
func (ids *identities) refresh(master string) {
	if ids.derived != master {
		ids.derived, ids.byPath = master, nil
	}
	all := ids.workspaces.AllWorkspaces()
	byPath := make(map[string][32]byte, len(all))
	byDigest := make(map[[32]byte]string, len(all))
	for _, ws := range all {
		d, ok := ids.byPath[ws.Path]
		if !ok {
			d = sha256.Sum256([]byte(WorkspaceToken(master, ws.Path)))
		}
		byPath[ws.Path], byDigest[d] = d, ws.Path
	}
	ids.byPath, ids.byDigest, ids.refreshed = byPath, byDigest, ids.now()
}

// bearer returns the credentials of a Bearer Authorization header, "" for
// any other scheme. The scheme is case-insensitive (RFC 9110).
func bearer(h string) string {
	scheme, cred, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(cred)
}
