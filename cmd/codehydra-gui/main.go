// Command codehydra-gui is CodeHydra's GUI program: the tray app (the
// default command of codehydra, which hands over to this program beside
// it) and the window processes it starts. Every other command is the
// core program's too; this one adds Fyne, which the core does not link
// (docs/DESIGN.md "Shape").
package main

import (
	"context"
	"os"

	_ "codehydra/internal/cleanlocale" // before Fyne initialises
	"codehydra/internal/cli"
	"codehydra/internal/gui"
	"codehydra/internal/sandbox"
)

// version may be set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	sandbox.RunHelperIfAsked()
	cli.Version = version
	os.Exit(cli.MainGUI(context.Background(), os.Args[1:], gui.Commands))
}
