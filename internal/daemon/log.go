package daemon

import (
	"fmt"
	"log/slog"

	"codehydra/internal/paths"
	"codehydra/internal/rotate"
	"codehydra/internal/tty"
)

// The log of a run: codehydra.log, and the terminal when there is one.

// openLog sends the log to paths.LogFile(), which rotates by size while
// running (settings logMaxMB), and also to stderr for serve or when stderr
// is a terminal. The token is never logged.
func (s *server) openLog() error {
	var handlers []slog.Handler
	if !s.opts.GUI || tty.IsTerminal(s.opts.Stderr) {
		handlers = append(handlers, slog.NewTextHandler(s.opts.Stderr, nil))
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
