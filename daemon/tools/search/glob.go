package search

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/tackle-agent/tackle/daemon/tool"
	"golang.org/x/sys/unix"
)

//go:embed glob.md
var globDescription string

// maxGlobResults is the number of paths Glob returns at most.
const maxGlobResults = 100

// Glob lists files whose path matches a doublestar pattern. It is safe for
// concurrent use.
type Glob struct {
	opts Options
}

var globSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "The glob pattern to match files against (e.g. \"**/*.go\", \"src/**/*.{ts,tsx}\")"},
    "path": {"type": "string", "description": "The directory to search in. Omit it to search the current working directory."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`)

// Spec implements tool.Tool.
func (g *Glob) Spec() tool.Spec {
	return tool.Spec{Name: "Glob", Description: globDescription, InputSchema: globSchema}
}

// Attributes implements tool.Tool: read-only and concurrency-safe.
func (g *Glob) Attributes(json.RawMessage) tool.Attributes { return attributes() }

type globInput struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
}

// globPlan is a validated Glob call.
type globPlan struct {
	base    string // the path parameter, resolved
	root    string // directory walked: base plus the pattern's literal prefix
	rest    string // pattern relative to root ("" when the pattern is a literal path)
	literal string // the literal path when the pattern has no glob syntax
}

func (g *Glob) plan(call *tool.Call) (*globPlan, error) {
	var in globInput
	if err := decodeInput(call.Input, &in); err != nil {
		return nil, err
	}
	if in.Pattern == "" {
		return nil, fmt.Errorf("pattern is empty; give a glob such as \"**/*.go\"")
	}
	p := &globPlan{base: resolvePath(call.Env, in.Path)}
	full := in.Pattern
	if !strings.HasPrefix(full, "/") {
		full = p.base + "/" + full
	}
	parts := strings.Split(full, "/")
	i := 0
	for i < len(parts) && !hasMeta(parts[i]) {
		i++
	}
	if i == len(parts) {
		p.literal = filepath.Clean(full)
		p.root = filepath.Dir(p.literal)
		return p, nil
	}
	p.root = filepath.Clean("/" + strings.Join(parts[:i], "/"))
	p.rest = strings.Join(parts[i:], "/")
	if !doublestar.ValidatePattern(p.rest) {
		return nil, fmt.Errorf("pattern %q is not a valid glob (check its brackets and braces)", in.Pattern)
	}
	return p, nil
}

// Validate implements tool.Tool: the pattern must be valid and the path a directory.
func (g *Glob) Validate(ctx context.Context, call *tool.Call) error {
	p, err := g.plan(call)
	if err != nil {
		return err
	}
	return checkBase(p.base)
}

func checkBase(base string) error {
	fi, err := statRoot(base)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("path %s is not a directory; give the directory to search in", base)
	}
	return nil
}

// CheckPermission implements tool.Tool: a read of the directory walked.
func (g *Glob) CheckPermission(ctx context.Context, call *tool.Call) (tool.Access, error) {
	p, err := g.plan(call)
	if err != nil {
		return tool.Access{}, err
	}
	return access(call.Env, p.root), nil
}

type globHit struct {
	path  string
	mtime int64
}

// Run implements tool.Tool.
func (g *Glob) Run(ctx context.Context, call *tool.Call, _ tool.Progress) (*tool.Result, error) {
	p, err := g.plan(call)
	if err != nil {
		return tool.ErrorResult(err.Error()), nil
	}
	if err := checkBase(p.base); err != nil {
		return tool.ErrorResult(err.Error()), nil
	}
	gd := newGuard(call.ReadGuard, p.root)
	hits, err := p.search(ctx, *g.opts.RespectGitignore, g.opts.Workers, gd)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", p.root, err)
	}
	return formatGlob(hits, gd.count()), nil
}

// search returns the matching files, leaving out what gd denies.
func (p *globPlan) search(ctx context.Context, respectIgnore bool, workers int, gd *guard) ([]globHit, error) {
	if p.literal != "" {
		var st unix.Stat_t
		if err := unix.Lstat(p.literal, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			return nil, nil
		}
		if gd.deniesPath(p.literal) || gd.deniesLink(&st) {
			return nil, nil
		}
		return []globHit{{path: p.literal, mtime: st.Mtim.Nano()}}, nil
	}
	if fi, err := os.Stat(p.root); err != nil || !fi.IsDir() {
		return nil, nil
	}
	if workers <= 0 {
		workers = defaultWorkers()
	}
	// "**/x" with no "/" in x matches the file name at any depth.
	nameOnly := ""
	if rest, ok := strings.CutPrefix(p.rest, "**/"); ok && !strings.Contains(rest, "/") && !strings.Contains(rest, "**") {
		nameOnly = rest
	}
	want := func(f *walkFile) bool { return doublestar.MatchUnvalidated(p.rest, f.rel()) }
	if nameOnly != "" {
		want = func(f *walkFile) bool { return doublestar.MatchUnvalidated(nameOnly, f.name) }
	}
	per := make([][]globHit, workers)
	cfg := walkConfig{root: p.root, ignoreFiles: respectIgnore, workers: workers,
		descend: descender(p.rest), want: want, guard: gd}
	_, err := walk(ctx, cfg, func(i int, f *walkFile) {
		var st unix.Stat_t
		if err := unix.Fstatat(f.dirfd, f.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return
		}
		if gd.deniesLink(&st) {
			return
		}
		per[i] = append(per[i], globHit{path: f.abs(), mtime: st.Mtim.Nano()})
	})
	var hits []globHit
	for _, h := range per {
		hits = append(hits, h...)
	}
	return hits, err
}

// descender returns a function that tells whether a directory (relative
// to the root) can hold a match of pattern, or nil when any can.
func descender(pattern string) func(string) bool {
	// Braces may hold a "/": do not prune then.
	if strings.Contains(pattern, "{") {
		return nil
	}
	pc := strings.Split(pattern, "/")
	if pc[0] == "**" {
		return nil
	}
	return func(rel string) bool {
		d := 0
		for c := range strings.SplitSeq(rel, "/") {
			if d < len(pc) && pc[d] == "**" {
				return true
			}
			if d >= len(pc)-1 {
				return false // a file here would have more components than the pattern
			}
			if !doublestar.MatchUnvalidated(pc[d], c) {
				return false
			}
			d++
		}
		return true
	}
}

// formatGlob sorts hits newest first and caps them. A last line says how
// many paths a Read deny rule made the search skip, if any.
func formatGlob(hits []globHit, skipped int) *tool.Result {
	var b strings.Builder
	display := "No files found"
	if len(hits) == 0 {
		b.WriteString("No files found\n")
	} else {
		slices.SortFunc(hits, func(a, b globHit) int { return newestFirst(a.mtime, b.mtime, a.path, b.path) })
		n := min(len(hits), maxGlobResults)
		for _, h := range hits[:n] {
			b.WriteString(h.path)
			b.WriteByte('\n')
		}
		if len(hits) > n {
			fmt.Fprintf(&b, "(results truncated: %d more; use a more specific pattern or path)\n", len(hits)-n)
		}
		display = "Found " + plural(len(hits), "file")
	}
	if skipped > 0 {
		b.WriteString(skippedNote(skipped) + "\n")
	}
	r := tool.TextResult(strings.TrimSuffix(b.String(), "\n"))
	r.Display = display
	return r
}
