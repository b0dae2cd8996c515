package netstat

import (
	"net"
	"os"
	"slices"
	"strconv"
	"testing"
)

func TestAddrsSpellAddressesAsTheTablesDo(t *testing.T) {
	got := Addrs(net.IPv4(127, 0, 0, 1), 8080)
	want := []string{"0100007F:1F90", "0000000000000000FFFF00000100007F:1F90"}
	if littleEndian && !slices.Equal(got, want) {
		t.Fatalf("Addrs(127.0.0.1:8080) = %v, want %v", got, want)
	}
}

// TestSocketsShowsAListenerAndItsOwner: a listener of this process, on
// 127.0.0.1 and on ::1, is in the tables as listening, owned by this user.
func TestSocketsShowsAListenerAndItsOwner(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Logf("%s: %v", addr, err)
			continue
		}
		defer ln.Close()
		a := ln.Addr().(*net.TCPAddr)
		socks, err := Sockets("/proc/net/tcp", "/proc/net/tcp6")
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(socks, func(s Socket) bool { return slices.Contains(Addrs(a.IP, a.Port), s.Local) && s.State == "0A" })
		if i < 0 {
			t.Fatalf("no listening socket for %s among %d", a, len(socks))
		}
		if socks[i].UID != strconv.Itoa(os.Getuid()) {
			t.Fatalf("the listener of %s is owned by uid %s, want %d", a, socks[i].UID, os.Getuid())
		}
	}
}
