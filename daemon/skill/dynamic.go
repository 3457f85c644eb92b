package skill

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bmatcuk/doublestar/v4"
)

// Dynamic is one session's discovered skill state: the nested directories
// whose skills were loaded because a file below them was touched, and the
// skills with `paths` that a touched file activated. It only grows during a
// session. It is safe for concurrent use.
type Dynamic struct {
	mu        sync.Mutex      // guards the fields below
	nested    []string        // directories holding .tackle/skills or .claude/skills, in load order
	nestedSet map[string]bool // the same, as a set
	active    map[string]bool // activation keys (activationKey) of activated skills

	// The view Touch matches paths against, reused for viewTTL: Touch runs
	// after every Read, Write and Edit, and a full discovery reads every
	// skills directory. A skill file added since is seen within viewTTL.
	viewMu  sync.Mutex
	viewKey string
	viewAt  time.Time
	view    *View
}

// viewTTL is how long Touch reuses the view of the same sources.
const viewTTL = time.Second

// pathsView returns the view to match paths against: the cached one when
// it is recent, for the same sources and nothing changed since.
func (d *Dynamic) pathsView(c *Catalog, src Sources, changed bool) *View {
	key := strings.Join(append([]string{src.Root, src.Cwd, src.ConfigHome, src.Home, src.ManagedDir}, src.AdditionalDirs...), "\x00")
	for _, p := range src.Plugins {
		key += "\x00" + p.Name + "\x01" + p.Dir
	}
	d.viewMu.Lock()
	defer d.viewMu.Unlock()
	if !changed && d.view != nil && d.viewKey == key && time.Since(d.viewAt) < viewTTL {
		return d.view
	}
	d.view = c.View(src, d, nil)
	d.viewKey, d.viewAt = key, time.Now()
	return d.view
}

// NewDynamic returns an empty state: no nested skills, no activated ones.
func NewDynamic() *Dynamic {
	return &Dynamic{nestedSet: map[string]bool{}, active: map[string]bool{}}
}

// NestedDirs returns the directories whose nested skills are loaded, in the
// order they were found.
func (d *Dynamic) NestedDirs() []string {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.nested...)
}

func (d *Dynamic) isActive(sk *Skill) bool {
	if d == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.active[activationKey(sk)]
}

// activationKey identifies a skill across renames ("dir:name").
func activationKey(sk *Skill) string {
	if sk.Path != "" {
		return sk.Path
	}
	return sk.Source + ":" + sk.Name
}

// Touch is told the files a tool read, wrote or edited (absolute, or
// relative to src.Cwd). For each file below src.Cwd (else below src.Root),
// every directory between the cwd (exclusive) and the file that holds
// .tackle/skills or .claude/skills has its skills loaded (a name clashing
// with one already there becomes "<dir>:<name>", dir being that directory's
// base name; see View). Then every skill with `paths` that a file matches
// (relative to src.Root) becomes active for the rest of the session. Touch
// reports whether the session's skill set changed.
func (d *Dynamic) Touch(c *Catalog, src Sources, paths []string) bool {
	cwd, root := filepath.Clean(src.Cwd), filepath.Clean(src.Root)
	if src.Cwd == "" {
		cwd = root
	}
	if src.Root == "" {
		root = cwd
	}
	if cwd == "." {
		return false
	}
	abs := make([]string, 0, len(paths))
	for _, p := range paths {
		if p == "" {
			continue
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		abs = append(abs, filepath.Clean(p))
	}
	changed := false
	for _, a := range abs {
		base := ""
		switch {
		case within(cwd, a) && a != cwd:
			base = cwd
		case within(root, a) && a != root:
			base = root
		default:
			continue
		}
		if inDependencyDir(base, a) {
			continue // a package manager's tree: its skills are not the project's
		}
		var chain []string
		for dir := filepath.Dir(a); dir != base && within(base, dir); dir = filepath.Dir(dir) {
			chain = append(chain, dir)
		}
		for i := len(chain) - 1; i >= 0; i-- { // shallow first
			dir := chain[i]
			d.mu.Lock()
			known := d.nestedSet[dir]
			d.mu.Unlock()
			if known || !(isDir(filepath.Join(dir, ".tackle", "skills")) || isDir(filepath.Join(dir, ".claude", "skills"))) {
				continue
			}
			d.mu.Lock()
			if !d.nestedSet[dir] {
				d.nestedSet[dir] = true
				d.nested = append(d.nested, dir)
				changed = true
			}
			d.mu.Unlock()
		}
	}

	var rels []string
	for _, a := range abs {
		if r, err := filepath.Rel(root, a); err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			rels = append(rels, filepath.ToSlash(r))
		}
	}
	if len(rels) == 0 {
		return changed
	}
	v := d.pathsView(c, src, changed)
	activated := false
	for _, sk := range v.skills {
		if len(sk.Paths) == 0 || v.active[sk.Name] {
			continue
		}
		for _, r := range rels {
			if MatchPaths(sk.Paths, r) {
				d.mu.Lock()
				if !d.active[activationKey(sk)] {
					d.active[activationKey(sk)] = true
					activated = true
				}
				d.mu.Unlock()
				break
			}
		}
	}
	if activated {
		d.viewMu.Lock()
		d.view = nil // its active set is stale
		d.viewMu.Unlock()
	}
	return changed || activated
}

// MatchPaths reports whether rel (slash-separated, relative to the project
// root) matches one of the `paths` globs. A glob is a doublestar pattern
// ("src/**/*.ts", "*.{yml,yaml}"); one without a slash also matches the
// file's base name at any depth ("*.go"), and a glob naming a directory
// matches everything below it ("docs", "docs/").
func MatchPaths(globs []string, rel string) bool {
	for _, g := range globs {
		g = strings.TrimPrefix(strings.TrimSpace(g), "./")
		g = strings.TrimPrefix(g, "/")
		if g == "" {
			continue
		}
		g = strings.TrimSuffix(g, "/")
		if ok, _ := doublestar.Match(g, rel); ok {
			return true
		}
		if ok, _ := doublestar.Match(g+"/**", rel); ok {
			return true
		}
		if !strings.Contains(g, "/") {
			if ok, _ := doublestar.Match(g, path.Base(rel)); ok {
				return true
			}
		}
	}
	return false
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// dependencyDirs are directories of installed dependencies: skills nested
// in them belong to the packages, not to the project, and do not load.
var dependencyDirs = map[string]bool{"node_modules": true, "vendor": true, ".venv": true, "venv": true, "site-packages": true, ".git": true}

// inDependencyDir reports whether path lies in a dependency directory
// below base.
func inDependencyDir(base, path string) bool {
	rel, err := filepath.Rel(base, path)
	if err != nil {
		return false
	}
	for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
		if dependencyDirs[part] {
			return true
		}
	}
	return false
}
