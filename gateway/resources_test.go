//go:build unix

package gateway

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"codehydra/internal/settings"
	"codehydra/internal/testenv"
	"codehydra/mcp"
)

// resourceClient is a real go-sdk client that reports the resources and
// prompts list_changed and the resources/updated it receives.
type resourceClient struct {
	resources, prompts chan struct{}
	updated            chan string
	client             *sdk.Client
}

func newResourceClient() *resourceClient {
	c := &resourceClient{resources: make(chan struct{}, 16), prompts: make(chan struct{}, 16), updated: make(chan string, 16)}
	signal := func(ch chan struct{}) {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	c.client = sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) { signal(c.resources) },
		PromptListChangedHandler:   func(context.Context, *sdk.PromptListChangedRequest) { signal(c.prompts) },
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
			select {
			case c.updated <- req.Params.URI:
			default:
			}
		},
	})
	return c
}

func resourceURIs(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListResources(t.Context(), nil)
	if err != nil {
		t.Fatalf("resources/list: %v", err)
	}
	var uris []string
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
	}
	return uris
}

func promptNames(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListPrompts(t.Context(), nil)
	if err != nil {
		t.Fatalf("prompts/list: %v", err)
	}
	var names []string
	for _, p := range res.Prompts {
		names = append(names, p.Name)
	}
	return names
}

func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("no %s within 20 s", what)
	}
	var zero T
	return zero
}

func TestServerEverythingsResourcesTemplatesAndPromptsPassThroughNamespaced(t *testing.T) {
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	on := settings.MCPServer{Command: every, StartAtLaunch: true}
	g := newGateway(t, map[string]settings.MCPServer{"every": on})
	g.Start()
	rc := newResourceClient()
	cs := serveMCP(t, mcp.Options{Gateway: g}).connect(t, rc.client, "", questionsProtocol)

	doc := mcp.GatewayResourceURI("every", "demo://resource/static/document/features.md")
	if doc != "codehydra-gw://every/demo://resource/static/document/features.md" {
		t.Fatalf("GatewayResourceURI = %q", doc)
	}
	// Polled slowly: lists count against the caller's rate limit.
	if !testenv.Poll(30*time.Second, 200*time.Millisecond, func() bool { return slices.Contains(resourceURIs(t, cs), doc) }) {
		t.Fatalf("server-everything's resources are not listed: %v", resourceURIs(t, cs))
	}
	for _, uri := range resourceURIs(t, cs) {
		if !strings.HasPrefix(uri, mcp.GatewayURIPrefix+"every/") {
			t.Errorf("resource %q is not namespaced", uri)
		}
	}

	// A text resource.
	res, err := cs.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: doc})
	if err != nil || len(res.Contents) != 1 || res.Contents[0].URI != doc || res.Contents[0].Text == "" || res.Contents[0].MIMEType != "text/markdown" {
		t.Fatalf("resources/read %s = %+v, %v; want its markdown under the namespaced URI", doc, res, err)
	}

	// Templates keep expanding client-side, and the URI expanded maps
	// back to the server's.
	tres, err := cs.ListResourceTemplates(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tpls := map[string]bool{}
	for _, tp := range tres.ResourceTemplates {
		tpls[tp.URITemplate] = true
	}
	for kind, want := range map[string]string{
		"text": "Resource 3: This is a plaintext resource",
		"blob": "Resource 4: This is a base64 blob",
	} {
		tpl := mcp.GatewayResourceURI("every", "demo://resource/dynamic/"+kind+"/{resourceId}")
		if !tpls[tpl] {
			t.Fatalf("templates %v lack %s", tpls, tpl)
		}
		id := map[string]string{"text": "3", "blob": "4"}[kind]
		uri, err := uritemplate.MustNew(tpl).Expand(uritemplate.Values{"resourceId": uritemplate.String(id)})
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: uri})
		if err != nil || len(res.Contents) != 1 {
			t.Fatalf("read %s = %+v, %v", uri, res, err)
		}
		got := res.Contents[0].Text + string(res.Contents[0].Blob)
		if res.Contents[0].URI != uri || !strings.HasPrefix(got, want) || kind == "blob" && res.Contents[0].Blob == nil {
			t.Fatalf("read %s = %q at %q, want %s content starting %q", uri, got, res.Contents[0].URI, kind, want)
		}
	}

	// Prompts, with arguments; a prompt's embedded resource is namespaced.
	if names := promptNames(t, cs); !slices.Contains(names, "every__args-prompt") || !slices.Contains(names, "every__simple-prompt") {
		t.Fatalf("prompts = %v, want every__args-prompt and every__simple-prompt", names)
	}
	pres, err := cs.GetPrompt(t.Context(), &sdk.GetPromptParams{Name: "every__args-prompt", Arguments: map[string]string{"city": "Paris", "state": "Texas"}})
	if err != nil || len(pres.Messages) != 1 {
		t.Fatalf("prompts/get every__args-prompt = %+v, %v", pres, err)
	}
	if tc, ok := pres.Messages[0].Content.(*sdk.TextContent); !ok || tc.Text != "What's weather in Paris, Texas?" {
		t.Fatalf("args-prompt said %#v", pres.Messages[0].Content)
	}
	pres, err = cs.GetPrompt(t.Context(), &sdk.GetPromptParams{Name: "every__resource-prompt", Arguments: map[string]string{"resourceType": "Text", "resourceId": "2"}})
	if err != nil || len(pres.Messages) != 2 {
		t.Fatalf("prompts/get every__resource-prompt = %+v, %v", pres, err)
	}
	if er, ok := pres.Messages[1].Content.(*sdk.EmbeddedResource); !ok || er.Resource.URI != mcp.GatewayResourceURI("every", "demo://resource/dynamic/text/2") {
		t.Fatalf("resource-prompt's resource = %#v, want it namespaced", pres.Messages[1].Content)
	}

	// A tool that adds a resource: its link is namespaced and readable,
	// and resources/list_changed reaches the client.
	drain(rc.resources)
	cres, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "every__gzip-file-as-resource",
		Arguments: map[string]any{"name": "hello.gz", "data": "data:text/plain;base64,aGVsbG8=", "outputType": "resourceLink"}})
	if err != nil || cres.IsError {
		t.Fatalf("gzip-file-as-resource = %+v, %v", cres, err)
	}
	link := mcp.GatewayResourceURI("every", "demo://resource/session/hello.gz")
	if i := slices.IndexFunc(cres.Content, func(c sdk.Content) bool { l, ok := c.(*sdk.ResourceLink); return ok && l.URI == link }); i < 0 {
		t.Fatalf("gzip-file-as-resource's content %#v holds no link to %s", cres.Content, link)
	}
	await(t, rc.resources, "notifications/resources/list_changed once a resource was added")
	if !testenv.Poll(10*time.Second, 200*time.Millisecond, func() bool { return slices.Contains(resourceURIs(t, cs), link) }) {
		t.Fatalf("the new resource %s is not listed: %v", link, resourceURIs(t, cs))
	}
	if res, err := cs.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: link}); err != nil || len(res.Contents) != 1 || res.Contents[0].Blob == nil {
		t.Fatalf("read %s = %+v, %v", link, res, err)
	}

	// Switched off: its resources and prompts leave the lists, with
	// list_changed, and a read is refused.
	drain(rc.resources)
	drain(rc.prompts)
	off := on.Clone()
	off.Enabled = new(false)
	g.Reconfigure(map[string]settings.MCPServer{"every": off})
	await(t, rc.resources, "resources/list_changed once the server was switched off")
	await(t, rc.prompts, "prompts/list_changed once the server was switched off")
	if uris := resourceURIs(t, cs); len(uris) != 0 {
		t.Fatalf("resources of a switched-off server: %v", uris)
	}
	if names := promptNames(t, cs); len(names) != 0 {
		t.Fatalf("prompts of a switched-off server: %v", names)
	}
	if _, err := cs.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: doc}); err == nil || !strings.Contains(err.Error(), "switched off") {
		t.Fatalf("read of a switched-off server's resource = %v, want refused saying it is switched off", err)
	}
}

