package settings

import (
	"fmt"
	"time"
)

// DefaultTaskTimeoutSeconds is taskTimeoutSeconds when the file has none.
const DefaultTaskTimeoutSeconds = 600

// maxTaskTimeoutSeconds is a day: a task that runs longer is stuck.
const maxTaskTimeoutSeconds = 24 * 60 * 60

// TaskTimeout is TaskTimeoutSeconds as a duration: how long a task run by
// workspace_run_task may take before its whole process group is ended. It
// replaces toolTimeoutSeconds for that tool, whose runs (builds, test
// suites) take minutes.
func (s Settings) TaskTimeout() time.Duration {
	return time.Duration(s.TaskTimeoutSeconds) * time.Second
}

// validateTasks checks the settings of workspace_run_task.
func (s Settings) validateTasks() []error {
	if t := s.TaskTimeoutSeconds; t < 1 || t > maxTaskTimeoutSeconds {
		return []error{fmt.Errorf("taskTimeoutSeconds is %d: use 1 to %d (a day)", t, maxTaskTimeoutSeconds)}
	}
	return nil
}
