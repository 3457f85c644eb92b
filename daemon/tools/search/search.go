// Package search owns the Grep and Glob tools: recursive content search
// and file-name matching with ripgrep's semantics, implemented in Go.
//
// Both walk a directory tree with bounded parallelism, honour ignore files
// (.gitignore — nested, with negations — .ignore, .rgignore and
// .git/info/exclude, as ripgrep does), skip version-control directories
// and never follow symbolic links. They only read files: they must not
// write anything, run processes (ripgrep and fd are test oracles only) or
// decide permissions (the pipeline in daemon/dispatch does, from the
// tool.Access they report). Below the root the permission stage saw, they
// skip what the call's tool.ReadGuard denies (guard.go) and say how many
// paths they skipped.
package search

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// Options configures the search tools. A nil *Options means the defaults.
type Options struct {
	// RespectGitignore makes Glob skip files excluded by ignore files
	// (nil means true). Grep always honours them, as ripgrep does.
	RespectGitignore *bool
	// Workers bounds the goroutines one call uses to walk and read files
	// (0 means GOMAXPROCS, at least 2 and at most 16).
	Workers int
}

// maxResultChars is the result size over which the pipeline persists the output.
const maxResultChars = 100000

// Tools returns the Glob and Grep tools.
func Tools(opts *Options) []tool.Tool {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.RespectGitignore == nil {
		t := true
		o.RespectGitignore = &t
	}
	return []tool.Tool{&Glob{opts: o}, &Grep{opts: o}}
}

// attributes are the attributes of every call of both tools.
func attributes() tool.Attributes {
	return tool.Attributes{
		ReadOnly:        true,
		ConcurrencySafe: true,
		Origin:          tool.OriginBuiltin,
		MaxResultChars:  maxResultChars,
	}
}

// resolvePath makes p absolute against the session's cwd and cleans it.
func resolvePath(env tool.Env, p string) string {
	if p == "" {
		p = "."
	}
	if strings.HasPrefix(p, "~/") || p == "~" {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, strings.TrimPrefix(p, "~"))
		}
	}
	if !filepath.IsAbs(p) {
		cwd := "/"
		if env != nil && env.Cwd() != "" {
			cwd = env.Cwd()
		}
		p = filepath.Join(cwd, p)
	}
	return filepath.Clean(p)
}

// access reports a read of root (Paths and Reads), resolving symbolic links
// where they exist.
func access(env tool.Env, root string) tool.Access {
	real := tool.RealPath(root)
	inside := false
	if env != nil {
		for _, wd := range env.WorkingDirs() {
			if within(real, wd) { // working dirs are resolved by the session
				inside = true
				break
			}
		}
	}
	return tool.Access{Kind: tool.AccessRead, Paths: []string{real}, Reads: []string{real}, InsideWorkingDirs: inside}
}

// within reports whether p is dir or inside it.
func within(p, dir string) bool {
	if p == dir || dir == "/" {
		return true
	}
	return len(p) > len(dir) && p[len(dir)] == '/' && strings.HasPrefix(p, dir)
}

// statRoot checks that the search path exists, with an error for the model.
func statRoot(p string) (os.FileInfo, error) {
	fi, err := os.Stat(p)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("path %s does not exist; check the path or omit it to search the working directory", p)
		}
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	return fi, nil
}

// decodeInput unmarshals a call's input, with an error for the model.
func decodeInput(raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decoding input: %w", err)
	}
	return nil
}

// bufPool holds file buffers; buffers over maxPooledBuf are dropped.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 256<<10); return &b }}

const maxPooledBuf = 8 << 20

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if cap(*b) <= maxPooledBuf {
		*b = (*b)[:0]
		bufPool.Put(b)
	}
}

// plural returns "1 file" or "2 files" ("2 matches").
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	if strings.HasSuffix(word, "ch") {
		return fmt.Sprintf("%d %ses", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// newestFirst orders results as Claude Code lists files: by modification
// time (am, bm), newest first, then by path.
func newestFirst(am, bm int64, ap, bp string) int {
	switch {
	case am > bm:
		return -1
	case am < bm:
		return 1
	}
	return strings.Compare(ap, bp)
}
