//go:build !linux

package netstat

// Listening answers ErrNotSupported: only Linux tells this cheaply without
// running a program (lsof on macOS, GetExtendedTcpTable on Windows).
func Listening([]int) ([]Listener, error) { return nil, ErrNotSupported }

// ListeningMarked answers ErrNotSupported, as Listening does.
func ListeningMarked([]int, []string) ([]Listener, error) { return nil, ErrNotSupported }
