package gateway

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/proc"
)

var errGatewayClosed = errors.New("the gateway is closed")

// stdioTransport starts a stdio server through package proc (a process
// tree of its own, on the gateway's spawner thread so that on Linux it
// dies with CodeHydra, confined when its options say so), records it
// for reaping until cleanup, and speaks MCP over its stdin and stdout.
type stdioTransport struct {
	g          *Gateway
	opts       proc.Options // Stdin, Stdout and Spawner are set by Connect
	server, ws string
	marker     string
	p          *proc.Process
}

func (t *stdioTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	o := t.opts
	o.Stdin, o.Stdout, o.Spawner = inR, outW, t.g.sp
	p, err := proc.Start(ctx, o)
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	t.p = p
	t.g.record(p.Pid(), t.marker, t.server, t.ws)
	conn := &serverPipes{out: outR, in: inW, p: p, terminate: t.g.opts.StopTimeout}
	return (&sdk.IOTransport{Reader: io.NopCloser(conn.out), Writer: conn}).Connect(ctx)
}

// cleanup ends what is left of the server's tree once its session is
// closed, and then drops its record.
func (t *stdioTransport) cleanup() {
	if t.p != nil {
		t.p.Kill()
		<-t.p.Done()
		t.g.unrecord(t.p.Pid())
	}
}

// serverPipes is the client's end of a server's stdin; closing it ends
// the server as the MCP stdio transport asks: close its input, wait for
// it to exit, then ask its tree to end, then kill it.
type serverPipes struct {
	out       *os.File
	in        *os.File
	p         *proc.Process
	terminate time.Duration
}

func (s *serverPipes) Write(b []byte) (int, error) { return s.in.Write(b) }

func (s *serverPipes) Close() error {
	err := s.in.Close()
	for _, step := range []func(){func() {}, s.p.Terminate, s.p.Kill} {
		step()
		t := time.NewTimer(s.terminate)
		select {
		case <-s.p.Done():
			t.Stop()
			s.out.Close()
			return err
		case <-t.C:
		}
	}
	s.out.Close()
	return errors.Join(err, errors.New("the server did not end"))
}
