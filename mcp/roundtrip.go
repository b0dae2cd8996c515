package mcp

// Questions to a client on the 2026-07-28 protocol (SEP-2322), which may
// not be sent a request while it waits for a call: a gateway server's
// question reaches it as the call's result, of type input_required, with
// the question in inputRequests and a requestState; the client answers by
// calling the tool again with the answer in inputResponses and that
// requestState. Meanwhile the gateway's call of the server stays under
// way, held, its question waiting for the answer. Whichever protocol the
// server speaks (a request of its own, or input_required results that the
// gateway's client answers), its question reaches the call's Asker, which
// here hands it to the held call.
//
// A requestState is the held call's random id, the question's number and
// its expiry, with an HMAC-SHA256 (a key of this Server's, made at New)
// over them, the caller, the tool and the arguments: a client cannot make
// one up, and one issued to another caller, or for another call, does not
// verify. A held call takes one answer per question, so a state answered
// once is refused after. At most maxHeld calls are held at once,
// maxHeldPerCaller of one caller; a question beyond them goes where it
// would for a client that cannot ask (Options.Elicitor, else declined). A
// question waits for its answer as long as one asked of an older client
// (ElicitTimeout, within the call's time), then is answered cancel and
// its call is held no longer.

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/workspace"
)

// Bounds on the calls held for their clients' answers.
const (
	maxHeld          = 64
	maxHeldPerCaller = 8
)

// heldCalls are the gateway calls whose question waits for its client's
// answer, by id.
type heldCalls struct {
	key []byte
	now func() time.Time

	mu    sync.Mutex
	calls map[string]*heldCall
	// live are the held calls whose gateway call runs, waiting for an
	// answer or not, so that they can be ended (see end).
	live map[*heldCall]struct{}
}

func newHeldCalls(now func() time.Time) *heldCalls {
	return &heldCalls{key: []byte(rand.Text()), now: now, calls: map[string]*heldCall{}, live: map[*heldCall]struct{}{}}
}

// heldCall is one gateway call of a client that is asked in results.
type heldCall struct {
	id string
	// bind is what a requestState of this call is bound to: its caller,
	// tool and arguments (see binding).
	bind string
	// who is its caller, owner the caller's name and registration nonce.
	who    caller
	owner  string
	cancel context.CancelFunc
	// events carry its questions, and at last its end, to the request
	// waiting for it; answers carry the answer to its open question.
	events  chan heldEvent
	answers chan heldAnswer
	// turn lets one question at a time be open.
	turn chan struct{}
	// question makes the input_required result of its kind.
	question func(sdk.InputRequestMap, string) sdk.Result
	// round numbers its questions; guarded by heldCalls.mu.
	round int
}

// heldEvent is a held call's question (round, params) or its end.
type heldEvent struct {
	round  int
	params *sdk.ElicitParams
	exp    time.Time
	res    sdk.Result
	err    error
}

// heldAnswer is the answer to a held call's question number round.
type heldAnswer struct {
	round int
	res   *sdk.ElicitResult
}

// heldRun is a gateway tool's call (or a prompt's get, a resource's
// read), with the Asker its questions go to.
type heldRun func(ctx context.Context, ask Asker) (sdk.Result, error)

// asResult is res as an sdk.Result: nil, not a typed nil, when res is.
func asResult[T any, P interface {
	*T
	sdk.Result
}](res P, err error) (sdk.Result, error) {
	if res == nil {
		return nil, err
	}
	return res, err
}

// roundTrip is a gateway request of a client that may be asked in
// results.
type roundTrip struct {
	// who, session and caps are the client's.
	who     caller
	session *sdk.ServerSession
	caps    *sdk.ClientCapabilities
	// name and args are what a requestState is bound to: the tool (or
	// method and prompt or URI) and its arguments.
	name string
	args json.RawMessage
	// state and responses are what a retry brings.
	state     string
	responses sdk.InputResponseMap
	// server and ws are the gateway server and the caller's workspace.
	server, ws string
	// question makes the input_required result of the request's kind.
	question func(sdk.InputRequestMap, string) sdk.Result
}

// asksInResults says the client is on the 2026-07-28 protocol or later,
// where the SDK answers a request with its inputRequests rather than
// asking the client itself (a session that never initialized speaks the
// newest, as the SDK takes it), and declared form questions (or the bare
// capability that meant form before URL questions came); or the request
// is a retry, which brings an answer.
func (rt roundTrip) asksInResults() bool {
	if rt.state != "" || len(rt.responses) > 0 {
		return true
	}
	if rt.session == nil || rt.caps == nil || rt.caps.Elicitation == nil {
		return false
	}
	if p := rt.session.InitializeParams(); p != nil && p.ProtocolVersion < protocolRoundTrips {
		return false
	}
	return rt.caps.Elicitation.Form != nil || rt.caps.Elicitation.URL == nil
}

