package opencode

import (
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"codehydra/workspace"
)

// On Linux the supervisor checks which process holds the port an agent's
// output names (listensOn); elsewhere it cannot, and trusts the line.

// TestTheAgentsPortIsNeverOneItDoesNotListenOn: a line that looks like
// opencode's listening line but names another program's port (a plugin
// printing it first) must not get that program the agent's password.
func TestTheAgentsPortIsNeverOneItDoesNotListenOn(t *testing.T) {
	stranger, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	strangerPort := stranger.Addr().(*net.TCPAddr).Port
	var contacted atomic.Int32
	go func() {
		for {
			c, err := stranger.Accept()
			if err != nil {
				return
			}
			contacted.Add(1)
			c.Close()
		}
	}()

	f := newFixture(t, fmt.Sprintf("FAKEOC_PRINT_FIRST=opencode server listening on http://127.0.0.1:%d", strangerPort))
	o := f.options()
	o.ReadyTimeout = 5 * time.Second
	s := f.start(o)
	ws := f.workspace("a")
	s.Start(ws)
	st := waitState(t, s, ws.Path, workspace.AgentStateFailed, 15*time.Second)
	if !strings.Contains(st.Detail, fmt.Sprintf("named port %d, where none of its own processes listens", strangerPort)) {
		t.Errorf("detail = %q, want it to say the named port is not the agent's", st.Detail)
	}
	if n := contacted.Load(); n != 0 {
		t.Errorf("the stranger's port was contacted %d times", n)
	}
}
