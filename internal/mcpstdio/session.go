package mcpstdio

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// reopenID is the id of the initialize request the bridge sends itself to
// open a new session; the client never sees its answer.
const reopenID = `"codehydra-mcp-stdio-reopen"`

// reopen opens a new session for the one numbered gen, which the server
// no longer knows: it finds the running instance again (its port and
// token may have changed), replays the client's initialize and says
// initialized. Requests that failed together open one session.
func (b *bridge) reopen(ctx context.Context, gen int) error {
	b.reopening.Lock()
	defer b.reopening.Unlock()
	b.mu.Lock()
	init, current := b.initialize, b.gen
	b.mu.Unlock()
	if current != gen {
		return nil // another request opened it already
	}
	var req map[string]json.RawMessage
	if err := json.Unmarshal(init, &req); err != nil {
		return fmt.Errorf("replay initialize: %w", err)
	}
	req["id"] = json.RawMessage(reopenID)
	line, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("replay initialize: %w", err)
	}
	var t Target
	var session, protocol string
	err = b.whileStarting(ctx, func() error {
		if t, err = b.find(); err != nil {
			return err
		}
		session, protocol, err = b.initializeSession(ctx, t, line)
		return err
	})
	if err != nil {
		return fmt.Errorf("CodeHydra's session ended and a new one cannot be opened: %w", err)
	}
	b.mu.Lock()
	b.target, b.session, b.protocol = t, session, protocol
	b.gen++
	want := b.streamWanted
	b.mu.Unlock()
	if want {
		b.openStream()
	}
	fmt.Fprintln(b.stderr, "codehydra mcp-stdio: opened a new session with CodeHydra (it restarted, or closed the idle session)")
	return nil
}

// initializeSession sends initialize and then initialized to t and returns
// the new session's id and protocol version.
func (b *bridge) initializeSession(ctx context.Context, t Target, line []byte) (session, protocol string, err error) {
	resp, err := b.do(ctx, http.MethodPost, t, "", "", line)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return "", "", fmt.Errorf("initialize: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	session = resp.Header.Get(sessionHeader)
	var answer initAnswer
	take := func(data []byte) {
		var a initAnswer
		if json.Unmarshal(data, &a) == nil && string(a.ID) == reopenID {
			answer = a
		}
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		err = readEvents(resp.Body, take)
	} else {
		var body []byte
		body, err = io.ReadAll(resp.Body)
		take(body)
	}
	switch {
	case err != nil:
		return "", "", err
	case answer.Error != nil:
		return "", "", fmt.Errorf("initialize: %s", answer.Error.Message)
	case answer.Result == nil:
		return "", "", fmt.Errorf("initialize: no answer")
	}
	protocol = answer.Result.ProtocolVersion
	done, err := b.do(ctx, http.MethodPost, t, session, protocol, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if err != nil {
		return "", "", fmt.Errorf("initialized: %w", err)
	}
	done.Body.Close()
	return session, protocol, nil
}

// openStream (re)opens the stream of messages the server sends outside
// any request, such as tools/list_changed, and passes them to the client.
func (b *bridge) openStream() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopStream != nil {
		b.stopStream()
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.stopStream = cancel
	t, session, protocol := b.target, b.session, b.protocol
	b.streams.Add(1)
	go func() {
		defer b.streams.Done()
		resp, err := b.do(ctx, http.MethodGet, t, session, protocol, nil)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			return
		}
		// The stream ends when the session does; the next request opens
		// a new session and with it a new stream.
		_ = readEvents(resp.Body, b.write)
	}()
}

// initAnswer is the server's answer to the initialize the bridge replays.
type initAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		ProtocolVersion string `json:"protocolVersion"`
	} `json:"result"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// whileStarting runs try until it succeeds or b.startGrace has passed. A
// CodeHydra that is starting writes its instance file before it has
// loaded its projects, and until then refuses a workspace's token; one
// that is restarting is not running for a moment.
func (b *bridge) whileStarting(ctx context.Context, try func() error) error {
	deadline := time.Now().Add(b.startGrace)
	for {
		err := try()
		if err == nil || !time.Now().Before(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(250 * time.Millisecond):
		}
	}
}
