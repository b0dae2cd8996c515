package sandbox

import (
	"encoding/binary"
	"fmt"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// TestTheUnixSocketFilterRefusesUnixSocketsInEveryABIAndNothingElse runs
// the filter of each GOARCH, as the kernel gets it, in a BPF machine:
// arm64's is checked here too, whatever this machine is.
func TestTheUnixSocketFilterRefusesUnixSocketsInEveryABIAndNothingElse(t *testing.T) {
	type call struct {
		name string
		arch uint32
		nr   uint32
		arg0 uint64
		want uint32
	}
	const (
		read0                   = 0 // read on x86-64, io_setup on arm64: either way a call the filter lets through
		sysSocketcallConnect    = 3
		sysSocketcallSocketpair = 8
	)
	// Each ABI's socketpair, which must stay allowed.
	socketpair := map[uint32]uint32{unix.AUDIT_ARCH_X86_64: 53, unix.AUDIT_ARCH_I386: 360, unix.AUDIT_ARCH_AARCH64: 199, unix.AUDIT_ARCH_ARM: 288}
	for goarch, abis := range filterABIs {
		t.Run(goarch, func(t *testing.T) {
			prog, err := assemble(socketFilter(abis))
			if err != nil {
				t.Fatal(err)
			}
			if len(prog) > unix.BPF_MAXINSNS {
				t.Fatalf("%d instructions, more than the kernel takes", len(prog))
			}
			// Back from what the kernel gets, so that the jumps are
			// checked as assembled.
			ins := make([]bpf.Instruction, len(prog))
			for i, f := range prog {
				ins[i] = bpf.RawInstruction{Op: f.Code, Jt: f.Jt, Jf: f.Jf, K: f.K}.Disassemble()
			}
			vm, err := bpf.NewVM(ins)
			if err != nil {
				t.Fatal(err)
			}
			var calls []call
			for _, a := range abis {
				n := fmt.Sprintf("arch %#x", a.audit)
				calls = append(calls,
					call{n + " socket(AF_UNIX)", a.audit, a.socket, unix.AF_UNIX, retEACCES},
					call{n + " socket(AF_UNIX) with high bits the kernel drops", a.audit, a.socket, 1<<32 | unix.AF_UNIX, retEACCES},
					call{n + " socket(AF_INET)", a.audit, a.socket, unix.AF_INET, retAllow},
					call{n + " socket(AF_INET6)", a.audit, a.socket, unix.AF_INET6, retAllow},
					call{n + " socket(AF_NETLINK)", a.audit, a.socket, unix.AF_NETLINK, retAllow},
					call{n + " socketpair(AF_UNIX)", a.audit, socketpair[a.audit], unix.AF_UNIX, retAllow},
					call{n + " a plain call", a.audit, read0, unix.AF_UNIX, retAllow},
				)
				for _, nr := range ioUring {
					calls = append(calls, call{fmt.Sprintf("%s io_uring %d", n, nr), a.audit, nr, 0, retENOSYS})
				}
				if a.socketcall != 0 {
					calls = append(calls,
						call{n + " socketcall(SYS_SOCKET)", a.audit, a.socketcall, sysSocketcallSocket, retEACCES},
						call{n + " socketcall(SYS_SOCKETPAIR)", a.audit, a.socketcall, sysSocketcallSocketpair, retAllow},
						call{n + " socketcall(SYS_CONNECT)", a.audit, a.socketcall, sysSocketcallConnect, retAllow},
					)
				}
				if a.x32 {
					calls = append(calls,
						call{n + " x32 socket(AF_UNIX)", a.audit, x32Bit | a.socket, unix.AF_UNIX, retENOSYS},
						call{n + " x32 read", a.audit, x32Bit | read0, 0, retENOSYS},
					)
				}
			}
			calls = append(calls, call{"an arch the filter does not know", unix.AUDIT_ARCH_PPC64LE, 41, unix.AF_UNIX, retENOSYS})
			for _, c := range calls {
				// struct seccomp_data as a little-endian kernel lays it
				// out, written word by word in the order the machine
				// loads them.
				data := make([]byte, 64)
				binary.BigEndian.PutUint32(data[offNr:], c.nr)
				binary.BigEndian.PutUint32(data[offArch:], c.arch)
				binary.BigEndian.PutUint32(data[offArg0:], uint32(c.arg0))
				binary.BigEndian.PutUint32(data[offArg0+4:], uint32(c.arg0>>32))
				got, err := vm.Run(data)
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				if uint32(got) != c.want {
					t.Errorf("%s = %#x, want %#x", c.name, got, c.want)
				}
			}
		})
	}
}
