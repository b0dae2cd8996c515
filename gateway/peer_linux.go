package gateway

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// littleEndian says how this machine orders a word's bytes.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// peerOwnerKnown says that peerOwner can tell who runs the other end of
// a loopback connection here.
const peerOwnerKnown = true

// peerOwner is the uid of the socket at the other end of the TCP
// connection c, from /proc/net/tcp and tcp6: the entry whose local
// address is c's remote one and whose remote address is c's local one is
// the server's end of this very connection, and its uid column its
// owner.
func peerOwner(c net.Conn) (int, error) {
	local, ok1 := c.LocalAddr().(*net.TCPAddr)
	remote, ok2 := c.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return 0, errors.New("not a TCP connection")
	}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		if uid, ok := findSocketOwner(string(b), procAddrs(remote), procAddrs(local)); ok {
			return uid, nil
		}
	}
	return 0, fmt.Errorf("no socket for %s in /proc/net/tcp", remote)
}

// findSocketOwner is the uid of the entry of a /proc/net/tcp table with
// a local address among locals and a remote one among remotes.
func findSocketOwner(table string, locals, remotes []string) (int, bool) {
	for _, line := range strings.Split(table, "\n")[1:] {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		f := strings.Fields(line)
		// Established, or SYN_RECV: a TIME_WAIT left by an earlier
		// connection of the same ports is owned by no one (uid 0).
		if len(f) < 8 || !contains(locals, f[1]) || !contains(remotes, f[2]) || f[3] != "01" && f[3] != "03" {
			continue
		}
		if uid, err := strconv.Atoi(f[7]); err == nil {
			return uid, true
		}
	}
	return 0, false
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if strings.EqualFold(e, s) {
			return true
		}
	}
	return false
}

// procAddrs are the spellings of a in /proc/net/tcp (IPv4) and tcp6 (an
// IPv4 address mapped into IPv6, as a dual-stack socket shows it): each
// 32-bit word of the address in the machine's order (little-endian on
// every Linux Go runs on but s390x and ppc64, where the tables show
// words as they are), then the port.
func procAddrs(a *net.TCPAddr) []string {
	port := fmt.Sprintf(":%04X", a.Port)
	var out []string
	if v4 := a.IP.To4(); v4 != nil {
		out = append(out, words(v4)+port)
	}
	if v6 := a.IP.To16(); v6 != nil {
		out = append(out, words(v6)+port)
	}
	return out
}

// words spells b (4 or 16 bytes) as /proc/net/tcp does.
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
