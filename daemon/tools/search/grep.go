package search

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/tackle-agent/tackle/daemon/tool"
	"golang.org/x/sys/unix"
)

//go:embed grep.md
var grepDescription string

// Grep searches file contents with a regular expression (RE2 syntax) with
// ripgrep's semantics. It is safe for concurrent use.
type Grep struct {
	opts Options
	// chunk is the stream search's read size (0: chunkSize); tests make
	// it small to put chunk boundaries inside short lines.
	chunk int
}

var grepSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "The regular expression to search for in file contents (Go RE2 syntax)"},
    "path": {"type": "string", "description": "File or directory to search in. Defaults to the current working directory."},
    "glob": {"type": "string", "description": "Glob pattern to filter files (e.g. \"*.js\", \"*.{ts,tsx}\", \"!*_test.go\"); several globs separated by spaces"},
    "type": {"type": "string", "description": "File type to search (e.g. go, js, py, rust, java). More efficient than glob for standard file types."},
    "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"], "description": "\"content\" shows matching lines, \"files_with_matches\" shows file paths (default), \"count\" shows match counts per file"},
    "-A": {"type": "integer", "minimum": 0, "description": "Number of lines to show after each match (content mode only)"},
    "-B": {"type": "integer", "minimum": 0, "description": "Number of lines to show before each match (content mode only)"},
    "-C": {"type": "integer", "minimum": 0, "description": "Number of lines to show before and after each match (content mode only)"},
    "context": {"type": "integer", "minimum": 0, "description": "Same as -C"},
    "-n": {"type": "boolean", "description": "Show line numbers in output (content mode only). Defaults to true."},
    "-i": {"type": "boolean", "description": "Case insensitive search"},
    "-o": {"type": "boolean", "description": "Print only the matched parts of lines (content mode only)"},
    "head_limit": {"type": "integer", "minimum": 0, "description": "Limit output to the first N lines/entries after offset. Defaults to 250; 0 means unlimited."},
    "offset": {"type": "integer", "minimum": 0, "description": "Skip the first N lines/entries before applying head_limit. Defaults to 0."},
    "multiline": {"type": "boolean", "description": "Enable multiline mode where patterns can span lines and . matches newlines. Default: false."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`)

// Spec implements tool.Tool.
func (g *Grep) Spec() tool.Spec {
	return tool.Spec{Name: "Grep", Description: grepDescription, InputSchema: grepSchema}
}

// Attributes implements tool.Tool: read-only and concurrency-safe.
func (g *Grep) Attributes(json.RawMessage) tool.Attributes { return attributes() }

type grepInput struct {
	Pattern      string `json:"pattern"`
	Path         string `json:"path"`
	Glob         string `json:"glob"`
	Type         string `json:"type"`
	OutputMode   string `json:"output_mode"`
	After        *int   `json:"-A"`
	Before       *int   `json:"-B"`
	Around       *int   `json:"-C"`
	Context      *int   `json:"context"`
	LineNumbers  *bool  `json:"-n"`
	IgnoreCase   bool   `json:"-i"`
	OnlyMatching bool   `json:"-o"`
	HeadLimit    *int   `json:"head_limit"`
	Offset       int    `json:"offset"`
	Multiline    bool   `json:"multiline"`
}

// Output modes.
const (
	modeFiles   = "files_with_matches"
	modeContent = "content"
	modeCount   = "count"
)

// defaultHeadLimit is head_limit when the model gives none.
const defaultHeadLimit = 250

// grepPlan is a validated Grep call.
type grepPlan struct {
	in            grepInput
	root          string
	mode          string
	m             *matcher
	overrides     *globSet
	types         *globSet
	before, after int
	lineNumbers   bool
	headLimit     int
	chunk         int // the stream search's read size
	// guard is set by Run from the call's ReadGuard (nil: nothing denied).
	guard *guard
}

func (g *Grep) plan(call *tool.Call) (*grepPlan, error) {
	var in grepInput
	if err := decodeInput(call.Input, &in); err != nil {
		return nil, err
	}
	p := &grepPlan{in: in, root: resolvePath(call.Env, in.Path), mode: in.OutputMode,
		lineNumbers: true, headLimit: defaultHeadLimit, chunk: chunkSize}
	if g.chunk > 0 {
		p.chunk = g.chunk
	}
	switch p.mode {
	case "":
		p.mode = modeFiles
	case modeFiles, modeContent, modeCount:
	default:
		return nil, fmt.Errorf("output_mode %q is not one of content, files_with_matches, count", in.OutputMode)
	}
	if in.Pattern == "" {
		return nil, fmt.Errorf("pattern is empty; give a regular expression to search for")
	}
	m, err := compileMatcher(in.Pattern, in.IgnoreCase, in.Multiline)
	if err != nil {
		return nil, err
	}
	p.m = m
	if in.Glob != "" {
		p.overrides = &globSet{}
		for _, gl := range splitGlobs(in.Glob) {
			gp, ok := compileGlob(gl, true)
			if !ok {
				return nil, fmt.Errorf("glob %q is not a valid glob pattern", gl)
			}
			p.overrides.add(gp)
		}
	}
	if in.Type != "" {
		p.types = &globSet{}
		for _, name := range strings.FieldsFunc(in.Type, func(r rune) bool { return r == ',' || r == ' ' }) {
			globs, ok := fileTypes[name]
			if !ok {
				return nil, fmt.Errorf("unknown file type %q; known types: %s (or use glob)", name, strings.Join(typeNames(), ", "))
			}
			for _, gl := range globs {
				if gp, ok := compileGlob(gl, true); ok {
					p.types.add(gp)
				}
			}
		}
	}
	for _, v := range []*int{in.After, in.Before, in.Around, in.Context, in.HeadLimit} {
		if v != nil && *v < 0 {
			return nil, fmt.Errorf("-A, -B, -C, context and head_limit must not be negative")
		}
	}
	if in.Offset < 0 {
		return nil, fmt.Errorf("offset must not be negative")
	}
	c := 0
	if in.Context != nil {
		c = *in.Context
	}
	if in.Around != nil {
		c = *in.Around
	}
	p.before, p.after = c, c
	if in.Before != nil {
		p.before = *in.Before
	}
	if in.After != nil {
		p.after = *in.After
	}
	if in.LineNumbers != nil {
		p.lineNumbers = *in.LineNumbers
	}
	if in.HeadLimit != nil {
		p.headLimit = *in.HeadLimit
	}
	return p, nil
}

// splitGlobs splits Grep's glob parameter on whitespace and on commas
// outside braces ("*.go,*.md" and "*.{ts,tsx}" both work).
func splitGlobs(s string) []string {
	var out []string
	depth, start := 0, -1
	for i := 0; i <= len(s); i++ {
		var c byte = ' '
		if i < len(s) {
			c = s[i]
		}
		switch {
		case c == '{':
			depth++
		case c == '}' && depth > 0:
			depth--
		}
		sep := c == ' ' || c == '\t' || c == '\n' || (c == ',' && depth == 0)
		if sep {
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	return out
}

func typeNames() []string {
	names := make([]string, 0, len(fileTypes))
	for n := range fileTypes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Validate implements tool.Tool: the pattern must compile and the path exist.
func (g *Grep) Validate(ctx context.Context, call *tool.Call) error {
	p, err := g.plan(call)
	if err != nil {
		return err
	}
	_, err = statRoot(p.root)
	return err
}

// CheckPermission implements tool.Tool: a read of the search path.
func (g *Grep) CheckPermission(ctx context.Context, call *tool.Call) (tool.Access, error) {
	var in grepInput
	if err := decodeInput(call.Input, &in); err != nil {
		return tool.Access{}, err
	}
	return access(call.Env, resolvePath(call.Env, in.Path)), nil
}

// grepHit is one file with a match.
type grepHit struct {
	path  string
	mtime int64 // nanoseconds, files mode only
	count int   // count mode
	out   []byte
}

// grepWorker is the state of one search goroutine.
type grepWorker struct {
	buf  *[]byte
	hits []grepHit
	pr   printer
	errs int
	st   unix.Stat_t // the status of the file being searched, with a guard
}

// Run implements tool.Tool.
func (g *Grep) Run(ctx context.Context, call *tool.Call, _ tool.Progress) (*tool.Result, error) {
	p, err := g.plan(call)
	if err != nil {
		return tool.ErrorResult(err.Error()), nil
	}
	fi, err := statRoot(p.root)
	if err != nil {
		return tool.ErrorResult(err.Error()), nil
	}
	p.guard = newGuard(call.ReadGuard, p.root)
	hits, unreadable, err := p.search(ctx, fi.IsDir(), g.opts.Workers)
	if err != nil {
		return nil, fmt.Errorf("searching %s: %w", p.root, err)
	}
	skipped := p.guard.count()
	if !fi.IsDir() && skipped > 0 {
		return tool.ErrorResult(fmt.Sprintf("%s was not searched: a Read deny rule covers it (a hard link to a denied file counts as that file); search another path", p.root)), nil
	}
	return p.format(hits, unreadable, skipped), nil
}

// search runs the search and returns the files with matches and the
// number of paths that could not be read. What p.guard denies is skipped
// (and counted there).
func (p *grepPlan) search(ctx context.Context, isDir bool, workers int) ([]grepHit, int, error) {
	if !isDir {
		// An explicit file is searched whatever the ignore rules say,
		// but not when a Read deny rule covers it.
		if p.guard.deniesPath(p.root) {
			return nil, 0, nil
		}
		ws := p.newWorker()
		defer putBuf(ws.buf)
		dir, name := splitDir(p.root)
		fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return nil, 1, nil
		}
		defer syscall.Close(fd)
		p.searchFile(ws, &walkFile{dirfd: fd, dirAbs: dir, name: name})
		return ws.hits, ws.errs, nil
	}
	if workers <= 0 {
		workers = defaultWorkers()
	}
	ws := make([]*grepWorker, workers)
	for i := range ws {
		ws[i] = p.newWorker()
	}
	cfg := walkConfig{root: p.root, ignoreFiles: true, overrides: p.overrides, types: p.types, guard: p.guard, workers: workers}
	unreadable, err := walk(ctx, cfg, func(i int, f *walkFile) { p.searchFile(ws[i], f) })
	var hits []grepHit
	for _, w := range ws {
		hits = append(hits, w.hits...)
		unreadable += w.errs
		putBuf(w.buf)
	}
	return hits, unreadable, err
}

func splitDir(p string) (string, string) {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/", p[i+1:]
	}
	return p[:i], p[i+1:]
}

func (p *grepPlan) newWorker() *grepWorker {
	w := &grepWorker{buf: getBuf()}
	w.pr = printer{m: p.m, lineNumbers: p.lineNumbers, before: p.before, after: p.after, onlyMatching: p.in.OnlyMatching}
	return w
}

// binaryProbe is how much of a file is checked for a NUL byte before searching.
const binaryProbe = 8 << 10

// searchFile searches one file and records a hit.
func (p *grepPlan) searchFile(w *grepWorker, f *walkFile) {
	fd, err := openAt(f.dirfd, f.name)
	if err != nil {
		w.errs++
		return
	}
	defer syscall.Close(fd)
	// A file with several links may be a denied file under another name:
	// with a guard, ask before reading. Files mode reuses the status.
	var st *unix.Stat_t
	if p.guard != nil {
		st = &w.st
		if unix.Fstat(fd, st) != nil {
			w.errs++
			return
		}
		if p.guard.deniesLink(st) {
			return
		}
	}
	buf, eof, err := readUpTo(fd, (*w.buf)[:0], p.chunk)
	*w.buf = buf
	if err == nil && !eof {
		if (p.mode == modeFiles || p.mode == modeCount) && !p.m.multiline {
			p.searchStream(w, f, fd, st)
			return
		}
		// Read whole: sized from the file's length once, not grown by
		// doubling (a 50 MB file allocated ~300 MB that way).
		if size := fileSize(fd, st); size > int64(cap(buf)) && size < maxWholeFile {
			buf = slices.Grow(buf, int(size)+1-len(buf)) // +1: the read that sees the end
		}
		buf, eof, err = readUpTo(fd, buf, maxWholeFile)
		*w.buf = buf
		if err == nil && !eof {
			err = fmt.Errorf("file larger than %d bytes", maxWholeFile)
		}
	}
	if err != nil {
		w.errs++
		return
	}
	if len(buf) == 0 || bytes.IndexByte(buf[:min(len(buf), binaryProbe)], 0) >= 0 {
		return
	}
	text := buf
	finalNL := text[len(text)-1] == '\n'
	if finalNL {
		text = text[:len(text)-1]
	}
	hit := grepHit{}
	switch p.mode {
	case modeFiles:
		if !p.m.matchAny(text) {
			return
		}
		hit.mtime = mtime(fd, st)
	case modeCount:
		hit.count = p.count(text)
		if hit.count == 0 {
			return
		}
	case modeContent:
		w.pr.reset(nil, f, text, finalNL)
		p.content(&w.pr)
		if len(w.pr.dst) == 0 {
			return
		}
		hit.path, hit.out = w.pr.path, w.pr.dst
	}
	// A NUL byte after the probe still makes the file binary (ripgrep
	// stops at the first NUL and reports nothing for such a file).
	if len(buf) > binaryProbe && bytes.IndexByte(buf[binaryProbe:], 0) >= 0 {
		return
	}
	if hit.path == "" {
		hit.path = f.abs()
	}
	w.hits = append(w.hits, hit)
}

// fileSize is the length of the open file fd, from st when it holds fd's
// status already; 0 when it cannot be told.
func fileSize(fd int, st *unix.Stat_t) int64 {
	if st != nil {
		return st.Size
	}
	var own unix.Stat_t
	if unix.Fstat(fd, &own) != nil {
		return 0
	}
	return own.Size
}

// Sizes for big files: files and count modes read them in chunks of about
// chunkSize (more for a line longer than that: a chunk is whole lines);
// content and multiline modes read the whole file. Either reads at most
// maxWholeFile bytes at once (a bigger file, or a longer line, is reported
// as unreadable).
const (
	chunkSize    = 16 << 20
	maxWholeFile = 1 << 30
)

// searchStream searches a big file chunk by chunk, each chunk ending at a
// line end (files and count modes, line-oriented patterns only). The
// first chunk is already in *w.buf; st is the file's status if known.
func (p *grepPlan) searchStream(w *grepWorker, f *walkFile, fd int, st *unix.Stat_t) {
	buf := *w.buf
	if bytes.IndexByte(buf[:min(len(buf), binaryProbe)], 0) >= 0 {
		return
	}
	count := 0
	for {
		// Read a chunk and cut it after its last line end. A line longer
		// than the chunk is read on to its end: searched in pieces, it
		// was counted once a piece, $ matched at a cut and a match across
		// one was lost. Each pass checks only the bytes it read.
		eof, cut := false, -1
		for scanned, limit := 0, p.chunk; ; scanned, limit = len(buf), len(buf)+p.chunk {
			if len(buf) >= maxWholeFile {
				w.errs++
				return
			}
			var err error
			if len(buf) < limit {
				buf, eof, err = readUpTo(fd, buf, min(limit, maxWholeFile))
				*w.buf = buf
				if err != nil {
					w.errs++
					return
				}
			}
			if bytes.IndexByte(buf[scanned:], 0) >= 0 {
				return // binary
			}
			if eof {
				cut = len(buf)
				break
			}
			if i := bytes.LastIndexByte(buf[scanned:], '\n'); i >= 0 {
				cut = scanned + i
				break
			}
		}
		text := buf[:cut]
		if eof && len(text) > 0 && text[len(text)-1] == '\n' {
			text = text[:len(text)-1]
		}
		if p.mode == modeFiles {
			if p.m.matchAny(text) {
				// Check the rest for a NUL byte, as for small files.
				for !eof {
					var err error
					buf, eof, err = readUpTo(fd, buf[:0], p.chunk)
					*w.buf = buf
					if err != nil || bytes.IndexByte(buf, 0) >= 0 {
						return
					}
				}
				w.hits = append(w.hits, grepHit{path: f.abs(), mtime: mtime(fd, st)})
				return
			}
		} else {
			count += p.count(text)
		}
		if eof {
			break
		}
		buf = buf[:copy(buf, buf[cut+1:])]
	}
	if count > 0 {
		w.hits = append(w.hits, grepHit{path: f.abs(), count: count})
	}
}

// mtime returns the modification time (nanoseconds) of the open file fd,
// from st when the caller has its status already (nil: fstat it).
func mtime(fd int, st *unix.Stat_t) int64 {
	if st != nil {
		return st.Mtim.Nano()
	}
	var own unix.Stat_t
	if unix.Fstat(fd, &own) != nil {
		return 0
	}
	return own.Mtim.Nano()
}

// count returns the number of matching lines (matches with -o, or in
// multiline mode with a pattern that can match a newline, as ripgrep).
func (p *grepPlan) count(text []byte) int {
	m := p.m
	if m.multiline {
		if m.lit != nil && m.index(text) < 0 {
			return 0
		}
		if m.spansLines || p.in.OnlyMatching {
			return m.countMatches(text)
		}
		// A match starting past the end of the last counted line is on a
		// new line (finding each one's line start was quadratic in a
		// long line).
		n, lineEnd := 0, -1
		m.eachMatch(text, func(s, _ int) {
			if s > lineEnd {
				_, lineEnd = lineBounds(text, s)
				n++
			}
		})
		return n
	}
	n := 0
	for pos := 0; ; {
		ls, le, ok := m.nextLine(text, pos)
		if !ok {
			return n
		}
		if p.in.OnlyMatching {
			n += m.countMatches(text[ls:le])
		} else {
			n++
		}
		pos = le + 1
	}
}

// content prints the matching lines of pr.text.
func (p *grepPlan) content(pr *printer) {
	m, text := p.m, pr.text
	if m.multiline {
		if m.lit != nil && m.index(text) < 0 {
			return
		}
		m.eachMatch(text, func(s, e int) {
			if p.in.OnlyMatching {
				pr.multilineOnly(s, e)
				return
			}
			if pr.printed(s, e) {
				return // skipped before finding its lines, quadratic in a long line
			}
			ls, le := spanOf(text, s, e)
			pr.match(ls, le)
		})
		pr.finish()
		return
	}
	for pos := 0; ; {
		ls, le, ok := m.nextLine(text, pos)
		if !ok {
			break
		}
		pr.match(ls, le)
		pos = le + 1
	}
	pr.finish()
}

// format sorts the hits and renders the result with head_limit and
// offset, and notes what could not be read and what a Read deny rule made
// the search skip.
func (p *grepPlan) format(hits []grepHit, unreadable, skipped int) *tool.Result {
	if len(hits) == 0 {
		text := "No matches found"
		if skipped > 0 {
			text += "\n\n" + skippedNote(skipped)
		}
		r := tool.TextResult(text)
		r.Display = "No matches found"
		return r
	}
	var lines []string
	var summary string
	switch p.mode {
	case modeFiles:
		slices.SortFunc(hits, func(a, b grepHit) int { return newestFirst(a.mtime, b.mtime, a.path, b.path) })
		for _, h := range hits {
			lines = append(lines, h.path)
		}
		summary = "Found " + plural(len(hits), "file")
	case modeCount:
		slices.SortFunc(hits, func(a, b grepHit) int { return strings.Compare(a.path, b.path) })
		total := 0
		for _, h := range hits {
			lines = append(lines, h.path+":"+strconv.Itoa(h.count))
			total += h.count
		}
		what := "matching line"
		if p.in.OnlyMatching || p.m.spansLines {
			what = "match"
		}
		summary = fmt.Sprintf("Found %s in %s", plural(total, what), plural(len(hits), "file"))
	case modeContent:
		slices.SortFunc(hits, func(a, b grepHit) int { return strings.Compare(a.path, b.path) })
		sep := p.before > 0 || p.after > 0
		for i, h := range hits {
			if sep && i > 0 && !p.in.OnlyMatching {
				lines = append(lines, "--")
			}
			out := strings.TrimSuffix(string(h.out), "\n")
			lines = append(lines, strings.Split(out, "\n")...)
		}
		summary = fmt.Sprintf("Found %s in %s", plural(len(lines), "line"), plural(len(hits), "file"))
	}
	total := len(lines)
	start := min(p.in.Offset, total)
	end := total
	if p.headLimit > 0 && start+p.headLimit < total {
		end = start + p.headLimit
	}
	var b strings.Builder
	if p.mode == modeFiles {
		b.WriteString(summary)
		b.WriteString("\n")
	}
	for _, l := range lines[start:end] {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if p.mode == modeCount {
		b.WriteString("\n" + summary + "\n")
	}
	if start == total {
		fmt.Fprintf(&b, "(offset %d is past the end: %s in all)\n", p.in.Offset, plural(total, "result"))
	}
	if end < total {
		fmt.Fprintf(&b, "\n(results truncated: %d more; use offset=%d to see more)\n", total-end, end)
	}
	if unreadable > 0 {
		fmt.Fprintf(&b, "\n(%s could not be read)\n", plural(unreadable, "path"))
	}
	if skipped > 0 {
		b.WriteString("\n" + skippedNote(skipped) + "\n")
	}
	r := tool.TextResult(strings.TrimSuffix(b.String(), "\n"))
	r.Display = summary
	return r
}
