package tasks

import (
	"fmt"

	"codehydra/internal/settings"
)

// The project's own dev server: the settings' projectSetup run, a task
// that no file of the repository declares or can change.
const (
	PrefixProject  = "project"
	SourceSettings = "settings"
	// ProjectRun is the name of the task that runs a project's run
	// command (the previews' "Start dev server" starts it in the
	// background).
	ProjectRun = PrefixProject + ":run"
)

// ProjectRunTask is the task of a project's run command line, as the
// user's settings give it.
func ProjectRunTask(command string) Task {
	return Task{Name: ProjectRun, Source: SourceSettings, Command: command}
}

// projectArgv is the command line of a project task: its words
// (settings.SplitCommand, no shell), then args.
func projectArgv(t Task, args []string) ([]string, error) {
	words, err := settings.SplitCommand(t.Command)
	if err != nil || len(words) == 0 {
		return nil, fmt.Errorf("%w: the project's run command %q cannot be run: %v", ErrBadArgs, t.Command, err)
	}
	return append(words, args...), nil
}
