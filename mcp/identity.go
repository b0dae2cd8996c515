package mcp

import (
	"crypto/sha256"
	"crypto/subtle"
	"path/filepath"
	"sync"
	"time"

	"codehydra/workspace"
)

// tokenWorkspaces is what identities needs of the workspace domain.
type tokenWorkspaces interface {
	Resolve(path string) (workspace.Workspace, error)
	AllWorkspaces() []workspace.Workspace
}

// identities tells which caller a bearer token stands for: the master
// token is the user; a workspace token (WorkspaceToken) is its workspace
// while that workspace's registration lasts. Tokens are always compared in
// constant time.
//
// A workspace token is derived from the workspace's path and the nonce of
// its registration, which is a file: identities keeps the nonce of each
// registered workspace, so that a wrong token costs an HMAC at most, never
// a file read. An agent names its own workspace in every request, so one
// derivation with the kept nonce identifies it; only a token that passes
// is checked against the workspace as it is now (Resolve, and the nonce
// read afresh). A workspace token sent with another workspace's
// X-Workspace-Path, or with none, is found through a map from the SHA-256
// digest of each workspace's token (a lookup by digest reveals nothing
// usable about the token) to its workspace; the map is rebuilt from the
// registered workspaces when the master token rotated, or when a token is
// not in it, at most every minRefresh, so that a flood of wrong tokens
// cannot make every request list and derive every workspace.
type identities struct {
	master     *Token
	workspaces tokenWorkspaces
	now        func() time.Time

	mu        sync.Mutex
	derived   string    // the master token the maps below belong to
	refreshed time.Time // when the maps were last rebuilt
	byPath    map[string]derivedToken
	byDigest  map[[32]byte]string
}

// derivedToken is what identities keeps of one workspace's token.
type derivedToken struct {
	nonce  string
	digest [32]byte
}

// minRefresh bounds how often an unknown token rebuilds the digest map.
const minRefresh = 250 * time.Millisecond

// identify returns the caller that cred stands for, false for no one.
// wsHeader is the request's X-Workspace-Path, "" for none.
func (ids *identities) identify(cred, wsHeader string) (caller, bool) {
	master := ids.master.Value()
	if master == "" || !validToken(cred) {
		return caller{}, false
	}
	if subtle.ConstantTimeCompare([]byte(cred), []byte(master)) == 1 {
		return caller{}, true
	}
	if wsHeader != "" {
		path := filepath.Clean(wsHeader)
		if d, ok := ids.kept(master, path); ok && subtle.ConstantTimeCompare([]byte(cred), []byte(workspaceToken(master, path, d.nonce))) == 1 {
			if who, ok := ids.owner(master, cred, path); ok {
				return who, true
			}
		}
	}
	if path, ok := ids.candidate(master, sha256.Sum256([]byte(cred))); ok {
		// The map may predate the workspace's removal; owner checks that
		// it is still registered.
		if who, ok := ids.owner(master, cred, path); ok {
			return who, true
		}
	}
	return caller{}, false
}

// owner reports whether cred is the token of the workspace registered at
// path now, with its nonce as the file holds it now, and returns that
// workspace as the caller.
func (ids *identities) owner(master, cred, path string) (caller, bool) {
	if path == "" {
		return caller{}, false
	}
	ws, err := ids.workspaces.Resolve(path)
	if err != nil {
		return caller{}, false
	}
	nonce, err := workspace.ReadTokenNonce(ws.Path)
	if err != nil {
		return caller{}, false
	}
	return caller{ws: ws, nonce: nonce}, subtle.ConstantTimeCompare([]byte(cred), []byte(workspaceToken(master, ws.Path, nonce))) == 1
}

// current reports whether who's credential would still be accepted: its
// workspace is registered at the same path, with the same nonce.
func (ids *identities) current(who caller) bool {
	if who.isUser() {
		return true
	}
	ws, err := ids.workspaces.Resolve(who.ws.Path)
	if err != nil || ws.Path != who.ws.Path {
		return false
	}
	nonce, err := workspace.ReadTokenNonce(ws.Path)
	return err == nil && nonce == who.nonce
}

// kept returns what is kept of the token of the workspace registered at
// path (a canonical path, as the agent's header has it). A registered
// workspace not kept yet is derived once, reading (or making) its nonce;
// a path that is no registered workspace costs no file-system work.
func (ids *identities) kept(master, path string) (derivedToken, bool) {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	ids.forMaster(master)
	if d, ok := ids.byPath[path]; ok {
		return d, d.nonce != ""
	}
	for _, ws := range ids.workspaces.AllWorkspaces() {
		if ws.Path == path {
			return ids.derive(master, path)
		}
	}
	return derivedToken{}, false
}

// candidate finds the workspace whose token has the given digest.
func (ids *identities) candidate(master string, digest [32]byte) (string, bool) {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	if ids.derived == master {
		if path, ok := ids.byDigest[digest]; ok {
			return path, true
		}
		if ids.now().Sub(ids.refreshed) < minRefresh {
			return "", false
		}
	}
	ids.refresh(master)
	path, ok := ids.byDigest[digest]
	return path, ok
}

// refresh rebuilds the maps for the registered workspaces. It reads every
// nonce again, so that a workspace made again at a path whose removal it
// missed is known by its new registration. The caller holds ids.mu.
func (ids *identities) refresh(master string) {
	ids.forMaster(master)
	ids.byPath, ids.byDigest = map[string]derivedToken{}, map[[32]byte]string{}
	for _, ws := range ids.workspaces.AllWorkspaces() {
		_, _ = ids.derive(master, ws.Path)
	}
	ids.refreshed = ids.now()
}

// forMaster drops what was derived under another master token. The caller
// holds ids.mu.
func (ids *identities) forMaster(master string) {
	if ids.derived != master {
		ids.derived, ids.byPath, ids.byDigest = master, map[string]derivedToken{}, map[[32]byte]string{}
	}
}

// derive reads (or makes) the nonce of the workspace at path and keeps its
// token. A workspace whose registration cannot be read is kept without a
// nonce, so that requests naming it do not read it again; its token is
// refused until a refresh can read it. The caller holds ids.mu.
func (ids *identities) derive(master, path string) (derivedToken, bool) {
	nonce, err := workspace.TokenNonce(path)
	if err != nil {
		ids.byPath[path] = derivedToken{}
		return derivedToken{}, false
	}
	d := derivedToken{nonce: nonce, digest: sha256.Sum256([]byte(workspaceToken(master, path, nonce)))}
	ids.byPath[path], ids.byDigest[d.digest] = d, path
	return d, true
}

// forget drops what is kept of the workspace at path, which is gone: a
// workspace made later at the same path is derived afresh.
func (ids *identities) forget(path string) {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	if d, ok := ids.byPath[path]; ok {
		delete(ids.byDigest, d.digest)
		delete(ids.byPath, path)
	}
	ids.refreshed = time.Time{}
}

// changed lets the next unknown token rebuild the maps at once: the
// registered workspaces changed since they were built.
func (ids *identities) changed() {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	ids.refreshed = time.Time{}
}
