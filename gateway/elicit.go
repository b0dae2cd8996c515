package gateway

// Questions and sampling requests from the servers. The gateway declares
// the elicitation capability to its servers (a server offers the tools
// that ask the user only to a client that can), and passes a question
// (elicitation/create) to the Asker of the call it belongs to (see
// mcp.AskerOf), which asks the calling client's user or the user
// directly. On protocols before 2026-07-28 a server asks in a request of
// its own, which names no call: it is taken to belong to the call under
// way on that session, and declined when there is none or more than one.
// Sampling (sampling/createMessage) is not declared and is refused.

import (
	"context"
	"errors"
	"log/slog"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/mcp"
)

// pendingCall is a call under way on one of a server's sessions, with the
// Asker its questions go to (nil when its caller gave none).
type pendingCall struct {
	ask mcp.Asker
}

// calling records a call under way on sess until the returned func is
// called.
func (s *server) calling(sess *sdk.ClientSession, ask mcp.Asker) (done func()) {
	p := &pendingCall{ask: ask}
	s.asksMu.Lock()
	defer s.asksMu.Unlock()
	if s.asks == nil {
		s.asks = map[*sdk.ClientSession][]*pendingCall{}
	}
	s.asks[sess] = append(s.asks[sess], p)
	return func() {
		s.asksMu.Lock()
		defer s.asksMu.Unlock()
		s.asks[sess] = slices.DeleteFunc(s.asks[sess], func(q *pendingCall) bool { return q == p })
		if len(s.asks[sess]) == 0 {
			delete(s.asks, sess)
		}
	}
}

// elicit answers the server's question req: the Asker of the call it
// belongs to answers, or it is declined.
func (s *server) elicit(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	// A server on the multi round-trip protocol asks through the call's
	// own result, which the SDK answers in the call's context.
	ask := mcp.AskerOf(ctx)
	if ask == nil {
		s.asksMu.Lock()
		calls := s.asks[req.Session]
		if len(calls) == 1 {
			ask = calls[0].ask
		}
		s.asksMu.Unlock()
		if ask == nil {
			s.g.opts.Log.Info("an MCP server's question was declined: it names no call, and not exactly one of its calls is under way",
				slog.String("server", s.name), slog.Int("calls", len(calls)))
			return &sdk.ElicitResult{Action: "decline"}, nil
		}
	}
	return ask(ctx, req.Params)
}

// refuseSampling answers a server's sampling/createMessage with an error
// that says CodeHydra does not sample.
func refuseSampling(server string, log *slog.Logger) sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method != "sampling/createMessage" {
				return next(ctx, method, req)
			}
			log.Info("an MCP server's sampling request was refused", slog.String("server", server))
			return nil, samplingRefused(server)
		}
	}
}

// refuseRoundTripSampling says the same of a sampling request that a
// server on the multi round-trip protocol puts in a call's result: the SDK
// answers it in the call, with an error of its own that this replaces.
func refuseRoundTripSampling(server string, log *slog.Logger) sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			res, err := next(ctx, method, req)
			var je *jsonrpc.Error
			if err != nil && errors.As(err, &je) && je.Message == sdkNoSampling {
				log.Info("an MCP server's sampling request was refused", slog.String("server", server))
				return nil, samplingRefused(server)
			}
			return res, err
		}
	}
}

// sdkNoSampling is the go-sdk client's error for a sampling request it has
// no handler for.
const sdkNoSampling = "client does not support CreateMessage"

func samplingRefused(server string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
		Message: "CodeHydra's gateway does not pass sampling requests (sampling/createMessage) on to a model: " +
			"it never declared the sampling capability, so the MCP server " + server + " must do without"}
}
