package mcp

import (
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
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
// "Authorization: Bearer <token>" with the current token.
func checkToken(token *Token, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !token.Matches(bearer(r.Header.Get("Authorization"))) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="codehydra"`)
			http.Error(w, "Unauthorized: send Authorization: Bearer <token>; `codehydra mcp-config` prints a working configuration", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
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
