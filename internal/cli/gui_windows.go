package cli

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"codehydra/internal/proc"
)

// handOver runs the program at path with args in this console and waits
// for it, since Windows cannot replace a running process with another; its
// exit code is this program's. The console's Ctrl+C (and its close) reach
// every process attached to it, so the GUI program gets its own and shuts
// down as on Ctrl+C; this program takes them too, so as not to exit
// before it. The GUI program runs in a job that ends it when this program
// ends, so that killing the app (Task Manager, a service's stop) ends
// the app, as it did when it was one process.
func handOver(path string, args []string) (int, error) {
	cmd := exec.Command(path, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	interrupts := make(chan os.Signal, 1)
	signal.Notify(interrupts, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(interrupts)
	if err := cmd.Start(); err != nil {
		return 1, err
	}
	if err := proc.EndWithThisProcess(cmd.Process); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return 1, err
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), nil
	}
	if err != nil {
		return 1, err
	}
	return 0, nil
}
