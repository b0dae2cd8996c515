package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// Teardowns runs a project's own teardown command (the settings'
// projectSetup teardown) in a workspace about to be deleted. Package
// prepare implements it.
type Teardowns interface {
	// Teardown runs the teardown of ws's project in ws's folder and
	// waits for it; nil when it succeeded or the project has none.
	Teardown(ctx context.Context, ws Workspace) error
}

// ErrTeardownFailed is in the error of a delete that the project's
// teardown stopped: nothing was removed, and a delete with Force goes on
// in spite of it.
var ErrTeardownFailed = errors.New("the project's teardown failed")

// teardown runs the project's teardown in the workspace, whose agent is
// stopped, before anything is removed. A worktree that is gone, or whose
// removal an earlier run of this delete began (its record is written only
// after the teardown), has nothing left to tear down. A failure keeps the
// workspace unless o.Force.
func (d *deletion) teardown(ctx context.Context, registered bool) error {
	t := d.m.opts.Teardowns
	if t == nil || !registered {
		return nil
	}
	if _, err := os.Lstat(d.ws.Path); err != nil {
		return nil
	}
	if _, ok := readPendingOf(d.p.commonDir, d.ws.Path); ok {
		return nil
	}
	err := t.Teardown(ctx, d.ws)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return &Error{Code: CodeInternal, Message: fmt.Sprintf("the delete of %s was cut short during the project's teardown; nothing was removed", d.ws.Path), Err: ctx.Err()}
	case d.o.Force:
		d.m.log.Warn("the project's teardown failed; deleting anyway, as asked", "path", d.ws.Path, "err", err)
		d.addNote("deleted although the project's teardown failed: " + err.Error())
		return nil
	}
	return &Error{Code: CodeConflict, Message: fmt.Sprintf("the project's teardown failed, so %s was not deleted and nothing was removed; fix the teardown command (Settings → Projects) and delete again, or delete anyway", d.ws.Path), Err: &teardownError{err}}
}

// teardownError is the failure of a teardown, which is ErrTeardownFailed.
type teardownError struct{ err error }

func (e *teardownError) Error() string        { return e.err.Error() }
func (e *teardownError) Unwrap() error        { return e.err }
func (e *teardownError) Is(target error) bool { return target == ErrTeardownFailed }

// addNote adds s to what the delete's last event tells.
func (d *deletion) addNote(s string) {
	if d.note != "" {
		d.note += "; "
	}
	d.note += s
}
