//go:build !unix

package reap

import "errors"

// CommandLine is not available without extra APIs.
func CommandLine(int) (string, error) {
	return "", errors.New("command lines are not readable here")
}