// callAskingInResults runs a gateway request of a client that is asked in
// results: a first request starts the gateway's call, held; one with a
// requestState answers its question. Either returns the held call's next
// question, or its result.
func (s *Server) callAskingInResults(ctx context.Context, rt roundTrip, call heldRun) (sdk.Result, error) {
	bind := binding(rt.who, rt.name, rt.args)
	if rt.state != "" || len(rt.responses) > 0 {
		h, err := s.held.answer(rt.state, bind, rt.responses)
		if err != nil {
			return nil, err
		}
		return s.held.wait(ctx, h)
	}
	h := &heldCall{id: rand.Text(), bind: bind, who: rt.who, owner: rt.who.name() + "\x00" + rt.who.nonce, question: rt.question,
		events: make(chan heldEvent, 2), answers: make(chan heldAnswer, 1), turn: make(chan struct{}, 1)}
	// The call outlives this request, which ends with its first question,
	// but not the call's time, nor the server (Shutdown), nor its caller's
	// registration (closeStaleSessions).
	if !s.reserveBackground() {
		return nil, workspace.Errorf(workspace.CodeInternal, "CodeHydra is shutting down; call the tool again after it restarts")
	}
	hctx := context.WithoutCancel(ctx)
	var cancel context.CancelFunc
	if dl, ok := ctx.Deadline(); ok {
		hctx, cancel = context.WithDeadline(hctx, dl)
	} else {
		hctx, cancel = context.WithCancel(hctx)
	}
	h.cancel = cancel
	stop := context.AfterFunc(s.bgCtx, cancel)
	s.held.start(h)
	fallback := s.asker(hctx, rt.session, rt.server, rt.ws)
	s.runBackground(func(context.Context) {
		defer cancel()
		defer stop()
		defer s.held.done(h)
		res, err := call(hctx, s.heldAsker(hctx, h, fallback, rt.server, rt.ws))
		// Nobody waits when its last question was not answered in time.
		select {
		case h.events <- heldEvent{res: res, err: err}:
		default:
		}
	})
	return s.held.wait(ctx, h)
}

