// Command fakeopencode imitates `opencode serve` for the supervisor's
// tests. Tests build it as a binary named "opencode" (so that orphan
// reaping recognises it) and steer it with environment variables:
//
//	FAKEOC_ENV_FILE      write {"env","cwd","args"} as JSON to this file at start
//	FAKEOC_STARTS_FILE   append one line per start (unix nanoseconds)
//	FAKEOC_MODE          "" (normal), "hang" (never listen), "exit" (exit 3 at
//	                     once), "crash-after=<duration>" (exit 4 that long
//	                     after GET /mcp first reported "connected"), "unhealthy", "slow=<duration>"
//	                     (wait before listening)
//	FAKEOC_EXIT_STARTS   exit 5 at once on the first N starts (counted in
//	                     FAKEOC_STARTS_FILE), behave normally afterwards
//	FAKEOC_FAIL_PORT     on this --port, fail like opencode 1.18 does when the
//	                     port is taken
//	FAKEOC_GRANDCHILD_PIDFILE  start a child that sleeps (in the same process
//	                     group, sharing stdout) and write its pid here
//	FAKEOC_UNMARKED_PIDFILE  start such a child without CODEHYDRA_AGENT_ID
//	                     in its environment (a process of the group that
//	                     does not carry the agent's marker) and write its pid
//	FAKEOC_ESCAPEE_PIDFILE  start such a child, with the marker, in a session
//	                     and group of its own (setsid; not on Windows)
//	FAKEOC_IGNORE_TERM   "1": ignore SIGTERM (so only SIGKILL ends it)
//	FAKEOC_HEARTBEAT     event stream heartbeat interval (default 10s)
//	FAKEOC_PRINT_FIRST   a line to print on stdout before its own listening
//	                     line (what a plugin might print)
//	FAKEOC_FAIL_SESSIONS answer 500 to the first N POST /session
//	FAKEOC_NO_MCP        "1": read no config, so have no codehydra MCP
//	                     server (an opencode that ignored what it was given)
//	FAKEOC_EVENTS        events applied (not broadcast) before it listens,
//	                     as a JSON array of {"type","properties"}: what an
//	                     earlier run left in opencode's storage
//
// Like opencode it reads the config file that OPENCODE_CONFIG names,
// replaces {env:NAME} references with the environment's values, and
// connects to the "codehydra" MCP server there (a real MCP initialize and
// tools/list over streamable HTTP, with the configured headers) once it
// listens; GET /mcp reports "connected" only if that worked, "failed" with
// the error otherwise, and POST /mcp/codehydra/connect connects again.
//
// Like opencode, when OPENCODE_SERVER_PASSWORD is set it answers 401 on
// every route of its API unless the request has HTTP basic auth
// (OPENCODE_SERVER_USERNAME, default "opencode", and that password) or
// ?auth_token=<base64("user:password")>.
//
// Besides opencode's GET /global/health, /mcp, /event, /session,
// /session/status, /permission, /question, /session/{id} and
// /session/{id}/message (the prompts it took, as user messages) and POST
// /mcp/codehydra/connect, /session and /session/{id}/prompt_async (taken,
// not run; it makes the session the one updated last), it serves test
// controls: POST /fake/emit (an
// event {"type","properties"} to apply to its state and broadcast;
// ?silent=1 applies it without broadcasting, like an event missed while
// disconnected; a session.status is kept as sent, so that a retry status
// {"type":"retry","attempt","message","next"} comes back whole from GET
// /session/status; session events keep their cost, tokens and time.updated
// for GET /session, assistant message.updated ones their info for GET
// /session/{id}/message), POST /fake/drop (close every event stream), GET
// /fake/clients (how many event streams are open), GET
// /fake/connect-requests (how many POST /mcp/codehydra/connect it got)
// and GET /fake/prompts (the prompts it took, in order:
// [{"session","text","agent"?,"model"?}]). Its sessions are those made by
// POST /session and by session.created or session.updated events (with
// their info.directory, by default its own folder).
package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if os.Getenv("FAKEOC_ROLE") == "grandchild" {
		signal.Ignore(syscall.SIGHUP)
		select {}
	}
	// run returns only on failure; a healthy fake serves until killed.
	err := run()
	fmt.Fprintln(os.Stderr, "fake opencode:", err)
	os.Exit(2)
}

