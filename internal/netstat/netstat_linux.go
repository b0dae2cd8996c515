package netstat

import (
	"fmt"
	"net"
	"os"
	"strings"
)

// Socket is one line of /proc/net/tcp or tcp6, its fields as the kernel
// spells them.
type Socket struct {
	// Local and Remote are "ADDR:PORT" in hex: each 32-bit word of the
	// address in the machine's byte order (see Addrs).
	Local, Remote string
	// State is the TCP state in hex: "0A" listening, "01" established,
	// "03" SYN_RECV.
	State string
	// UID is the owner's user id; Inode the socket's inode.
	UID, Inode string
}

// Sockets reads the tables at paths ("/proc/net/tcp", "/proc/net/tcp6");
// a table that cannot be read is left out, an error only when none can.
func Sockets(paths ...string) ([]Socket, error) {
	var out []Socket
	var lastErr error
	read := 0
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			lastErr = err
			continue
		}
		read++
		for _, line := range strings.Split(string(b), "\n")[1:] {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			f := strings.Fields(line)
			if len(f) > 9 {
				out = append(out, Socket{Local: f[1], Remote: f[2], State: f[3], UID: f[7], Inode: f[9]})
			}
		}
	}
	if read == 0 && lastErr != nil {
		return nil, lastErr
	}
	return out, nil
}

// Addrs are the spellings of ip:port in the tables: an IPv4 address in
// tcp, and mapped into IPv6 in tcp6 (as a dual-stack socket shows it);
// an IPv6 one in tcp6.
func Addrs(ip net.IP, port int) []string {
	suffix := fmt.Sprintf(":%04X", port)
	var out []string
	if v4 := ip.To4(); v4 != nil {
		out = append(out, words(v4)+suffix)
	}
	if v6 := ip.To16(); v6 != nil {
		out = append(out, words(v6)+suffix)
	}
	return out
}

// words spells b (4 or 16 bytes) as the tables do: each 32-bit word in
// the machine's order.
func words(b []byte) string {
	var sb strings.Builder
	for i := 0; i+4 <= len(b); i += 4 {
		w := b[i : i+4]
		if littleEndian {
			fmt.Fprintf(&sb, "%02X%02X%02X%02X", w[3], w[2], w[1], w[0])
		} else {
			fmt.Fprintf(&sb, "%02X%02X%02X%02X", w[0], w[1], w[2], w[3])
		}
	}
	return sb.String()
}