// A subscription is passed on, and the server's updates come back under
// the namespaced URI, to a client of either protocol era: a session's
// resources/subscribe, or a 2026-07-28 client's subscriptions/listen.
func TestServerEverythingsResourceUpdatesReachASubscriberOfEitherEra(t *testing.T) {
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	g := newGateway(t, map[string]settings.MCPServer{"every": {Command: every, StartAtLaunch: true}})
	g.Start()
	served := serveMCP(t, mcp.Options{Gateway: g})
	doc := mcp.GatewayResourceURI("every", "demo://resource/static/document/features.md")
	toggled := false
	// "": the go-sdk client's default, 2026-07-28, without a session.
	for _, protocol := range []string{"", questionsProtocol} {
		rc := newResourceClient()
		cs := served.connect(t, rc.client, "", protocol)
		if !testenv.Poll(30*time.Second, 200*time.Millisecond, func() bool { return slices.Contains(resourceURIs(t, cs), doc) }) {
			t.Fatalf("protocol %q: server-everything's resources are not listed: %v", protocol, resourceURIs(t, cs))
		}
		if err := cs.Subscribe(t.Context(), &sdk.SubscribeParams{URI: doc}); err != nil {
			t.Fatalf("protocol %q: subscribe: %v", protocol, err)
		}
		if !toggled {
			// Server-everything then sends updates of its subscribed
			// resources every few seconds.
			if cres, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "every__toggle-subscriber-updates", Arguments: map[string]any{}}); err != nil || cres.IsError {
				t.Fatalf("toggle-subscriber-updates = %+v, %v", cres, err)
			}
			toggled = true
		}
		if got := await(t, rc.updated, "notifications/resources/updated"); got != doc {
			t.Fatalf("protocol %q: resources/updated for %q, want %q", protocol, got, doc)
		}
		if err := cs.Unsubscribe(t.Context(), &sdk.UnsubscribeParams{URI: doc}); err != nil {
			t.Fatalf("protocol %q: unsubscribe: %v", protocol, err)
		}
	}
}

func TestAWorkspaceScopedServersResourceIsReadOnTheCallersInstance(t *testing.T) {
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	g := newGateway(t, map[string]settings.MCPServer{"every": {Command: every, Scope: settings.ScopeWorkspace}})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	doc := mcp.GatewayResourceURI("every", "demo://resource/static/document/features.md")
	if _, err := g.ReadResource(ctx, "", doc); err == nil || !strings.Contains(err.Error(), "one instance per workspace") {
		t.Fatalf("read without a workspace = %v, want refused", err)
	}
	if st := g.Statuses(); st[0].Instances != 0 {
		t.Fatalf("a read without a workspace started an instance: %+v", st)
	}
	ws := t.TempDir()
	res, err := g.ReadResource(ctx, ws, doc)
	if err != nil || len(res.Contents) != 1 || res.Contents[0].URI != doc {
		t.Fatalf("read from %s = %+v, %v", ws, res, err)
	}
	if got := g.Statuses()[0].Instances; got != 1 || !slices.Equal(g.snapshot()[0].workspaces(), []string{ws}) {
		t.Fatalf("instances after the read: %d for %v, want one, the caller's", got, g.snapshot()[0].workspaces())
	}
}
