// Package tty says whether a stream is a terminal.
package tty

import "os"

// IsTerminal reports whether w is a character device such as a terminal.
func IsTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
