package testenv

import (
	"testing"

	"codehydra/internal/sandbox"
)

// RequireSandboxEnv, set to 1 (make test does), turns RequireSandbox's
// skip into a failure: every machine the project is tested on has
// Landlock, so a kernel sandbox that cannot be had is a fault to see.
const RequireSandboxEnv = "CODEHYDRA_REQUIRE_SANDBOX"

// RequireSandbox skips t (fails it with RequireSandboxEnv=1) where this
// system cannot confine processes, and returns what it can.
func RequireSandbox(t testing.TB) sandbox.Status {
	t.Helper()
	st := sandbox.Probe()
	if !st.Enforced {
		CannotRun(t, RequireSandboxEnv, "no kernel sandbox here: %s", st.Reason)
	}
	return st
}
