//go:build !windows

package childjob

import "os"

// Contain does nothing outside Windows; see the package comment.
func Contain(*os.Process) error { return nil }
