//go:build !unix

package cli

import "os"

// bridgeStdout is this process's stdout, for the bridge of a window
// process; only what Go code prints is kept out of it (runWindow).
func bridgeStdout() (*os.File, error) { return os.Stdout, nil }
