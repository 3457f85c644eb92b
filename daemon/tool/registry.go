package tool

import (
	"fmt"
	"sort"
	"sync"
)

// Registry holds tools by name and alias. It is safe for concurrent use.
type Registry struct {
	mu     sync.RWMutex // guards the fields below
	byName map[string]Tool
	order  []string // canonical names in registration order
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{byName: map[string]Tool{}}
}

// Register adds tools. A name or alias already taken is an error and nothing is added.
func (r *Registry) Register(tools ...Tool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	for _, t := range tools {
		s := t.Spec()
		for _, n := range append([]string{s.Name}, s.Aliases...) {
			if _, ok := r.byName[n]; ok || seen[n] {
				return fmt.Errorf("registering tool %q: name %q is already taken", s.Name, n)
			}
			seen[n] = true
		}
	}
	for _, t := range tools {
		s := t.Spec()
		for _, n := range append([]string{s.Name}, s.Aliases...) {
			r.byName[n] = t
		}
		r.order = append(r.order, s.Name)
	}
	return nil
}

// Lookup finds a tool by name or alias.
func (r *Registry) Lookup(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.byName[name]
	return t, ok
}

// Tools returns the tools in registration order.
func (r *Registry) Tools() []Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Tool, 0, len(r.order))
	for _, n := range r.order {
		out = append(out, r.byName[n])
	}
	return out
}

// Names returns the canonical names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := append([]string(nil), r.order...)
	sort.Strings(out)
	return out
}