func run() error {
	if os.Getenv("FAKEOC_IGNORE_TERM") == "1" {
		signal.Ignore(syscall.SIGTERM)
	}
	host, port, err := parseArgs(os.Args[1:])
	if err != nil {
		return err
	}
	entry, err := readMCPConfig()
	if err != nil {
		return err
	}
	if err := recordStart(); err != nil {
		return err
	}
	mode := os.Getenv("FAKEOC_MODE")
	// A first line, so that tests see that more than the last is kept.
	fmt.Println("fake opencode: starting")
	if os.Getenv("OPENCODE_SERVER_PASSWORD") == "" {
		fmt.Println("Warning: OPENCODE_SERVER_PASSWORD is not set; server is unsecured.")
	}
	if err := beforeListening(mode, port); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	st := newState()
	if st.dir, err = os.Getwd(); err != nil {
		return err
	}
	st.failSessions, _ = strconv.Atoi(os.Getenv("FAKEOC_FAIL_SESSIONS"))
	if err := st.applyAll(os.Getenv("FAKEOC_EVENTS")); err != nil {
		return err
	}
	if st.heartbeat, err = heartbeat(); err != nil {
		return err
	}
	st.healthy = mode != "unhealthy"
	st.mcp = &mcpLink{entry: entry, status: "pending", reported: make(chan struct{})}
	if entry != nil {
		go st.mcp.connect()
	}
	go func() { _ = http.Serve(ln, st.routes()) }()
	if first := os.Getenv("FAKEOC_PRINT_FIRST"); first != "" {
		fmt.Println(first)
	}
	fmt.Printf("opencode server listening on http://%s\n", ln.Addr())

	if d, ok := strings.CutPrefix(mode, "crash-after="); ok {
		dur, err := time.ParseDuration(d)
		if err != nil {
			return err
		}
		// Counted from the first GET /mcp that said "connected", when the
		// supervisor took the agent for ready, however slow the
		// connection was.
		<-st.mcp.reported
		time.Sleep(dur)
		// On stdout, as the listening line: one stream keeps their order
		// in the supervisor's copy of the output.
		fmt.Println("fake opencode: crashing on purpose")
		os.Exit(4)
	}
	select {}
}

// parseArgs reads `serve --hostname H --port P`.
func parseArgs(args []string) (host string, port int, err error) {
	port, host = -1, "127.0.0.1"
	if len(args) == 0 || args[0] != "serve" {
		return "", 0, fmt.Errorf("usage: opencode serve --hostname H --port P")
	}
	for i := 1; i+1 < len(args); i += 2 {
		switch args[i] {
		case "--port":
			if port, err = strconv.Atoi(args[i+1]); err != nil {
				return "", 0, fmt.Errorf("bad --port: %w", err)
			}
		case "--hostname":
			host = args[i+1]
		}
	}
	if port < 0 {
		return "", 0, fmt.Errorf("no --port")
	}
	return host, port, nil
}

// recordStart does what FAKEOC_ENV_FILE, FAKEOC_STARTS_FILE,
// FAKEOC_EXIT_STARTS and FAKEOC_GRANDCHILD_PIDFILE ask for at a start.
func recordStart() error {
	if f := os.Getenv("FAKEOC_ENV_FILE"); f != "" {
		wd, _ := os.Getwd()
		b, _ := json.Marshal(map[string]any{"env": os.Environ(), "cwd": wd, "args": os.Args})
		if err := os.WriteFile(f, b, 0o600); err != nil {
			return err
		}
	}
	starts := 0
	if f := os.Getenv("FAKEOC_STARTS_FILE"); f != "" {
		fh, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		fmt.Fprintln(fh, time.Now().UnixNano())
		fh.Close()
		b, _ := os.ReadFile(f)
		starts = strings.Count(string(b), "\n")
	}
	if n, _ := strconv.Atoi(os.Getenv("FAKEOC_EXIT_STARTS")); starts > 0 && starts <= n {
		fmt.Println("fake opencode: exiting at start", starts)
		os.Exit(5)
	}
	for _, child := range []struct {
		pidFile       string
		marked, leave bool
	}{{os.Getenv("FAKEOC_GRANDCHILD_PIDFILE"), true, false}, {os.Getenv("FAKEOC_UNMARKED_PIDFILE"), false, false},
		{os.Getenv("FAKEOC_ESCAPEE_PIDFILE"), true, true}} {
		if child.pidFile == "" {
			continue
		}
		self, err := os.Executable()
		if err != nil {
			return err
		}
		c := exec.Command(self)
		for _, kv := range os.Environ() {
			if child.marked || !strings.HasPrefix(kv, "CODEHYDRA_AGENT_ID=") {
				c.Env = append(c.Env, kv)
			}
		}
		c.Env = append(c.Env, "FAKEOC_ROLE=grandchild")
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		if child.leave {
			leaveGroup(c)
		}
		if err := c.Start(); err != nil {
			return err
		}
		if err := os.WriteFile(child.pidFile, []byte(strconv.Itoa(c.Process.Pid)), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// beforeListening plays the FAKEOC_MODE and FAKEOC_FAIL_PORT behaviours
// that keep the fake from listening.
func beforeListening(mode string, port int) error {
	switch {
	case mode == "hang":
		fmt.Println("fake opencode: hanging before listening")
		select {}
	case mode == "exit":
		fmt.Fprintln(os.Stderr, "fake opencode: failing at start")
		os.Exit(3)
	case strings.HasPrefix(mode, "slow="):
		d, err := time.ParseDuration(strings.TrimPrefix(mode, "slow="))
		if err != nil {
			return err
		}
		time.Sleep(d)
	}
	if fp := os.Getenv("FAKEOC_FAIL_PORT"); fp != "" && fp == strconv.Itoa(port) {
		// What opencode 1.18.33 prints when its port is taken.
		fmt.Fprint(os.Stderr, "\x1b[91m\x1b[1mError: \x1b[0mUnexpected error\n\nServeError\n")
		os.Exit(1)
	}
	return nil
}

// heartbeat is FAKEOC_HEARTBEAT, 10 s (opencode's) by default.
func heartbeat() (time.Duration, error) {
	v := os.Getenv("FAKEOC_HEARTBEAT")
	if v == "" {
		return 10 * time.Second, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("bad FAKEOC_HEARTBEAT: %w", err)
	}
	return d, nil
}
