package mcp

// Questions from the gateway's servers: a server that asks the user
// something during a call (elicitation/create) is answered by the user of
// the client that made the call, when that client can ask (it declared the
// elicitation capability; one on 2026-07-28 is asked in the call's
// result, see roundtrip.go), else by the user directly through Options.
// Elicitor (the tray's window), else declined. The gateway package finds
// the call a question belongs to and hands it to that call's Asker.

import (
	"context"
	"errors"
	"log/slog"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Question is what a gateway server asks the user during a call.
type Question struct {
	// Server names the gateway server that asks (its key in mcpServers).
	Server string
	// Workspace is the workspace whose call the question belongs to; ""
	// for a call with the user's token.
	Workspace string
	// Params is the server's request, in form mode: its message and the
	// requested schema (a flat object of strings, numbers, integers,
	// booleans and enums), which the go-sdk client has checked.
	Params *sdk.ElicitParams
}

// Elicitor asks the user directly, when the calling client cannot: the
// tray's window. It returns the user's answer (accept with content that
// fits the schema, decline or cancel), or ctx's error once ctx ends (the
// question's timeout), which is answered cancel.
type Elicitor interface {
	Elicit(ctx context.Context, q Question) (*sdk.ElicitResult, error)
}

// Asker passes a question asked during one gateway call to the user who
// answers for that call; its error is the gateway server's error answer.
type Asker func(ctx context.Context, params *sdk.ElicitParams) (*sdk.ElicitResult, error)

type askerKey struct{}

// AskerOf is the Asker of the gateway call whose context is ctx; nil
// outside one (Gateway.Call's ctx carries it).
func AskerOf(ctx context.Context) Asker {
	a, _ := ctx.Value(askerKey{}).(Asker)
	return a
}

// protocolRoundTrips is the first protocol version in which a server may
// not send a request while it serves one (it returns input requests
// instead, SEP-2322): a client on it cannot be asked during a call.
const protocolRoundTrips = "2026-07-28"

// Answers a question can get besides accept.
const (
	answerDecline = "decline"
	answerCancel  = "cancel"
)

// asker is the Asker of a gateway call of server's tool made in session
// ss (nil for a call without one) for workspace ws. callCtx is the
// call's own context: on the Streamable HTTP transport it says which
// request's event stream a question to the client travels on.
func (s *Server) asker(callCtx context.Context, ss *sdk.ServerSession, server, ws string) Asker {
	return func(ctx context.Context, params *sdk.ElicitParams) (*sdk.ElicitResult, error) {
		timeout := s.questionTimeout(callCtx)
		qctx, cancel := context.WithTimeout(callCtx, timeout)
		defer cancel()
		// The gateway server may withdraw its question.
		defer context.AfterFunc(ctx, cancel)()
		log := s.log.With(slog.String("server", server), slog.String("workspace", ws))
		var res *sdk.ElicitResult
		var err error
		var via string
		switch {
		case params.Mode != "" && params.Mode != "form":
			log.Info("a gateway server's question was declined: only form questions are passed on", slog.String("mode", params.Mode))
			return &sdk.ElicitResult{Action: answerDecline}, nil
		case canElicit(ss):
			via = "client"
			res, err = ss.Elicit(qctx, params)
		case s.opts.Elicitor != nil:
			via = "window"
			res, err = s.opts.Elicitor.Elicit(qctx, Question{Server: server, Workspace: ws, Params: params})
		default:
			log.Info("a gateway server's question was declined: the calling client cannot ask its user, and no one else is set to ask")
			return &sdk.ElicitResult{Action: answerDecline}, nil
		}
		if err != nil && errors.Is(qctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			log.Info("a gateway server's question was not answered in time: answered cancel", slog.String("via", via), slog.Duration("timeout", timeout))
			return &sdk.ElicitResult{Action: answerCancel}, nil
		}
		if err != nil {
			log.Warn("a gateway server's question could not be asked", slog.String("via", via), slog.Any("error", err))
			return nil, err
		}
		log.Info("a gateway server asked the user", slog.String("via", via), slog.String("answer", res.Action))
		return res, nil
	}
}

// questionTimeout is how long a question asked during the call of
// callCtx waits for its answer: ElicitTimeout, and the server answers the
// call after the question, so it ends early enough to leave the server a
// tenth of the call's time, or its answer would come after the call had
// timed out.
func (s *Server) questionTimeout(callCtx context.Context) time.Duration {
	timeout := s.opts.ElicitTimeout
	if dl, ok := callCtx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl)-s.opts.CallTimeout/10)
	}
	return timeout
}

// canElicit says whether the client of ss can be asked a form question
// during a call: it declared elicitation (form, or the bare capability
// that meant form before URL questions came), on a protocol that lets a
// server ask while it serves a call.
func canElicit(ss *sdk.ServerSession) bool {
	if ss == nil {
		return false
	}
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil || p.ProtocolVersion >= protocolRoundTrips {
		return false
	}
	c := p.Capabilities.Elicitation
	return c.Form != nil || c.URL == nil
}
