package opencode

import (
	"net"
	"strings"
	"testing"
)

func TestParseListeningLine(t *testing.T) {
	tests := []struct {
		line string
		port int
		ok   bool
	}{
		{"opencode server listening on http://127.0.0.1:4096", 4096, true},
		{"opencode server listening on http://127.0.0.1:39123/", 39123, true},
		{"  opencode server listening on http://127.0.0.1:1\r", 1, true},
		{"\x1b[32mopencode server listening on http://127.0.0.1:5000\x1b[0m", 5000, true},
		// Anything else, however alike, is not opencode's own line: a
		// plugin or a tool printing it must not pick the agent's port.
		{"opencode server listening on http://localhost:8080 (press ctrl-c)", 0, false},
		{"opencode server listening on http://127.0.0.1:8080 (press ctrl-c)", 0, false},
		{"opencode server listening on http://[::1]:7000", 0, false},
		{"opencode server listening on 127.0.0.1:7001", 0, false},
		{"my-plugin: opencode server listening on http://127.0.0.1:9999", 0, false},
		{"plugin server listening on http://127.0.0.1:9999", 0, false},
		{"opencode server listening on http://127.0.0.2:9999", 0, false},
		{"opencode server listening on http://127.0.0.1:9999/evil", 0, false},
		{"opencode server listening on http://127.0.0.1:09999", 0, false},
		{"opencode server listening on http://127.0.0.1:+999", 0, false},
		{"Warning: OPENCODE_SERVER_PASSWORD is not set; server is unsecured.", 0, false},
		{"opencode server listening on http://127.0.0.1", 0, false},
		{"opencode server listening on http://127.0.0.1:0", 0, false},
		{"opencode server listening on http://127.0.0.1:65536", 0, false},
		{"opencode server listening on http://127.0.0.1:-1", 0, false},
		{"opencode server listening on http://127.0.0.1:12ab", 0, false},
		{"opencode server listening on ftp://127.0.0.1:21", 0, false},
		{"opencode server listening on ", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		port, ok := ParseListeningLine(tt.line)
		if port != tt.port || ok != tt.ok {
			t.Errorf("ParseListeningLine(%q) = %d, %v; want %d, %v", tt.line, port, ok, tt.port, tt.ok)
		}
	}
}

func FuzzParseListeningLine(f *testing.F) {
	f.Add("opencode server listening on http://127.0.0.1:4096")
	f.Add("listening on http://[::1]:1")
	f.Add("listening on %zz:99")
	f.Fuzz(func(t *testing.T, line string) {
		port, ok := ParseListeningLine(line)
		if ok != (port != 0) || port < 0 || port > 65535 {
			t.Fatalf("ParseListeningLine(%q) = %d, %v", line, port, ok)
		}
		if ok && !strings.Contains(line, listeningPrefix) {
			t.Fatalf("accepted a line that is not opencode's listening line: %q", line)
		}
	})
}

func TestPortFreeSeesATakenPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if portFree(port) {
		t.Errorf("portFree(%d) = true while listening", port)
	}
	ln.Close()
	if !portFree(port) {
		t.Errorf("portFree(%d) = false after closing", port)
	}
}

func TestBindFailureRecognisesOpencodeMessages(t *testing.T) {
	tests := []struct {
		out  []string
		want bool
	}{
		{[]string{"\x1b[91m\x1b[1mError: \x1b[0mUnexpected error", "", "ServeError"}, true},
		{[]string{"error: listen EADDRINUSE: address already in use 127.0.0.1:4096"}, true},
		{[]string{"Failed to start server. Is port 4096 in use?"}, true},
		{[]string{"opencode server listening on http://127.0.0.1:4096"}, false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := bindFailure(tt.out); got != tt.want {
			t.Errorf("bindFailure(%q) = %v, want %v", tt.out, got, tt.want)
		}
	}
}
