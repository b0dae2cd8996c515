package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// The Landlock rights of each Access, for folders; fileRights masks them
// for a rule on a file.
const (
	readRights = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir
	// writeRights are all but making device nodes.
	// Connecting to a unix socket (resolve_unix, ABI 9) is in none of
	// them: a socket made inside the domain is reachable without it, and
	// one made outside (the session D-Bus, an ssh-agent, X11, a daemon's
	// socket left in a cache) is only with Policy.UnixSockets.
	writeRights = readRights | ll.AccessFSWriteFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile |
		ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeSym |
		ll.AccessFSRefer | ll.AccessFSTruncate
	// gitRights leave out refer as well: a folder moved in from elsewhere
	// would bring its links along. git renames within a folder only (lock
	// files, objects made beside their final name), which needs no refer.
	gitRights    = writeRights &^ (ll.AccessFSMakeSym | ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSRefer)
	deviceRights = ll.AccessFSReadFile | ll.AccessFSReadDir | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev
	fileRights   = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev |
		ll.AccessFSResolveUnix
)

// rights are the Landlock rights of a grant of a on a folder (dir) or a
// file; with unixSockets, connecting to the sockets in it as well.
func rights(a Access, dir, unixSockets bool) landlock.AccessFSSet {
	var r uint64
	switch a {
	case Read:
		r = readRights
	case Write:
		r = writeRights
	case Device:
		r = deviceRights
	case GitWrite:
		r = gitRights
	}
	if unixSockets {
		r |= ll.AccessFSResolveUnix
	}
	if !dir {
		r &= fileRights
	}
	return landlock.AccessFSSet(r)
}

// config handles every file system right and both scopes (signals and
// abstract unix sockets) that go-landlock knows, in best effort: what the
// kernel lacks is left out. The network is not handled: agents use it.
func config() landlock.Config {
	newest := landlock.V11
	return landlock.Config{HandledAccessFS: newest.HandledAccessFS, Scoped: newest.Scoped}.BestEffort()
}

// Probe says whether this system can confine processes, and with which
// Landlock ABI; and, for a policy that does not allow unix sockets (see
// Status.WithUnixSockets for one that does), whether the unix socket
// filter is needed (before ABI 9) and can be had.
func Probe() Status {
	v, err := ll.LandlockGetABIVersion()
	switch {
	case err != nil:
		return Status{Reason: "not confined: this kernel has no Landlock (" + err.Error() + ")"}
	case v < 1:
		return Status{Reason: "not confined: Landlock is disabled in this kernel"}
	case v < 2:
		// go-landlock gives up entirely on a rule with "refer" without
		// ABI 2; the rules need it so that renames in the workspace work.
		return Status{ABI: v, Reason: fmt.Sprintf("not confined: this kernel's Landlock ABI %d is too old (2 or newer is needed)", v)}
	}
	abi := min(v, 11)
	filter := abi < 9 && canFilterSockets()
	return Status{Enforced: true, ABI: abi, UnixSocketFilter: filter, Gaps: GapsOf(abi, filter, false)}
}

// enforce confines the calling thread (and what it execs) to p: the
// rules of Expand, the scopes, no new privileges, where the thread has
// capabilities (root) none of them, and before ABI 9 the unix socket
// filter, unless p allows unix sockets. The caller must hold the thread
// (runtime.LockOSThread) until it execs, and exec from it.
func enforce(p Policy) (Status, error) {
	st := Probe()
	if !st.Enforced {
		return st, errors.New(st.Reason)
	}
	if p.UnixSockets {
		st = st.WithUnixSockets()
	}
	rules, err := Expand(p)
	if err != nil {
		return Status{}, err
	}
	fd, flags, err := config().NewRulesetFD()
	if err != nil {
		return Status{}, fmt.Errorf("build the Landlock rules: %w", err)
	}
	if fd < 0 {
		return Status{}, errors.New("the kernel's Landlock cannot enforce these rules")
	}
	defer unix.Close(fd)
	for _, r := range rules {
		if err := addRule(fd, r, p.UnixSockets, handledFS(st.ABI)); err != nil {
			return Status{}, err
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return Status{}, fmt.Errorf("set no_new_privs: %w", err)
	}
	if err := dropCapabilities(); err != nil {
		return Status{}, err
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return Status{}, fmt.Errorf("enforce the Landlock rules: %w", err)
	}
	if st.UnixSocketFilter {
		if err := filterSockets(); err != nil {
			return Status{}, err
		}
	}
	return st, nil
}

// handledFS is the file system rights that config handles under ABI abi
// (go-landlock's best effort leaves out what the kernel lacks); a rule
// may name no other.
func handledFS(abi int) uint64 {
	bits := 0
	switch {
	case abi >= 9:
		bits = 17
	case abi >= 5:
		bits = 16
	case abi >= 3:
		bits = 15
	case abi >= 2:
		bits = 14
	default:
		bits = 13
	}
	return uint64(config().HandledAccessFS) & (1<<bits - 1)
}

// addRule adds r to the ruleset fd. The path is opened without following
// any symbolic link, anywhere in it: the rules' paths were resolved when
// the policy was made, so a link there now was put in since (by a process
// of an earlier sandbox, or another user in /tmp), and must not steer a
// grant to where it leads. Such a path, and one that is gone, is left out.
func addRule(rulesetFD int, r Rule, unixSockets bool, handled uint64) error {
	pfd, err := unix.Openat2(unix.AT_FDCWD, r.Path, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s for a Landlock rule: %w", r.Path, err)
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return fmt.Errorf("stat %s for a Landlock rule: %w", r.Path, err)
	}
	dir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	access := uint64(rights(r.Access, dir, unixSockets)) & handled
	if access == 0 {
		return nil
	}
	attr := ll.PathBeneathAttr{ParentFd: pfd, AllowedAccess: access}
	if err := ll.LandlockAddPathBeneathRule(rulesetFD, &attr, 0); err != nil {
		return fmt.Errorf("add the Landlock rule for %s: %w", r.Path, err)
	}
	return nil
}

// dropCapabilities empties the thread's capability bounding set, so that
// what it execs has no capabilities even when it runs as root. Landlock
// does not stop a process with CAP_SYS_ADMIN or CAP_PERFMON from reading
// /proc/<pid>/environ of a process outside its domain (seen on Linux
// 6.18), and root's other capabilities would let it around file modes.
// Without CAP_SETPCAP (any unprivileged user) there is nothing to drop.
func dropCapabilities() error {
	var hdr = unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	// Clearing the ambient set needs no privilege.
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	if data[0].Effective&(1<<unix.CAP_SETPCAP) == 0 {
		return nil
	}
	last := unix.CAP_LAST_CAP
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("drop capability %d: %w", c, err)
		}
	}
	// The inheritable set too, so that no capability survives the exec
	// of a program with file capabilities.
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clear inheritable capabilities: %w", err)
	}
	return nil
}

// lockThread holds the goroutine on its thread for enforce and the exec
// that follows; it is never released, so a thread that failed half-way
// is not reused.
func lockThread() { runtime.LockOSThread() }
