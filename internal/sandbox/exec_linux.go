package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Supported reports whether this system has a sandbox at all (Linux:
// Landlock; see Probe for this kernel).
const Supported = true

// confineAndExec enforces p on this thread, reports the status on report
// and execs program with argv from the same thread. It returns only on
// failure; the status then says whether p was enforced by then.
func confineAndExec(p Policy, program string, argv []string, report *os.File) (Status, error) {
	lockThread()
	st, err := enforce(p)
	if err != nil {
		return Status{}, err
	}
	if report != nil {
		// The program must not inherit the pipe: the parent reads it
		// until it closes, which the exec does.
		unix.CloseOnExec(int(report.Fd()))
		if err := json.NewEncoder(report).Encode(outcome{Status: &st}); err != nil {
			return st, fmt.Errorf("report the sandbox status: %w", err)
		}
	}
	err = syscall.Exec(program, argv, os.Environ())
	return st, fmt.Errorf("start %s: %w", program, err)
}
