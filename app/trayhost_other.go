//go:build !linux && !windows

package app

import (
	"context"
	"runtime"
)

// xSocketDir is not looked at outside Linux.
const xSocketDir = ""

// noDisplay says why hasDisplay found none.
const noDisplay = "neither DISPLAY nor WAYLAND_DISPLAY is set"

// hasDisplay reports whether there is a display. macOS always has one for
// a logged-in user; on the BSDs it is an X11 or Wayland one.
func hasDisplay(getenv func(string) string, _ string) bool {
	if runtime.GOOS == "darwin" {
		return true
	}
	return getenv("DISPLAY") != "" || getenv("WAYLAND_DISPLAY") != ""
}

// hasTrayHost reports whether tray icons are seen. macOS always shows
// them; elsewhere outside Linux and Windows the app trusts the desktop to.
func hasTrayHost(context.Context, func(string) string) bool { return true }
