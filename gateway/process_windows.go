package gateway

import (
	"syscall"

	"golang.org/x/sys/windows"
)

// sysProcAttr starts a server without a console window of its own (npx and
// .cmd servers would otherwise open one). That it dies with CodeHydra is
// childjob's work.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_NO_WINDOW, HideWindow: true}
}

// killGroup does nothing: CommandTransport's Close ends the server itself,
// and what it started ends with CodeHydra's job.
func killGroup(int) {}
