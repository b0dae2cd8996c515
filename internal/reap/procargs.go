package reap

import (
	"bytes"
	"encoding/binary"
)

// procArgsEnviron returns the environment held in a KERN_PROCARGS2 buffer
// (macOS's view of another process's arguments): a 32-bit argc, the
// executable's path, NUL padding, argc arguments and then the environment,
// each NUL-terminated. A buffer that does not have that shape yields none,
// so that a process whose environment cannot be read is never taken for
// one that carries a marker. It is here, not in the darwin file, so that
// it is tested everywhere.
func procArgsEnviron(buf []byte) []string {
	if len(buf) < 4 {
		return nil
	}
	argc := int(binary.LittleEndian.Uint32(buf))
	rest := buf[4:]
	i := bytes.IndexByte(rest, 0) // end of the executable's path
	if i < 0 {
		return nil
	}
	rest = rest[i:]
	for len(rest) > 0 && rest[0] == 0 {
		rest = rest[1:]
	}
	fields := bytes.Split(rest, []byte{0})
	if argc < 0 || argc >= len(fields) {
		return nil
	}
	var env []string
	for _, f := range fields[argc:] {
		if len(f) == 0 {
			break
		}
		env = append(env, string(f))
	}
	return env
}
