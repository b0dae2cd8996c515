package app

import (
	"context"
	"runtime"
	"syscall"
	"unsafe"
)

// xSocketDir is not looked at on Windows.
const xSocketDir = ""

// noDisplay says why hasDisplay found none.
const noDisplay = "this session cannot show windows (a service's or a remote shell's session, or wine without X)"

var (
	user32                    = syscall.NewLazyDLL("user32.dll")
	getProcessWindowStation   = user32.NewProc("GetProcessWindowStation")
	getUserObjectInformationW = user32.NewProc("GetUserObjectInformationW")
	createWindowExW           = user32.NewProc("CreateWindowExW")
	destroyWindow             = user32.NewProc("DestroyWindow")
	staticClass, _            = syscall.UTF16PtrFromString("STATIC")
)

const (
	uoiFlags   uintptr = 1 // UOI_FLAGS
	wsfVisible uint32  = 1 // WSF_VISIBLE
)

// hasDisplay reports whether this process can show windows: its window
// station is the interactive one (not a service's) and a window can be
// made in it, which is what GLFW does first (its helper window); where it
// cannot, Fyne's start panics ("GLFW not initialized") instead of the app
// running headless.
func hasDisplay(func(string) string, string) bool {
	ws, _, _ := getProcessWindowStation.Call()
	if ws == 0 {
		return false
	}
	var flags struct {
		inherit, reserved int32
		flags             uint32
	}
	var n uint32
	if ok, _, _ := getUserObjectInformationW.Call(ws, uoiFlags, uintptr(unsafe.Pointer(&flags)), unsafe.Sizeof(flags), uintptr(unsafe.Pointer(&n))); ok != 0 && flags.flags&wsfVisible == 0 {
		return false
	}
	// A hidden 1×1 window of a system class, made and gone on this
	// thread (a window is destroyed only on the thread that made it).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	w, _, _ := createWindowExW.Call(0, uintptr(unsafe.Pointer(staticClass)), 0, 0, 0, 0, 1, 1, 0, 0, 0, 0)
	if w == 0 {
		return false
	}
	destroyWindow.Call(w)
	return true
}

// hasTrayHost reports whether tray icons are seen: Windows always shows them.
func hasTrayHost(context.Context, func(string) string) bool { return true }
