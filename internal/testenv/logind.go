package testenv

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/godbus/dbus/v5"
)

// busConfig is a private bus of its own: no service activation (so that
// a name nobody owns is unknown at once, as logind's is where it does not
// run), and everything allowed.
const busConfig = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`

// PrivateBus starts a D-Bus daemon for t alone, with a configuration of
// its own, and returns its address; it stops when t ends. Without
// dbus-daemon the test is skipped, or fails under CODEHYDRA_REQUIRE_GUI=1
// (make test: build/setup.sh installs it with the test desktop).
func PrivateBus(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("dbus-daemon"); err != nil {
		CannotRun(t, "CODEHYDRA_REQUIRE_GUI", "no dbus-daemon: %v", err)
	}
	// Not t.TempDir(): a long test name would make the socket's path
	// longer than a unix socket's 108 bytes.
	dir, err := os.MkdirTemp("", "bus-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	conf := filepath.Join(dir, "bus.conf")
	WriteFile(t, conf, strings.ReplaceAll(busConfig, "{socket}", filepath.Join(dir, "bus")))
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "dbus-daemon", "--config-file="+conf, "--nofork", "--nopidfile", "--print-address=1")
	var stderr SyncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("read the private bus's address: %v\n%s", err, &stderr)
	}
	return strings.TrimSpace(addr)
}

// Inhibitor is one inhibitor a Logind stand-in handed out.
type Inhibitor struct {
	What, Who, Why, Mode string
	// Released: every copy of its file descriptor was closed (the
	// stand-in read EOF on its end), as logind sees it.
	Released bool
}

// Logind watches a private bus for calls to systemd-logind's
// org.freedesktop.login1.Manager.Inhibit and, once Serve is called,
// stands in for logind: it answers each call with a pipe's write end, as
// logind answers with a FIFO's, and records the inhibitor until every
// copy of that end is closed.
type Logind struct {
	addr string

	mu         sync.Mutex
	calls      int
	inhibitors []Inhibitor
	// ends are the stand-in's ends of the inhibitors' pipes, read until
	// EOF; those still open are closed when the test ends.
	ends    []*os.File
	reading sync.WaitGroup
}

const (
	logindName  = "org.freedesktop.login1"
	logindPath  = "/org/freedesktop/login1"
	logindIface = "org.freedesktop.login1.Manager"
)

// WatchLogind counts the Inhibit calls on the bus at addr (Calls), whether
// or not anything answers them. Nobody owns logind's name until Serve.
func WatchLogind(t testing.TB, addr string) *Logind {
	t.Helper()
	l := &Logind{addr: addr}
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatalf("connect to the private bus: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	rule := "type='method_call',interface='" + logindIface + "',member='Inhibit'"
	if err := conn.BusObject().Call("org.freedesktop.DBus.Monitoring.BecomeMonitor", 0, []string{rule}, uint32(0)).Err; err != nil {
		t.Fatalf("monitor the private bus: %v", err)
	}
	// Set after the call, whose reply would go there too; nothing calls
	// Inhibit before WatchLogind returns.
	msgs := make(chan *dbus.Message, 64)
	conn.Eavesdrop(msgs)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range msgs {
			if member, _ := m.Headers[dbus.FieldMember].Value().(string); m.Type == dbus.TypeMethodCall && member == "Inhibit" {
				l.mu.Lock()
				l.calls++
				l.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		conn.Eavesdrop(nil) // no send on msgs after it returns
		close(msgs)
		<-done
	})
	return l
}

// Serve makes the stand-in own org.freedesktop.login1 and answer Inhibit.
func (l *Logind) Serve(t testing.TB) {
	t.Helper()
	conn, err := dbus.Connect(l.addr)
	if err != nil {
		t.Fatalf("connect to the private bus: %v", err)
	}
	// Every call comes through msgs, to be answered by hand: a reply
	// that carries a descriptor must be sent before the stand-in closes
	// its own copy, which an exported method cannot know.
	msgs := make(chan *dbus.Message, 64)
	reply, err := conn.RequestName(logindName, dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own %s: %v %v", logindName, reply, err)
	}
	conn.Eavesdrop(msgs)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range msgs {
			l.answer(conn, m)
		}
	}()
	t.Cleanup(func() {
		conn.Eavesdrop(nil)
		close(msgs)
		<-done
		conn.Close()
		l.mu.Lock()
		for _, r := range l.ends {
			r.Close() // ends a read still waiting; its inhibitor stays held
		}
		l.mu.Unlock()
		l.reading.Wait()
	})
}

// answer answers one call: Inhibit with a new inhibitor, anything else
// with an error.
func (l *Logind) answer(conn *dbus.Conn, m *dbus.Message) {
	if m.Type != dbus.TypeMethodCall {
		return
	}
	iface, _ := m.Headers[dbus.FieldInterface].Value().(string)
	member, _ := m.Headers[dbus.FieldMember].Value().(string)
	sender := m.Headers[dbus.FieldSender]
	reply := &dbus.Message{Type: dbus.TypeMethodReply, Headers: map[dbus.HeaderField]dbus.Variant{
		dbus.FieldDestination: sender,
		dbus.FieldReplySerial: dbus.MakeVariant(m.Serial()),
	}}
	var in Inhibitor
	if iface != logindIface || member != "Inhibit" || dbus.Store(m.Body, &in.What, &in.Who, &in.Why, &in.Mode) != nil {
		reply.Type = dbus.TypeError
		reply.Headers[dbus.FieldErrorName] = dbus.MakeVariant("org.freedesktop.DBus.Error.UnknownMethod")
		conn.Send(reply, nil)
		return
	}
	r, w, err := os.Pipe()
	if err != nil {
		reply.Type = dbus.TypeError
		reply.Headers[dbus.FieldErrorName] = dbus.MakeVariant("org.freedesktop.DBus.Error.Failed")
		conn.Send(reply, nil)
		return
	}
	l.mu.Lock()
	i := len(l.inhibitors)
	l.inhibitors = append(l.inhibitors, in)
	l.ends = append(l.ends, r)
	l.mu.Unlock()
	reply.Body = []any{dbus.UnixFD(w.Fd())}
	reply.Headers[dbus.FieldSignature] = dbus.MakeVariant(dbus.SignatureOf(dbus.UnixFD(0)))
	// Sending a reply returns once it is written: the bus holds its own
	// copy of the descriptor from then on.
	conn.Send(reply, nil)
	w.Close()
	l.reading.Add(1)
	go func() {
		defer l.reading.Done()
		// io.Copy's nil is EOF: no copy of the write end is left.
		if _, err := io.Copy(io.Discard, r); err == nil {
			l.mu.Lock()
			l.inhibitors[i].Released = true
			l.mu.Unlock()
		}
	}()
}

// Calls counts the Inhibit calls made on the bus so far.
func (l *Logind) Calls() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

// Inhibitors are those handed out so far, in order.
func (l *Logind) Inhibitors() []Inhibitor {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Inhibitor(nil), l.inhibitors...)
}

// Held are the inhibitors not released yet.
func (l *Logind) Held() []Inhibitor {
	var held []Inhibitor
	for _, in := range l.Inhibitors() {
		if !in.Released {
			held = append(held, in)
		}
	}
	return held
}
