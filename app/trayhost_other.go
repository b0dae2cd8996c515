//go:build !linux

package app

import (
	"context"
	"runtime"
)

// xSocketDir is not looked at outside Linux.
const xSocketDir = ""

// hasDisplay reports whether there is a display. Windows and macOS always
// have one for a logged-in user; on the BSDs it is an X11 or Wayland one.
func hasDisplay(getenv func(string) string, _ string) bool {
	switch runtime.GOOS {
	case "windows", "darwin":
		return true
	}
	return getenv("DISPLAY") != "" || getenv("WAYLAND_DISPLAY") != ""
}

// hasTrayHost reports whether tray icons are seen. Windows and macOS always
// show them; elsewhere outside Linux the app trusts the desktop to.
func hasTrayHost(context.Context, func(string) string) bool { return true }
