package gateway

// Pinned tool definitions (settings pinTools): the first time the gateway
// sees a server's tool it records a hash of the tool's definition; a later
// definition with another hash is withheld until the user accepts it in
// Settings, so that a server cannot change what a tool says it does (a
// "rug pull") behind the user's back.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/atomicfile"
)

// pinsVersion is the version of the pins file's format.
const pinsVersion = 1

// pinsFile is the content of the pins file: for each server (by its name
// in mcpServers), for each of its tools (by its own name), its pin.
type pinsFile struct {
	Version int                           `json:"version"`
	Servers map[string]map[string]toolPin `json:"servers"`
}

// toolPin is the accepted definition of one tool.
type toolPin struct {
	// Hash is "sha256:" and the hex SHA-256 of Definition.
	Hash string `json:"hash"`
	// Definition is the canonical JSON of the tool's name, description,
	// input schema and annotations (see definition), kept so that a
	// change can be shown against it.
	Definition json.RawMessage `json:"definition"`
	// Since is when it was pinned or last accepted.
	Since time.Time `json:"since"`
}

// ToolChange is a tool whose definition is not the one pinned: it is
// withheld until the user accepts it.
type ToolChange struct {
	Server, Tool string
	// Old is the pinned definition, New the one the server gives now,
	// both canonical JSON; Hash is New's, for AcceptToolChange.
	Old, New json.RawMessage
	Hash     string
}

// pins holds the pins file in memory and writes it on every change.
type pins struct {
	path string
	log  *slog.Logger

	mu      sync.Mutex
	servers map[string]map[string]toolPin
	// failed is set when the file could not be read: nothing is written
	// over it then.
	failed bool
}

// loadPins reads the pins at path. A missing file holds none. A file that
// cannot be read as pins is moved aside (and said in the log), and the
// gateway starts from none: every tool is pinned anew on first sight.
func loadPins(path string, log *slog.Logger) *pins {
	p := &pins{path: path, log: log, servers: map[string]map[string]toolPin{}}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return p
	case err != nil:
		p.failed = true
		log.Warn("cannot read the pinned MCP tool definitions; tools are pinned anew as they are seen, for this run only", slog.String("file", path), slog.Any("err", err))
		return p
	}
	var f pinsFile
	if err := json.Unmarshal(data, &f); err != nil || f.Version != pinsVersion {
		if err == nil {
			err = fmt.Errorf("version %d, want %d", f.Version, pinsVersion)
		}
		aside := path + ".bad-" + time.Now().Format("20060102-150405")
		if rerr := os.Rename(path, aside); rerr != nil {
			p.failed = true
			log.Warn("the pinned MCP tool definitions are unreadable and cannot be moved aside; tools are pinned anew as they are seen, for this run only",
				slog.String("file", path), slog.Any("err", err), slog.Any("moveErr", rerr))
			return p
		}
		log.Warn("the pinned MCP tool definitions were unreadable and are moved aside; tools are pinned anew as they are seen",
			slog.String("file", path), slog.String("movedTo", aside), slog.Any("err", err))
		return p
	}
	for server, tools := range f.Servers {
		for name, pin := range tools {
			pin.Definition = compact(pin.Definition)
			tools[name] = pin
		}
		if tools != nil {
			p.servers[server] = tools
		}
	}
	return p
}

// compact is def without the spaces the file's indentation gave it: its
// canonical form again.
func compact(def json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, def) != nil {
		return def
	}
	return b.Bytes()
}

// check compares the definitions of server's tools with their pins: a
// tool never seen before is pinned as it is (trust on first use), and the
// tools whose definition differs from their pin are returned, by name.
func (p *pins) check(server string, tools []*sdk.Tool) map[string]ToolChange {
	p.mu.Lock()
	defer p.mu.Unlock()
	changed := map[string]ToolChange{}
	var added []string
	for _, t := range tools {
		def, hash, err := definition(t)
		if err != nil {
			// A definition that cannot be encoded is never offered as
			// pinned: it is withheld with nothing to show as new.
			changed[t.Name] = ToolChange{Server: server, Tool: t.Name}
			continue
		}
		pin, ok := p.servers[server][t.Name]
		switch {
		case !ok:
			if p.servers[server] == nil {
				p.servers[server] = map[string]toolPin{}
			}
			p.servers[server][t.Name] = toolPin{Hash: hash, Definition: def, Since: time.Now().UTC()}
			added = append(added, t.Name)
		case pin.Hash != hash:
			changed[t.Name] = ToolChange{Server: server, Tool: t.Name, Old: pin.Definition, New: def, Hash: hash}
		}
	}
	if len(added) > 0 {
		p.log.Info("pinned new MCP tool definitions", slog.String("server", server), slog.Any("tools", added))
		p.save()
	}
	return changed
}

// accept pins c's new definition.
func (p *pins) accept(c ToolChange) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.servers[c.Server] == nil {
		p.servers[c.Server] = map[string]toolPin{}
	}
	p.servers[c.Server][c.Tool] = toolPin{Hash: c.Hash, Definition: c.New, Since: time.Now().UTC()}
	p.save()
}

// save writes the pins, 0600, atomically; a failure is logged (the pins
// hold in memory for this run).
func (p *pins) save() {
	if p.failed {
		return
	}
	data, err := json.MarshalIndent(pinsFile{Version: pinsVersion, Servers: p.servers}, "", "  ")
	if err == nil {
		err = atomicfile.Write(p.path, append(data, '\n'), 0o600)
	}
	if err != nil {
		p.log.Warn("cannot save the pinned MCP tool definitions; they hold until CodeHydra stops", slog.String("file", p.path), slog.Any("err", err))
	}
}

// definition is the canonical JSON of what a tool's pin covers (its name,
// description, input schema and annotations: what a model reads to decide
// to call it and how), and its hash. Canonical: object keys sorted at
// every depth, no spaces, numbers as the server wrote them.
func definition(t *sdk.Tool) (json.RawMessage, string, error) {
	raw, err := json.Marshal(struct {
		Name        string               `json:"name"`
		Description string               `json:"description"`
		InputSchema any                  `json:"inputSchema"`
		Annotations *sdk.ToolAnnotations `json:"annotations"`
	}{t.Name, t.Description, t.InputSchema, t.Annotations})
	if err != nil {
		return nil, "", err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, "", err
	}
	// encoding/json writes map keys sorted.
	canon, err := json.Marshal(v)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(canon)
	return canon, "sha256:" + hex.EncodeToString(sum[:]), nil
}
