package gateway

import (
	"context"
	"fmt"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// instance is one running copy of a server: the shared one, or one
// workspace's. It starts when first asked for a session, and, when
// supervised, again after it ends on its own.
type instance struct {
	s  *server
	ws string // the folder it runs in and its root; "" for a shared one
	// supervised instances restart after they end on their own (a probe
	// does not).
	supervised bool
	// probe is set on the instance started in an empty folder (ws) to
	// learn a workspace-scoped server's tools.
	probe bool

	mu       sync.Mutex
	sess     *sdk.ClientSession
	cleanup  func() // ends what is left of the server's processes
	starting chan struct{}
	// cancelStart cancels the start in progress, so that stop need not
	// wait for it to connect or time out.
	cancelStart context.CancelFunc
	err         error     // why the last start failed or the last session ended
	retryAt     time.Time // no new start before, after a failure
	failures    int       // in a row, for the backoff
	stopped     bool
}

// session returns the instance's session, starting the server when it
// does not run. A start runs with its own timeout, not ctx, so that a
// caller that gives up does not fail the start for the others; the caller
// waits for it within ctx. A start that failed is not tried again before
// the backoff has passed: calls fail at once with its error meanwhile.
func (i *instance) session(ctx context.Context) (*sdk.ClientSession, error) {
	i.mu.Lock()
	if i.stopped {
		i.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", i.s.name, errClosed)
	}
	if i.sess != nil {
		defer i.mu.Unlock()
		return i.sess, nil
	}
	if i.starting == nil {
		if i.err != nil && time.Now().Before(i.retryAt) {
			defer i.mu.Unlock()
			return nil, i.err
		}
		ctx, cancel := context.WithTimeout(context.Background(), i.s.g.opts.StartTimeout)
		i.starting, i.cancelStart = make(chan struct{}), cancel
		go i.start(ctx, cancel, i.starting)
	}
	ch := i.starting
	i.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: still starting when the call's time ran out: %w", i.s.name, ctx.Err())
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.sess != nil {
		return i.sess, nil
	}
	return nil, i.err
}

// start runs one start within ctx and closes done when it is over. A
// start that ends after stop closes what it started before done closes,
// so that stop, waiting on done, returns only once its process is gone.
func (i *instance) start(ctx context.Context, cancel context.CancelFunc, done chan struct{}) {
	defer close(done)
	defer cancel()
	sess, cleanup, tools, err := i.s.connect(ctx, i.ws, i.probe)
	var cat catalog
	if err == nil {
		cat = i.s.listCatalog(ctx, sess)
	}
	i.mu.Lock()
	i.starting, i.cancelStart = nil, nil
	if i.stopped {
		i.mu.Unlock()
		if err == nil {
			closeSession(sess, cleanup)
		}
		return
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (not ready within %s)", err, i.s.g.opts.StartTimeout)
		}
		err = fmt.Errorf("%s: %w", i.s.name, err)
		i.err = err
		i.failures++
		i.retryAt = time.Now().Add(i.s.g.opts.Backoff(i.failures))
		i.mu.Unlock()
		i.s.setErr(err)
		return
	}
	back := i.err != nil // it failed or ended before: its tools come back
	i.sess, i.cleanup, i.err = sess, cleanup, nil
	go i.supervise(sess, time.Now())
	i.mu.Unlock()
	i.s.setCatalog(cat)
	i.s.setTools(tools, back && !i.s.cfg.PerWorkspace())
}

// supervise waits for sess to end; when it ends on its own the instance
// starts again after the backoff.
func (i *instance) supervise(sess *sdk.ClientSession, started time.Time) {
	werr := sess.Wait()
	i.mu.Lock()
	if i.stopped || i.sess != sess {
		i.mu.Unlock()
		return
	}
	cleanup := i.cleanup
	i.sess, i.cleanup = nil, nil
	if time.Since(started) > time.Minute {
		i.failures = 0 // it ran well for a while: start the backoff over
	}
	i.failures++
	wait := i.s.g.opts.Backoff(i.failures)
	i.err = fmt.Errorf("%s: the server ended (%v); it restarts in %s", i.s.name, endReason(i.s.redact(werr)), wait.Round(time.Millisecond))
	i.retryAt = time.Now().Add(wait)
	err, supervised := i.err, i.supervised
	i.mu.Unlock()
	cleanup()
	i.s.crashed(err)
	if !i.s.cfg.PerWorkspace() {
		i.s.g.toolsChanged() // its tools leave the list until it runs again
	}
	if supervised {
		time.AfterFunc(wait, func() { _, _ = i.session(context.Background()) })
	}
}

func endReason(err error) string {
	if err == nil {
		return "its connection closed"
	}
	return err.Error()
}

// ended reports whether sess is no longer the instance's live session.
func (i *instance) ended(sess *sdk.ClientSession) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.sess != sess
}

// state reports whether the instance runs and whether it is starting.
func (i *instance) state() (running, starting bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.sess != nil, i.starting != nil
}

// stop ends the instance for good and waits for its server to end: one
// still starting is cancelled and waited for (at most the start timeout).
func (i *instance) stop() {
	i.mu.Lock()
	i.stopped = true
	sess, cleanup := i.sess, i.cleanup
	starting, cancel := i.starting, i.cancelStart
	i.sess, i.cleanup = nil, nil
	i.mu.Unlock()
	if sess != nil {
		closeSession(sess, cleanup)
	}
	if starting != nil {
		cancel()
		t := time.NewTimer(i.s.g.opts.StartTimeout)
		defer t.Stop()
		select {
		case <-starting:
		case <-t.C:
		}
	}
}

// closeSession closes sess (a stdio server: closes its stdin, then
// SIGTERM and SIGKILL after the stop timeout) and ends what it left.
func closeSession(sess *sdk.ClientSession, cleanup func()) {
	_ = sess.Close()
	cleanup()
}
