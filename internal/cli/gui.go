package cli

import (
	"fmt"

	"codehydra/internal/paths"
)

// startGUI hands the default command (args, its flags already checked)
// over to the GUI program beside this one, and returns only when that
// fails (on Windows, when the GUI program has exited, with its code).
func startGUI(c *cli, args []string) int {
	path, err := paths.Program(paths.GUI)
	if err != nil {
		fmt.Fprintf(c.stderr, "codehydra: the tray app is the program %s, which is not beside this one (%v).\nBuild both with `make build`, or run CodeHydra without a tray: codehydra serve\n", paths.GUI, err)
		return 1
	}
	if diff := otherBuild(path); diff != "" {
		fmt.Fprintf(c.stderr, "codehydra: the tray app %s is not this program's build (%s).\nBuild both with `make build`, or run CodeHydra without a tray: codehydra serve\n", path, diff)
		return 1
	}
	code, err := handOver(path, args)
	if err != nil {
		fmt.Fprintf(c.stderr, "codehydra: start %s: %v\n", path, err)
		return 1
	}
	return code
}
