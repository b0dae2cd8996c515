package settings

import (
	"fmt"
	"time"
)

// The modes of Escalation.
const (
	EscalateToUser      = "user"
	EscalateParentFirst = "parent-first"
)

// Escalation says who hears first of the permission requests and
// questions of a child workspace's agent (one another workspace's agent
// created): the user ("user", the default), or the parent's agent
// ("parent-first"), which gets each as a prompt and answers it with
// workspace_answer; the user hears of a request only if it is still
// pending AfterSeconds later.
type Escalation struct {
	Mode         string `json:"mode"`
	AfterSeconds int    `json:"afterSeconds"`
}

// DefaultEscalation is the user first; 120 s for parent-first.
func DefaultEscalation() Escalation {
	return Escalation{Mode: EscalateToUser, AfterSeconds: 120}
}

// ParentFirst reports whether the parent's agent hears first.
func (e Escalation) ParentFirst() bool { return e.Mode == EscalateParentFirst }

// After is AfterSeconds as a duration.
func (e Escalation) After() time.Duration { return time.Duration(e.AfterSeconds) * time.Second }

func (s Settings) validateEscalation() []error {
	var errs []error
	if m := s.Escalation.Mode; m != EscalateToUser && m != EscalateParentFirst {
		errs = append(errs, fmt.Errorf("escalation.mode is %q: use %q or %q", m, EscalateToUser, EscalateParentFirst))
	}
	if a := s.Escalation.AfterSeconds; a < 5 || a > 3600 {
		errs = append(errs, fmt.Errorf("escalation.afterSeconds is %d: use 5 to 3600", a))
	}
	return errs
}
