package prepare

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"codehydra/internal/sandbox"
	"codehydra/internal/settings"
	"codehydra/workspace"
)

// TeardownOptions configure a Teardowns.
type TeardownOptions struct {
	// Setup returns the settings of a project (zero when it has none).
	Setup func(projectPath string) settings.ProjectSetup
	// Confine plans how a workspace's teardown is confined, as its setup
	// is (nil: not at all); its error keeps the teardown from running,
	// which fails it.
	Confine func(ctx context.Context, path string) (sandbox.Plan, error)
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Teardowns runs the projects' teardown commands before their workspaces
// are deleted (workspace.Options.Teardowns). Like the setup, the command
// comes from the user's settings only, never from the repository.
type Teardowns struct{ o TeardownOptions }

// NewTeardowns returns a Teardowns.
func NewTeardowns(o TeardownOptions) *Teardowns {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Teardowns{o: o}
}

// Teardown runs the teardown of ws's project in ws's folder, with the
// workspace's ports in its environment, confined as its setup is and
// within the project's teardown timeout (then its whole process tree is
// killed). It returns nil when the project has no teardown or it
// succeeded, else a *SetupError (What "teardown").
func (t *Teardowns) Teardown(ctx context.Context, ws workspace.Workspace) error {
	ps := t.o.Setup(ws.ProjectPath)
	argv, err := settings.SplitCommand(ps.Teardown)
	if err != nil {
		return &SetupError{What: "teardown", Reason: fmt.Sprintf("%q cannot be read: %v", ps.Teardown, err), ExitCode: -1}
	}
	if len(argv) == 0 {
		return nil
	}
	var plan sandbox.Plan
	if t.o.Confine != nil {
		if plan, err = t.o.Confine(ctx, ws.Path); err != nil {
			return &SetupError{What: "teardown", Reason: "was not run: " + err.Error(), ExitCode: -1}
		}
	}
	env := slices.Clone(plan.Env)
	if b, ok := workspace.PortsOf(ws.Path); ok {
		env = append(env, b.Env()...)
	}
	log := t.o.Logger.With("workspace", ws.Path)
	log.Info("running the project's teardown", "command", argv, "sandbox", plan.Policy != nil)
	err = Run(ctx, Command{What: "teardown", Argv: argv, Dir: ws.Path, Timeout: ps.TeardownTimeout(), Sandbox: plan.Policy, Env: env, Line: func(line string) {
		log.Info("teardown output", "line", line)
	}})
	if err != nil {
		log.Warn("the project's teardown failed", "err", err)
	}
	return err
}
