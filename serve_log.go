package main

import (
	"fmt"
	"log/slog"
	"os"

	"codehydra/internal/paths"
	"codehydra/internal/rotate"
)

// The log of a run: codehydra.log, and the terminal when there is one.

// openLog sends the log to paths.LogFile(), which rotates by size while
// running (settings logMaxMB), and also to stderr for serve or when stderr
// is a terminal. The token is never logged.
func (s *server) openLog() error {
	var handlers []slog.Handler
	if !s.opts.gui || isTerminal(s.cli.stderr) {
		handlers = append(handlers, slog.NewTextHandler(s.cli.stderr, nil))
	}
	// slog's handler writes each record with one Write, which the rotating
	// file never splits.
	f, err := rotate.Open(paths.LogFile(), rotate.Options{MaxBytes: s.settings.Get().LogMaxBytes()})
	if err == nil {
		s.logFile = f
		handlers = append(handlers, slog.NewTextHandler(f, nil))
	} else {
		err = fmt.Errorf("open log: %w", err)
	}
	s.log = slog.New(slog.NewMultiHandler(handlers...))
	return err
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
