package gateway

import (
	"codehydra/internal/childjob"
	"context"
	"errors"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

var errGatewayClosed = errors.New("the gateway is closed")

// spawnTransport is the go-sdk's CommandTransport, but starts the
// server's process on the gateway's spawner thread (see reap.Spawner:
// Pdeathsig then follows CodeHydra's life, not a thread's) and records
// it for reaping until cleanup.
type spawnTransport struct {
	sdk.CommandTransport
	g          *Gateway
	server, ws string
}

func (t *spawnTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	var conn sdk.Connection
	err := t.g.sp.Run(ctx, func() error {
		var err error
		conn, err = t.CommandTransport.Connect(ctx)
		if err == nil {
			// Windows: into the app's kill-on-close job, so that the
			// server dies with the app (a no-op elsewhere).
			if err = childjob.Contain(t.Command.Process); err != nil {
				_ = conn.Close()
			}
		}
		return err
	})
	if cmd := t.Command; cmd.Process != nil {
		t.g.record(cmd, t.server, t.ws)
	}
	return conn, err
}

// cleanup ends what is left of the server's process group once its
// session is closed, and then drops its record.
func (t *spawnTransport) cleanup() {
	if p := t.Command.Process; p != nil {
		killGroup(p.Pid)
		t.g.unrecord(p.Pid)
	}
}
