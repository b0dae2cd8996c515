package mcp

import (
	"context"
	"encoding/json"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Gateway is the user's own MCP servers (settings mcpServers), which this
// server offers to every caller as tools named "<server>__<tool>" (issue
// 14). The gateway package implements it; this package decides who may
// call what, confines arguments, limits, times out and audits, and the
// gateway only starts servers and forwards.
type Gateway interface {
	// Tools lists the gateway's tools as they are offered here: each
	// named "<server>__<tool>", with its server's schemas and
	// annotations. It may start servers that have not run yet, within
	// ctx; a server that cannot start contributes no tools and says why
	// in its status.
	Tools(ctx context.Context) []GatewayTool
	// Call calls tool (a name from Tools) with args for the caller whose
	// workspace is wsPath ("" for the user with the master token, who has
	// no workspace: a workspace-scoped server then refuses). ctx carries
	// the timeout and the client's cancellation, which must reach the
	// server, and the call's Asker (AskerOf), which a question the server
	// asks during the call goes to. An error is the gateway's own failure (the server is down,
	// did not answer); a tool's own failure is a result with IsError.
	Call(ctx context.Context, wsPath, tool string, args json.RawMessage) (*sdk.CallToolResult, error)
	// OnToolsChanged registers fn, called (on any goroutine) whenever the
	// set of tools, or one tool's schema, or a server's resources,
	// resource templates or prompts may have changed: a server started,
	// stopped, or sent a notifications/…/list_changed.
	OnToolsChanged(fn func())
	// Catalogs are the servers' resources, resource templates and prompts
	// as offered here (see GatewayCatalog), from what their running
	// instances (a workspace-scoped server's: its probe, or an instance)
	// last listed; it starts nothing.
	Catalogs() []GatewayCatalog
	// ReadResource reads uri (a GatewayResourceURI) on the instance for
	// the caller's workspace wsPath, its contents' URIs namespaced.
	ReadResource(ctx context.Context, wsPath, uri string) (*sdk.ReadResourceResult, error)
	// GetPrompt gets prompt ("<server>__<prompt>") with args on the
	// instance for wsPath, its resources' URIs namespaced.
	GetPrompt(ctx context.Context, wsPath, prompt string, args map[string]string) (*sdk.GetPromptResult, error)
	// Subscribe subscribes (or, with on false, unsubscribes) the instance
	// for wsPath to uri (a GatewayResourceURI): its
	// notifications/resources/updated then reach OnResourceUpdated.
	Subscribe(ctx context.Context, wsPath, uri string, on bool) error
	// OnResourceUpdated registers fn, called (on any goroutine) with the
	// namespaced URI of each resource a server says was updated.
	OnResourceUpdated(fn func(uri string))
	// Off names the servers that the workspace at wsPath does not see
	// (its project's settings leave them out, or the user switched them
	// off for it), each with the sentence that says so and how to turn it
	// on; "" (the master token's calls) sees every server. It answers
	// from memory, for every tools/list and call; a change of it is told
	// through OnToolsChanged.
	Off(wsPath string) map[string]string
}

// GatewayTool is one tool of a gateway server.
type GatewayTool struct {
	// Tool is the server's tool with Name replaced by "<server>__<tool>".
	Tool *sdk.Tool
	// Server names the server (its key in mcpServers), for the audit log.
	Server string
	// Confine says that any argument that names a path must lie inside
	// the caller's workspace, and not be denied by the deny list
	// (settings "confine": true; see confineArgs).
	Confine bool
	// WorkDir is the folder the server's instances start in, against
	// which a relative path is judged ("": left to the server).
	WorkDir string
	// PerWorkspace says the server runs one instance per workspace
	// ("scope": "workspace"), so a caller without a workspace cannot
	// call it.
	PerWorkspace bool
	// Hidden, when set, says in a sentence why the gateway withholds the
	// tool and what the user can do about it: one of the server's tools
	// rules hides it (settings "tools"), or its definition changed since
	// it was pinned (settings "pinTools"). It is not offered, and a call
	// of it is refused forbidden with this sentence.
	Hidden string
	// PathsAllow and PathsDeny narrow, for a confined server, the paths
	// its arguments may name inside the caller's workspace (settings
	// "paths"; see confinement.rules).
	PathsAllow, PathsDeny []string
	// PerMinute bounds the calls to the server from all callers together
	// (settings "rateLimit": {"perMinute": N}); 0 sets no bound.
	PerMinute int
}

// GatewayCatalog is one server's resources, resource templates and
// prompts as offered here: each resource's URI and template made
// GatewayResourceURI, each prompt named "<server>__<prompt>". A server
// switched off, or a shared one that does not run, has none.
type GatewayCatalog struct {
	Server    string
	Resources []*sdk.Resource
	Templates []*sdk.ResourceTemplate
	Prompts   []*sdk.Prompt
	// Subscribe says the server takes resources/subscribe.
	Subscribe bool
	// Policy holds the server's policies that apply to reads and gets
	// (Confine, WorkDir, PerWorkspace, PathsAllow, PathsDeny, PerMinute);
	// its Tool is nil.
	Policy GatewayTool
}

// GatewayURIPrefix starts every resource URI (and resource template) of a
// gateway server as offered here: GatewayURIPrefix, the server's name,
// "/", then the server's own URI unchanged, e.g.
// "codehydra-gw://every/demo://resource/static/document/a.md". Server
// names hold no "/", so the first "/" after the prefix ends the name and
// the rest is the server's URI, whatever it holds; a template stays a
// template, and the URI a client expands from it maps back the same way.
const GatewayURIPrefix = "codehydra-gw://"

// GatewayResourceURI is the URI under which the resource uri of server is
// offered.
func GatewayResourceURI(server, uri string) string { return GatewayURIPrefix + server + "/" + uri }

// ParseGatewayResourceURI is GatewayResourceURI's inverse.
func ParseGatewayResourceURI(uri string) (server, inner string, ok bool) {
	rest, ok := strings.CutPrefix(uri, GatewayURIPrefix)
	if !ok {
		return "", "", false
	}
	server, inner, ok = strings.Cut(rest, "/")
	return server, inner, ok && server != "" && inner != ""
}