// heldAsker is the Asker of the held call h: it holds h until the client
// answers its question, or the question's time ends (answered cancel).
func (s *Server) heldAsker(callCtx context.Context, h *heldCall, fallback Asker, server, ws string) Asker {
	return func(ctx context.Context, params *sdk.ElicitParams) (*sdk.ElicitResult, error) {
		if params.Mode != "" && params.Mode != "form" {
			return fallback(ctx, params)
		}
		select {
		case h.turn <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		defer func() { <-h.turn }()
		log := s.log.With(slog.String("server", server), slog.String("workspace", ws))
		timeout := s.questionTimeout(callCtx)
		exp := s.now().Add(timeout)
		round, ok := s.held.hold(h, exp)
		if !ok {
			log.Info("a gateway server's question is not passed to its client: too many calls wait for their clients' answers", slog.Int("max", maxHeld), slog.Int("maxPerCaller", maxHeldPerCaller))
			return fallback(ctx, params)
		}
		// However the question ends, h waits for no answer after it.
		defer s.held.release(h)
		select {
		case h.events <- heldEvent{round: round, params: params, exp: exp}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		t := time.NewTimer(timeout)
		defer t.Stop()
		for {
			select {
			case a := <-h.answers:
				if a.round != round {
					// Taken while an earlier question timed out.
					continue
				}
				log.Info("a gateway server asked the user", slog.String("via", "client"), slog.String("answer", a.res.Action))
				return a.res, nil
			case <-t.C:
				log.Info("a gateway server's question was not answered in time: answered cancel", slog.String("via", "client"), slog.Duration("timeout", timeout))
				return &sdk.ElicitResult{Action: answerCancel}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
}

// hold records h as waiting for the answer to a new question, which
// expires at exp, and returns its number; false when the bounds are
// reached.
func (hc *heldCalls) hold(h *heldCall, exp time.Time) (int, bool) {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	mine := 0
	for _, o := range hc.calls {
		if o.owner == h.owner {
			mine++
		}
	}
	if len(hc.calls) >= maxHeld || mine >= maxHeldPerCaller {
		return 0, false
	}
	h.round++
	hc.calls[h.id] = h
	// An answer to an earlier question, taken while it timed out, is no
	// answer to this one.
	select {
	case <-h.answers:
	default:
	}
	return h.round, true
}

// release forgets h's open question.
func (hc *heldCalls) release(h *heldCall) {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if hc.calls[h.id] == h {
		delete(hc.calls, h.id)
	}
}

// start records h's call as running, done as ended.
func (hc *heldCalls) start(h *heldCall) {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	hc.live[h] = struct{}{}
}

func (hc *heldCalls) done(h *heldCall) {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	delete(hc.live, h)
}

// end cancels the running calls whose caller gone reports true for (a
// gone workspace's, or all when the server stops).
func (hc *heldCalls) end(gone func(caller) bool) {
	hc.mu.Lock()
	live := make([]*heldCall, 0, len(hc.live))
	for h := range hc.live {
		live = append(live, h)
	}
	hc.mu.Unlock()
	for _, h := range live {
		if gone(h.who) {
			h.cancel()
		}
	}
}

// wait returns h's next question as an input_required result, or its end.
// The end of ctx (the client's cancel, the request's time) cancels h.
func (hc *heldCalls) wait(ctx context.Context, h *heldCall) (sdk.Result, error) {
	defer context.AfterFunc(ctx, h.cancel)()
	select {
	case ev := <-h.events:
		if ev.params == nil {
			return ev.res, ev.err
		}
		return h.question(sdk.InputRequestMap{questionID(ev.round): ev.params}, hc.sign(h.id, ev.round, ev.exp, h.bind)), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// answer checks a retry's requestState and inputResponses and passes the
// answer to the held call they name, which it returns.
func (hc *heldCalls) answer(state, bind string, responses sdk.InputResponseMap) (*heldCall, error) {
	id, round, err := hc.verify(state, bind)
	if err != nil {
		return nil, workspace.Errorf(workspace.CodeInvalidInput,
			"the requestState of this call was not issued to you for this tool and these arguments, or has expired (%v): call the tool again without requestState and inputResponses", err)
	}
	a, ok := responses[questionID(round)].(*sdk.ElicitResult)
	if !ok || (a.Action != "accept" && a.Action != answerDecline && a.Action != answerCancel) {
		return nil, workspace.Errorf(workspace.CodeInvalidInput,
			"inputResponses holds no answer to the question %q (an elicitation result whose action is accept, decline or cancel): answer it, with the same requestState", questionID(round))
	}
	hc.mu.Lock()
	defer hc.mu.Unlock()
	h := hc.calls[id]
	if h == nil || h.round != round || h.bind != bind {
		return nil, workspace.Errorf(workspace.CodeInvalidInput,
			"the question this requestState belongs to was answered already, or waited too long and was answered cancel: call the tool again without requestState")
	}
	delete(hc.calls, id)
	// Under hc.mu, as hold drains: what the buffer holds is an earlier
	// question's answer, so the push never blocks.
	select {
	case <-h.answers:
	default:
	}
	h.answers <- heldAnswer{round: round, res: a}
	return h, nil
}

// questionID is the id of a held call's question number round in its
// input_required result.
func questionID(round int) string { return "q" + strconv.Itoa(round) }

// binding is what a requestState is bound to: the caller (a workspace's
// registration, not only its path), the tool and its arguments, these
// compacted so that a client that sends them again with other spacing
// still matches.
func binding(who caller, tool string, args json.RawMessage) string {
	var buf bytes.Buffer
	if len(args) > 0 && json.Compact(&buf, args) != nil {
		buf.Reset()
		buf.Write(args)
	}
	sum := sha256.Sum256(buf.Bytes())
	return who.name() + "\x00" + who.nonce + "\x00" + tool + "\x00" + string(sum[:])
}

// sign makes the requestState of question round of held call id.
func (hc *heldCalls) sign(id string, round int, exp time.Time, bind string) string {
	payload := id + "." + strconv.Itoa(round) + "." + strconv.FormatInt(exp.Unix(), 10)
	return base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." + base64.RawURLEncoding.EncodeToString(hc.mac(payload, bind))
}

func (hc *heldCalls) mac(payload, bind string) []byte {
	m := hmac.New(sha256.New, hc.key)
	m.Write([]byte(payload))
	m.Write([]byte{0})
	m.Write([]byte(bind))
	return m.Sum(nil)
}

// verify checks state against bind and the clock, and returns the held
// call and question it names.
func (hc *heldCalls) verify(state, bind string) (id string, round int, err error) {
	p64, m64, ok := strings.Cut(state, ".")
	payload, perr := base64.RawURLEncoding.DecodeString(p64)
	mac, merr := base64.RawURLEncoding.DecodeString(m64)
	if !ok || perr != nil || merr != nil || !hmac.Equal(mac, hc.mac(string(payload), bind)) {
		return "", 0, errors.New("its signature does not match")
	}
	parts := strings.Split(string(payload), ".")
	if len(parts) != 3 {
		return "", 0, errors.New("malformed")
	}
	round, rerr := strconv.Atoi(parts[1])
	exp, eerr := strconv.ParseInt(parts[2], 10, 64)
	if rerr != nil || eerr != nil {
		return "", 0, errors.New("malformed")
	}
	if hc.now().Unix() > exp {
		return "", 0, fmt.Errorf("it expired at %s", time.Unix(exp, 0).UTC().Format(time.RFC3339))
	}
	return parts[0], round, nil
}

// askedInResult is a prompt's or resource's input_required result, which
// forwardGateway hands to the SDK's handler (see refuseResource) so that
// the SDK marks it so.
type askedInResult struct{ sdk.Result }

type askedKey struct{}
