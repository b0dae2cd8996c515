package settings

import (
	"strings"
	"testing"
	"time"
)

func TestTaskTimeoutDefaultsToTenMinutesAndIsValidated(t *testing.T) {
	if got := Default().TaskTimeout(); got != 10*time.Minute {
		t.Fatalf("default task timeout %s", got)
	}
	s, err := parse([]byte(`{"taskTimeoutSeconds": 5}`))
	if err != nil || s.TaskTimeout() != 5*time.Second {
		t.Fatalf("taskTimeoutSeconds 5: %v, %v", s.TaskTimeout(), err)
	}
	for _, bad := range []string{`0`, `-1`, `86401`} {
		if _, err := parse([]byte(`{"taskTimeoutSeconds": ` + bad + `}`)); err == nil || !strings.Contains(err.Error(), "taskTimeoutSeconds") {
			t.Errorf("taskTimeoutSeconds %s: %v", bad, err)
		}
	}
}
