package gateway

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/settings"
)

// httpTransport is the Streamable HTTP transport to the server's url. Its
// headers (often a token) go to that url's origin only: a redirect to
// another origin is refused, and a plain-http server on a loopback port
// must be the user's own (another local user could listen there, e.g.
// while the user's server is down), which the dial checks on Linux; where
// that cannot be checked, a plain-http server with headers is refused.
func (s *server) httpTransport(ctx context.Context, ws string, probe bool) (sdk.Transport, error) {
	vars, err := s.workspaceVars(ctx, ws, probe)
	if err != nil {
		return nil, err
	}
	u, err := settings.Expand(s.cfg.URL, s.g.opts.LookupEnv, vars)
	if err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	s.addExpandedURL(u)
	origin, err := url.Parse(u)
	if err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	h := http.Header{}
	for k, v := range s.cfg.Headers {
		v, err := settings.Expand(v, s.g.opts.LookupEnv, vars)
		if err != nil {
			return nil, fmt.Errorf("header %s: %w", k, err)
		}
		h.Set(k, v)
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	if origin.Scheme == "http" {
		if !peerOwnerKnown && len(h) > 0 {
			return nil, fmt.Errorf("%s is plain http, and this system cannot tell whose server listens on a loopback port: its headers are not sent there; use https, or a server without headers", s.cfg.URL)
		}
		base.DialContext = ownServerDial(s.cfg.URL)
	}
	client := &http.Client{
		Transport: headerTransport{base: base, header: h, origin: originOf(origin)},
		CheckRedirect: func(r *http.Request, via []*http.Request) error {
			if originOf(r.URL) != originOf(origin) {
				return fmt.Errorf("%s redirected to another origin (%s): refused, its headers are for %s only", s.cfg.URL, originOf(r.URL), s.cfg.URL)
			}
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			return nil
		},
	}
	return &sdk.StreamableClientTransport{Endpoint: u, HTTPClient: client}, nil
}

// addExpandedURL keeps u, the server's URL as one instance was given it,
// for redact.
func (s *server) addExpandedURL(u string) {
	s.urlsMu.Lock()
	defer s.urlsMu.Unlock()
	if s.urls == nil {
		s.urls = map[string]bool{}
	}
	s.urls[u] = true
}

// expandedURLs are the forms of the server's URL its instances were
// given, longest first (so that one that holds another is replaced
// whole).
func (s *server) expandedURLs() []string {
	s.urlsMu.Lock()
	defer s.urlsMu.Unlock()
	return slices.SortedFunc(maps.Keys(s.urls), func(a, b string) int { return len(b) - len(a) })
}

// originOf is u's scheme, host and port, the port spelled out.
func originOf(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// headerTransport adds the configured headers to each request to origin,
// and to no other.
type headerTransport struct {
	base   http.RoundTripper
	header http.Header
	origin string
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if originOf(r.URL) != t.origin {
		return nil, fmt.Errorf("a request to %s, not the server's origin %s: refused", originOf(r.URL), t.origin)
	}
	r = r.Clone(r.Context())
	for k, v := range t.header {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}

// ownServerDial dials like the default transport, then makes sure that
// the process at the other end runs as this user: on a loopback port,
// another local user's listener would otherwise get the server's headers
// and the agents' calls.
func ownServerDial(configured string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil || !peerOwnerKnown {
			return c, err
		}
		uid, err := peerOwner(c)
		if err == nil && uid == os.Getuid() {
			return c, nil
		}
		c.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: cannot tell whose server listens at %s (%v): refused, so that its headers and your agents' calls reach your own server only", configured, addr, err)
		}
		return nil, fmt.Errorf("%s: the server listening at %s runs as another user (uid %d), not as you: refused, so that its headers and your agents' calls reach your own server only (is yours running?)", configured, addr, uid)
	}
}
