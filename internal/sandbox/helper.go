package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// HelperCommand is the hidden command of CodeHydra's binary (and of the
// test binaries that start confined processes) that applies a policy to
// itself and then execs the program to confine: argv is
// <self> HelperCommand -- <program> <argv0> <args...>, the policy comes in
// PolicyEnv and the outcome goes out on file descriptor 3 (see
// ReadOutcome).
const HelperCommand = "sandbox-exec"

// PolicyEnv carries the policy, as JSON, to the helper; the helper takes
// it out of the environment before it execs.
const PolicyEnv = "CODEHYDRA_SANDBOX_POLICY"

// outcome is one line the helper writes on its status pipe.
type outcome struct {
	Status *Status `json:"status,omitempty"`
	Error  string  `json:"error,omitempty"`
}

// HelperArgs returns the arguments (after the binary's own name) of a
// helper that runs program (looked up already) with argv (argv[0]
// included) under p, and the variable to add to its environment.
func HelperArgs(program string, argv []string, p Policy) (args []string, env string, err error) {
	if err := p.Check(); err != nil {
		return nil, "", fmt.Errorf("sandbox policy: %w", err)
	}
	if len(argv) == 0 {
		return nil, "", errors.New("sandbox: no argv")
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, "", err
	}
	return append([]string{HelperCommand, "--", program}, argv...), PolicyEnv + "=" + string(b), nil
}

// RunHelperIfAsked runs the helper and does not return when the process
// was started as one (its first argument is HelperCommand). Call it first
// thing in main, and in TestMain of the packages whose tests start
// confined processes.
func RunHelperIfAsked() {
	if len(os.Args) < 2 || os.Args[1] != HelperCommand {
		return
	}
	os.Exit(runHelper(os.Args[2:]))
}

// Exit codes of a helper that could not run its program.
const (
	exitNotConfined = 126
	exitNotStarted  = 127
)

func runHelper(args []string) int {
	report := os.NewFile(3, "sandbox-outcome")
	fail := func(code int, err error) int {
		msg := err.Error()
		if report != nil {
			_ = json.NewEncoder(report).Encode(outcome{Error: msg})
		}
		fmt.Fprintln(os.Stderr, "codehydra sandbox:", msg)
		return code
	}
	if len(args) < 3 || args[0] != "--" {
		return fail(2, errors.New("usage: "+HelperCommand+" -- <program> <argv0> [args...]"))
	}
	raw, ok := os.LookupEnv(PolicyEnv)
	if !ok {
		return fail(exitNotConfined, errors.New("no policy given"))
	}
	os.Unsetenv(PolicyEnv)
	var p Policy
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return fail(exitNotConfined, fmt.Errorf("read the policy: %w", err))
	}
	// It returns only when it failed.
	st, err := confineAndExec(p, args[1], args[2:], report)
	if st.Enforced {
		return fail(exitNotStarted, err)
	}
	return fail(exitNotConfined, err)
}

// ReadOutcome reads what a helper reported on its status pipe until the
// pipe closes (the helper exec'd its program, which does not inherit the
// pipe, or it exited): the status it enforced, or its error.
func ReadOutcome(r io.Reader) (Status, error) {
	var st *Status
	sc := bufio.NewScanner(io.LimitReader(r, 64<<10))
	for sc.Scan() {
		var o outcome
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			return Status{}, fmt.Errorf("sandbox helper said %q", strings.TrimSpace(sc.Text()))
		}
		if o.Error != "" {
			return Status{}, errors.New(o.Error)
		}
		st = o.Status
	}
	if st == nil {
		return Status{}, errors.New("the sandbox helper ended without saying what it enforced")
	}
	return *st, nil
}
