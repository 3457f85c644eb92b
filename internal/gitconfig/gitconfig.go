// Package gitconfig reads the entries of a git config file, enough to see
// which keys a repository's own config sets (the keys that make git run a
// program). It owns nothing else: it resolves no include and runs no git.
// Stdlib only.
package gitconfig

import (
	"bufio"
	"bytes"
	"strings"
)

// Entry is one key of a config file: Section and Key lower case, Sub as
// written ([filter "lfs"] → "lfs"), Value with its quotes removed.
type Entry struct {
	Section, Sub, Key, Value string
}

// Name is "section.key" or "section.sub.key", lower case.
func (e Entry) Name() string {
	if e.Sub != "" {
		return e.Section + "." + strings.ToLower(e.Sub) + "." + e.Key
	}
	return e.Section + "." + e.Key
}

// ErrMalformed is the Name First returns for a section header without
// its closing bracket: a file git would refuse, and a reader must not
// guess at.
const ErrMalformed = "a malformed section header"

// First returns the name of the first entry of data for which match is
// true, ErrMalformed for a file it cannot read, or "".
func First(data []byte, match func(Entry) bool) string {
	var e Entry
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), len(data)+1)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				return ErrMalformed
			}
			head := line[1:end]
			e.Section, e.Sub = head, ""
			if i := strings.IndexAny(head, " \t"); i >= 0 {
				e.Section, e.Sub = head[:i], strings.Trim(strings.TrimSpace(head[i:]), `"`)
			} else if i := strings.IndexByte(head, '.'); i >= 0 { // [section.sub], the old syntax
				e.Section, e.Sub = head[:i], head[i+1:]
			}
			e.Section = strings.ToLower(e.Section)
			line = strings.TrimSpace(line[end+1:])
			if line == "" {
				continue
			}
		}
		k, v, _ := strings.Cut(line, "=")
		e.Key = strings.ToLower(strings.TrimSpace(k))
		e.Value = strings.Trim(strings.TrimSpace(v), `"`)
		if match(e) {
			return e.Name()
		}
	}
	return ""
}
