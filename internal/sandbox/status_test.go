package sandbox

import (
	"context"
	"strings"
	"testing"
)

func TestGapsSayWhatIsLeftOpenByTheKernelTheFilterAndTheSettings(t *testing.T) {
	const pathSockets = "connecting to unix sockets by path"
	for _, tc := range []struct {
		name            string
		abi             int
		filter, allowed bool
		want, wantNot   []string
	}{
		{"ABI 7 with the filter: nothing", 7, true, false, nil, []string{"not restricted"}},
		{"ABI 9: nothing", 9, false, false, nil, []string{"not restricted"}},
		{"ABI 7 without a filter to be had", 7, false, false, []string{pathSockets, "ABI 9, or a seccomp filter"}, []string{"abstract"}},
		{"ABI 7 with sockets allowed", 7, false, true, []string{pathSockets, "settings sandbox.unixSockets"}, nil},
		{"ABI 9 with sockets allowed", 9, false, true, []string{pathSockets, "settings sandbox.unixSockets"}, nil},
		{"ABI 5 with the filter: signals only", 5, true, false, []string{"signals to processes outside"}, []string{"abstract", pathSockets}},
		{"ABI 5 with sockets allowed", 5, false, true, []string{"signals and abstract unix sockets", pathSockets}, nil},
		{"ABI 2", 2, true, false, []string{"truncating", "ioctl", "signals"}, []string{pathSockets}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := GapsOf(tc.abi, tc.filter, tc.allowed)
			if len(tc.want) == 0 && got != "" {
				t.Errorf("GapsOf = %q, want none", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("GapsOf = %q, want it to say %q", got, w)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(got, w) {
					t.Errorf("GapsOf = %q, want it not to say %q", got, w)
				}
			}
		})
	}
}

func TestAPolicyThatAllowsUnixSocketsIsPlannedWithoutTheFilterAndSaysSo(t *testing.T) {
	ws := t.TempDir()
	filtered := func() Status { return Status{Enforced: true, ABI: 7, UnixSocketFilter: true} }
	for _, allowed := range []bool{false, true} {
		c := &Confiner{Mode: ModeAuto, Probe: filtered, Layout: Layout{UnixSockets: allowed},
			Workspace: func(_ context.Context, path string) (Workspace, error) { return Workspace{Path: path}, nil }}
		plan, err := c.Plan(context.Background(), ws)
		if err != nil {
			t.Fatal(err)
		}
		if plan.Policy == nil || plan.Policy.UnixSockets != allowed {
			t.Fatalf("allowed %v: policy %+v, want UnixSockets %v", allowed, plan.Policy, allowed)
		}
		if plan.Status.UnixSocketFilter == allowed || strings.Contains(plan.Status.Gaps, "sandbox.unixSockets") != allowed {
			t.Errorf("allowed %v: status %+v", allowed, plan.Status)
		}
	}
	if st := (Status{Reason: "not confined: x"}).WithUnixSockets(); st != (Status{Reason: "not confined: x"}) {
		t.Errorf("an unconfined status gained %+v", st)
	}
}
