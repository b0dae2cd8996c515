package childjob

import (
	"fmt"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/windows"
)

// job is the one job object of this process, made on first use. Its only
// handle is never closed: the system closes it when CodeHydra exits, and
// JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE then ends every process in the job,
// and with them their children, which are in the job from their start.
// It is process-wide state on purpose: the job must live exactly as long
// as the process.
var job = sync.OnceValues(func() (windows.Handle, error) {
	h, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, fmt.Errorf("create job object: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
		},
	}
	if _, err := windows.SetInformationJobObject(h, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(h)
		return 0, fmt.Errorf("set up job object: %w", err)
	}
	return h, nil
})

// Contain puts p in CodeHydra's job, so that it and the processes it starts
// from then on end when CodeHydra does. A child p started in the instant
// between its own start and Contain escapes the job; the programs started
// here (opencode, a .cmd's cmd.exe, npx) start none that early.
func Contain(p *os.Process) error {
	h, err := job()
	if err != nil {
		return err
	}
	// The pid is p's until p is waited for: os.Process holds a handle to
	// the process, and Windows gives no pid of a process with an open
	// handle to another.
	ph, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(p.Pid))
	if err != nil {
		return fmt.Errorf("open process %d for its job: %w", p.Pid, err)
	}
	defer windows.CloseHandle(ph)
	if err := windows.AssignProcessToJobObject(h, ph); err != nil {
		return fmt.Errorf("put process %d in CodeHydra's job: %w", p.Pid, err)
	}
	return nil
}

// Holds reports whether the live process pid is in CodeHydra's job: one
// CodeHydra started, or one of theirs, and not a stranger that was given
// the pid of one that ended.
func Holds(pid int) bool {
	h, err := job()
	if err != nil || pid <= 0 {
		return false
	}
	ph, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(ph)
	var in int32 // a Win32 BOOL
	r, _, _ := isProcessInJob.Call(uintptr(ph), uintptr(h), uintptr(unsafe.Pointer(&in)))
	return r != 0 && in != 0
}

// isProcessInJob is kernel32's IsProcessInJob, which x/sys/windows does not
// wrap.
var isProcessInJob = windows.NewLazySystemDLL("kernel32.dll").NewProc("IsProcessInJob")
