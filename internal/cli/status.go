package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"codehydra/internal/instance"
	"codehydra/internal/paths"
)

const statusHelp = `Usage: codehydra status [--json] [--show-token]

Shows the running CodeHydra instance, read from its instance file. Exits 1
when none runs.

Flags:
  --json         print the instance file's fields as JSON, with the token
                 replaced by "<redacted>"
  --show-token   print the MCP access token instead of hiding it
  --help         show this help
`

// redacted stands in for the token in status output.
const redacted = "<redacted>"

func runStatus(_ context.Context, c *cli, args []string) int {
	fs := newFlagSet("status", statusHelp)
	asJSON := fs.Bool("json", false, "")
	showToken := fs.Bool("show-token", false, "")
	if code, ok := parseFlags(fs, c, args); !ok {
		return code
	}
	info, running, err := instance.Running(paths.InstanceFile(), paths.LockFile())
	if err != nil {
		fmt.Fprintf(c.stderr, "codehydra status: %v\n", err)
		return 1
	}
	if !running {
		out := c.stdout
		if *asJSON {
			out = c.stderr // stdout carries JSON or nothing
		}
		fmt.Fprintln(out, "CodeHydra is not running")
		return 1
	}
	if *asJSON {
		if !*showToken && info.Token != "" {
			info.Token = redacted
		}
		enc := json.NewEncoder(c.stdout)
		enc.SetEscapeHTML(false) // keep "<redacted>" readable
		enc.SetIndent("", "  ")
		if err := enc.Encode(info); err != nil {
			fmt.Fprintf(c.stderr, "codehydra status: %v\n", err)
			return 1
		}
		return 0
	}
	up := c.now().Sub(info.StartedAt).Truncate(time.Second)
	fmt.Fprintf(c.stdout, "CodeHydra is running\n")
	fmt.Fprintf(c.stdout, "  pid:         %d\n", info.PID)
	fmt.Fprintf(c.stdout, "  started:     %s (up %s)\n", info.StartedAt.Local().Format(time.DateTime), up)
	mcpURL := info.MCPURL
	if mcpURL == "" {
		mcpURL = "not running"
	}
	fmt.Fprintf(c.stdout, "  MCP server:  %s\n", mcpURL)
	switch {
	case info.Token != "" && *showToken:
		fmt.Fprintf(c.stdout, "  token:       %s\n", info.Token)
	case info.Token != "":
		fmt.Fprintf(c.stdout, "  token:       %s (--show-token shows it)\n", redacted)
	}
	return 0
}
