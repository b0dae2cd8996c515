package netstat

import (
	"errors"
	"slices"
)

// Listener is a TCP port that a process listens on, reachable at
// 127.0.0.1.
type Listener struct {
	Port int
	// Pid is the process that holds the socket; Root is the root of the
	// tree it was found in (one of Listening's roots).
	Pid, Root int
	// Command is its command line, arguments joined by spaces, cut to
	// maxCommand bytes; "" when it cannot be read.
	Command string
	// Marker is the environment entry by which ListeningMarked found a
	// process outside the trees (then Root is 0); "" for one in a tree.
	Marker string
}

// ErrNotSupported is Listening's answer where it cannot look (every system
// but Linux).
var ErrNotSupported = errors.New("finding the ports a process listens on is supported on Linux only")

// maxCommand bounds a Listener's Command.
const maxCommand = 200

// Ports are the ports that the process trees rooted at pids listen on,
// sorted: Listening for those who need only the numbers (the background
// runs' Listening option). Nothing is found where Listening fails.
func Ports(pids []int) []int {
	ls, _ := Listening(pids)
	var ports []int
	for _, l := range ls {
		ports = append(ports, l.Port)
	}
	return slices.Compact(ports)
}
