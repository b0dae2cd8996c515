package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"codehydra/internal/paths"
)

// The log of a run: codehydra.log, and the terminal when there is one.

// maxLogSize is the size above which the log is moved to codehydra.log.1 at
// startup.
const maxLogSize = 10 << 20

// openLog sends the log to paths.LogFile(), and also to stderr for serve or
// when stderr is a terminal. The token is never logged.
func (s *server) openLog() error {
	var handlers []slog.Handler
	if !s.opts.gui || isTerminal(s.cli.stderr) {
		handlers = append(handlers, slog.NewTextHandler(s.cli.stderr, nil))
	}
	f, err := openLogFile(paths.LogFile())
	if err == nil {
		s.logFile = f
		handlers = append(handlers, slog.NewTextHandler(f, nil))
	}
	s.log = slog.New(slog.NewMultiHandler(handlers...))
	return err
}

// openLogFile opens path for appending (0600 in a 0700 folder), first
// moving a large log to path.1.
func openLogFile(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create log folder: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Size() > maxLogSize {
		_ = os.Rename(path, path+".1")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	return f, nil
}

// isTerminal reports whether w is a character device such as a terminal.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
