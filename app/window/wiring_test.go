package window

import (
	"codehydra/internal/settings"
	"codehydra/mcp"
	"codehydra/opencode"
	"codehydra/workspace"
)

// The app's interfaces are what main wires to; these break the build when
// the real types drift from them.
var (
	_ Workspaces    = (*workspace.Manager)(nil)
	_ Agents        = (*opencode.Supervisor)(nil)
	_ MCPServer     = (*mcp.Server)(nil)
	_ SettingsStore = (*settings.Store)(nil)
)
