package sandbox

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Landlock before ABI 9 cannot refuse connecting to a unix socket by its
// path, and the session D-Bus, an ssh-agent and X11 listen on such
// sockets: through the D-Bus, `systemd-run --user` runs anything outside
// the sandbox. On such kernels the helper installs a seccomp filter that
// refuses to make a unix socket at all: socket(AF_UNIX, …) fails with
// EACCES. Socket pairs stay (node, bun and libuv give their children
// their stdio through them): a pair is connected to itself when it is
// made, and a stream or seqpacket one cannot be connected elsewhere.
// io_uring, which makes and connects sockets without the system calls
// the filter sees, answers ENOSYS, as where a kernel has it disabled.

// syscallABI is what the filter needs of one system call ABI the kernel
// may run a process's system calls with: its AUDIT_ARCH value
// (seccomp_data.arch) and its numbers. Every ABI here is little-endian:
// the low 32 bits of an argument are at its offset.
type syscallABI struct {
	audit  uint32
	socket uint32
	// socketcall is the multiplexer of the 32-bit ABIs (0: none): its
	// first argument is the call (SYS_SOCKET = 1), the family is behind
	// a pointer the filter cannot read, so every socket it would make is
	// refused.
	socketcall uint32
	// x32 marks x86-64, whose x32 system calls (numbers with bit 30 set)
	// come with the same arch value: all refused.
	x32 bool
}

// filterABIs are, for each GOARCH the filter is built for, the native
// ABI first and the 32-bit one the kernel also runs (int 0x80 on
// x86-64, AArch32 on arm64). On another GOARCH no filter is installed
// and the status says what stays open.
var filterABIs = map[string][]syscallABI{
	"amd64": {
		{audit: unix.AUDIT_ARCH_X86_64, socket: 41, x32: true},
		{audit: unix.AUDIT_ARCH_I386, socket: 359, socketcall: 102},
	},
	"arm64": {
		{audit: unix.AUDIT_ARCH_AARCH64, socket: 198},
		{audit: unix.AUDIT_ARCH_ARM, socket: 281, socketcall: 102},
	},
}

// ioUring are io_uring_setup, io_uring_enter and io_uring_register, the
// same numbers in every ABI above.
var ioUring = []uint32{425, 426, 427}

// Offsets in struct seccomp_data.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16 // its low 32 bits, on a little-endian ABI
)

const (
	sysSocketcallSocket = 1 // socketcall's SYS_SOCKET
	x32Bit              = 0x40000000
	retAllow            = unix.SECCOMP_RET_ALLOW
	retEACCES           = unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)
	retENOSYS           = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
)

// socketFilter is the program for abis (native first): it checks the
// arch, then the call; a system call of an ABI it does not know answers
// ENOSYS.
func socketFilter(abis []syscallABI) []bpf.Instruction {
	p := []bpf.Instruction{bpf.LoadAbsolute{Off: offArch, Size: 4}}
	for _, a := range abis {
		// Each block ends in a return, so the arch is still loaded for
		// the next test when it is skipped.
		p = append(p, when(a.audit, a.block())...)
	}
	return append(p, ret(retENOSYS))
}

// block is the filter for the system calls of a.
func (a syscallABI) block() []bpf.Instruction {
	p := []bpf.Instruction{bpf.LoadAbsolute{Off: offNr, Size: 4}}
	if a.x32 {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpLessThan, Val: x32Bit, SkipTrue: 1}, ret(retENOSYS))
	}
	// The family is an int: the kernel reads only its low 32 bits.
	p = append(p, when(a.socket, slices.Concat(loadArg0, returnIf(unix.AF_UNIX, retEACCES), allow))...)
	if a.socketcall != 0 {
		p = append(p, when(a.socketcall, slices.Concat(loadArg0, returnIf(sysSocketcallSocket, retEACCES), allow))...)
	}
	for _, nr := range ioUring {
		p = append(p, returnIf(nr, retENOSYS)...)
	}
	return append(p, allow...)
}

var (
	loadArg0 = []bpf.Instruction{bpf.LoadAbsolute{Off: offArg0, Size: 4}}
	allow    = []bpf.Instruction{ret(retAllow)}
)

func ret(v uint32) bpf.Instruction { return bpf.RetConstant{Val: v} }

// returnIf returns r when the loaded value is k.
func returnIf(k, r uint32) []bpf.Instruction {
	return []bpf.Instruction{bpf.JumpIf{Cond: bpf.JumpEqual, Val: k, SkipFalse: 1}, ret(r)}
}

// when runs block (which must end in a return on every path) when the
// loaded value is k, and skips it otherwise.
func when(k uint32, block []bpf.Instruction) []bpf.Instruction {
	if len(block) > 255 {
		panic("seccomp block too long for a jump")
	}
	return append([]bpf.Instruction{bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: k, SkipTrue: uint8(len(block))}}, block...)
}

// assemble turns a program into what the kernel takes.
func assemble(p []bpf.Instruction) ([]unix.SockFilter, error) {
	raw, err := bpf.Assemble(p)
	if err != nil {
		return nil, fmt.Errorf("assemble the unix socket filter: %w", err)
	}
	prog := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		prog[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return prog, nil
}

// socketFilterABIs are the ABIs of this GOARCH's filter; nil where none
// is built.
func socketFilterABIs() []syscallABI { return filterABIs[runtime.GOARCH] }

// canFilterSockets reports whether this system can install the filter:
// its GOARCH has one, and the kernel has seccomp filters that return an
// errno.
func canFilterSockets() bool {
	if socketFilterABIs() == nil {
		return false
	}
	action := uint32(unix.SECCOMP_RET_ERRNO)
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
	runtime.KeepAlive(&action)
	return errno == 0
}

// filterSockets installs the filter on the calling thread, which keeps
// it across the exec, as does every process it starts. no_new_privs must
// be set already.
func filterSockets() error {
	abis := socketFilterABIs()
	if abis == nil {
		return errors.New("no unix socket filter for " + runtime.GOARCH)
	}
	prog, err := assemble(socketFilter(abis))
	if err != nil {
		return err
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	err = unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0)
	runtime.KeepAlive(&fprog)
	runtime.KeepAlive(prog)
	if err != nil {
		return fmt.Errorf("install the unix socket filter: %w", err)
	}
	return nil
}
