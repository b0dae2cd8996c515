package settings

import (
	"slices"
	"sync"

	"codehydra/internal/atomicfile"
)

// Store holds the current settings of the running app and writes every
// change to its file. It is safe for concurrent use and implements
// workspace.ProjectStore.
type Store struct {
	path string
	w    atomicfile.Writer // its zero value writes to the disk; tests inject failures

	mu  sync.Mutex // held across a save, so saves land in the order of updates
	cur Settings
}

// NewStore returns a Store for the file at path holding Default(); call
// Load to read the file.
func NewStore(path string) *Store {
	return &Store{path: path, cur: Default()}
}

// Path is the settings file of the store.
func (st *Store) Path() string { return st.path }

// Load reads the file into the store, with the rules and errors of the
// package's Load: whatever the error, the store then holds usable settings
// (the defaults when the file was unusable).
func (st *Store) Load() error {
	s, err := Load(st.path)
	st.mu.Lock()
	st.cur = s
	st.mu.Unlock()
	return err
}

// Get returns a copy of the current settings.
func (st *Store) Get() Settings {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.cur.Clone()
}

// Update applies fn to a copy of the current settings, validates and saves
// the result, and only then makes it current. On error nothing changes.
func (st *Store) Update(fn func(*Settings)) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	next := st.cur.Clone()
	fn(&next)
	if err := saveWith(st.w, st.path, next); err != nil {
		return err
	}
	st.cur = next
	return nil
}

// SaveProjects replaces the project list and saves it.
func (st *Store) SaveProjects(paths []string) error {
	return st.Update(func(s *Settings) { s.Projects = slices.Clone(paths) })
}
