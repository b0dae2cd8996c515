package opencode

import (
	"net"
	"regexp"
	"strconv"
	"strings"
)

// ansiEscape matches terminal colour and cursor sequences, which opencode
// may wrap around its messages.
var ansiEscape = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)

// listeningPrefix starts opencode's own startup line; CodeHydra starts it
// with --hostname 127.0.0.1, so that is the only host it names.
const listeningPrefix = "opencode server listening on http://127.0.0.1:"

// ParseListeningLine reads the port from opencode's startup line
//
//	opencode server listening on http://127.0.0.1:4096
//
// and from nothing else: the whole line (colour codes and surrounding
// white space aside) must be that, with at most a trailing slash, and the
// port in 1..65535. A plugin's or a tool's line that merely mentions
// "listening on" must not choose the port the supervisor sends the
// agent's password to.
func ParseListeningLine(line string) (port int, ok bool) {
	line = strings.TrimSpace(ansiEscape.ReplaceAllString(line, ""))
	rest, found := strings.CutPrefix(line, listeningPrefix)
	if !found {
		return 0, false
	}
	rest = strings.TrimSuffix(rest, "/")
	if rest == "" || len(rest) > 5 || strings.TrimLeft(rest, "0123456789") != "" || rest[0] == '0' {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 1 || n > 65535 {
		return 0, false
	}
	return n, true
}

// portFree reports whether 127.0.0.1:port can be bound now. The answer may
// be stale by the time opencode binds, which is why a child that fails to
// bind is retried on the next port; opencode binds by itself, so there is
// no listener we could hand over instead.
func portFree(port int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// bindFailure reports whether an agent's output says that it could not
// bind its port. opencode 1.18.33 says only "Error: Unexpected error" and
// "ServeError" then; other versions and runtimes name EADDRINUSE.
func bindFailure(output []string) bool {
	for _, l := range output {
		l = strings.ToLower(l)
		if strings.Contains(l, "eaddrinuse") || strings.Contains(l, "address already in use") ||
			strings.Contains(l, "address in use") || strings.Contains(l, "serveerror") ||
			strings.Contains(l, "failed to start server") {
			return true
		}
	}
	return false
}

// reservePort picks the first port from BasePort on that no agent of ours
// holds, that is not in skip, and that can be bound now.
func (s *Supervisor) reservePort(skip map[int]bool) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := s.opts.BasePort; p <= 65535; p++ {
		if s.reserved[p] || skip[p] || !portFree(p) {
			continue
		}
		s.reserved[p] = true
		return p, true
	}
	return 0, false
}

func (s *Supervisor) releasePort(p int) {
	if p == 0 {
		return
	}
	s.mu.Lock()
	delete(s.reserved, p)
	s.mu.Unlock()
}
