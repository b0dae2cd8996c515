package proc

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// tree is a job object that holds the started process and, from their
// start, the processes it starts. Ending the job ends them all; closing
// its last handle (when CodeHydra exits, however it exits) ends them too.
// mu keeps a kill from using the handle once release closed it (the
// system may give its value to another job by then).
type tree struct {
	mu  *sync.Mutex
	job windows.Handle
	// released is set by release, under mu.
	released *bool
}

func newTree(p *os.Process, _ string) (tree, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return tree{}, fmt.Errorf("create job object: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
		},
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return tree{}, fmt.Errorf("set up job object: %w", err)
	}
	// The pid is p's until p is waited for: os.Process holds a handle to
	// it. A child p started in the instant between its own start and this
	// escapes the job; the programs started here start none that early.
	ph, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(p.Pid))
	if err != nil {
		windows.CloseHandle(job)
		return tree{}, fmt.Errorf("open process %d for its job: %w", p.Pid, err)
	}
	defer windows.CloseHandle(ph)
	if err := windows.AssignProcessToJobObject(job, ph); err != nil {
		windows.CloseHandle(job)
		return tree{}, fmt.Errorf("put process %d in a job: %w", p.Pid, err)
	}
	return tree{mu: &sync.Mutex{}, job: job, released: new(bool)}, nil
}

// terminate ends the tree: console-less processes have no gentler
// request to end.
func (t tree) terminate() { t.kill() }

func (t tree) kill() {
	if t.mu == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !*t.released {
		_ = windows.TerminateJobObject(t.job, 1)
	}
}

// killGroup is kill: the job holds what the process started.
func (t tree) killGroup() { t.kill() }

func (t tree) release() {
	if t.mu == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !*t.released {
		*t.released = true
		windows.CloseHandle(t.job)
	}
}

// killPid kills a process that has no tree yet.
func killPid(p *os.Process) { _ = p.Kill() }

// sysProcAttr starts the process in a new process group and without a
// console window of its own (CodeHydra is a tray app; a .cmd's cmd.exe
// would otherwise open one).
func sysProcAttr(bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP | windows.CREATE_NO_WINDOW,
		HideWindow:    true,
	}
}

// selfExe is this process's own binary.
func selfExe() string {
	exe, err := os.Executable()
	if err != nil {
		return os.Args[0]
	}
	return exe
}

// EndWithThisProcess puts p, started outside this package, in a job of its
// own that ends it and all it starts when this process ends (the job's
// last handle, this process's, closes): the core program's hand-over to
// the GUI program, which must run in the user's console and so cannot be
// started by Start.
func EndWithThisProcess(p *os.Process) error {
	_, err := newTree(p, "")
	return err
}
