package sysprompt

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// An import in a memory file is Claude Code's: an @ at the start of the text
// or after white space, followed by a path up to the next white space
// ("\ " is a space inside the path), without a #fragment. The path starts
// with ./, ../, ~/ or / (not "/" alone), or with a letter, digit, '.', '_'
// or '-'. Text in fenced or indented code blocks, in code spans and in HTML
// comments holds no imports, as Claude Code reads only Markdown's text
// tokens. A path also ends at a backtick or '<' (where a code span or HTML
// would start a new token).

// importRef is one @path found in a memory file.
type importRef struct {
	path string // as written, with "\ " unescaped and the #fragment cut
	line int    // 1-based line of the @
}

// findImports returns the imports of a memory file's content, in order.
func findImports(content string) []importRef {
	var (
		refs      []importRef
		para      strings.Builder // the paragraph being gathered
		paraLine  int             // its first line
		fenceChar byte            // the open fence's character, 0 when none
		fenceLen  int
		fenceDeep bool // the fence was opened indented, inside a list
		inHTML    bool // in an HTML comment block, until a line with -->
		prevBlank = true
		prevCode  bool // the previous line was in an indented code block
		inList    bool
	)
	flush := func() {
		if para.Len() > 0 {
			refs = scanText(para.String(), paraLine, refs)
			para.Reset()
		}
	}
	lineNo := 0
	for rest := content; rest != ""; {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		lineNo++
		line = strings.TrimSuffix(line, "\r")
		switch {
		case fenceChar != 0:
			if closesFence(line, fenceChar, fenceLen, fenceDeep) {
				fenceChar = 0
			}
			prevBlank, prevCode = false, false
			continue
		case inHTML:
			if strings.Contains(line, "-->") {
				inHTML = false
			}
			prevBlank, prevCode = false, false
			continue
		}
		blank := strings.TrimSpace(line) == ""
		if blank {
			flush()
			prevBlank = true
			continue
		}
		indent := indentWidth(line)
		if para.Len() == 0 {
			if c, n, ok := opensFence(line, inList); ok {
				fenceChar, fenceLen, fenceDeep = c, n, indent >= 4
				continue
			}
			if indent < 4 && strings.HasPrefix(strings.TrimLeft(line, " "), "<!--") {
				// An HTML block of a comment: it ends at the line with -->.
				inHTML = !strings.Contains(line[strings.Index(line, "<!--")+4:], "-->")
				prevBlank, prevCode = false, false
				continue
			}
			if indent >= 4 && (prevBlank || prevCode) && !inList {
				prevBlank, prevCode = false, true
				continue // an indented code block
			}
		} else if c, n, ok := opensFence(line, inList); ok {
			// A fence interrupts a paragraph.
			flush()
			fenceChar, fenceLen, fenceDeep = c, n, indent >= 4
			continue
		}
		switch {
		case indent < 4 && isListItem(line):
			inList = true
		case indent < 2 && prevBlank:
			inList = false
		}
		if para.Len() == 0 {
			paraLine = lineNo
		} else {
			para.WriteByte('\n')
		}
		para.WriteString(line)
		prevBlank, prevCode = false, false
	}
	flush()
	return refs
}

// scanText finds the imports in a paragraph's text, which starts at line
// first, skipping code spans and inline HTML comments.
func scanText(text string, first int, refs []importRef) []importRef {
	boundary := true // at the start of a text token: an @ here imports
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == '\\' && i+1 < len(text) && text[i+1] == '`':
			i += 2
			boundary = false
			continue
		case c == '`':
			n := runLen(text[i:], '`')
			if end := closingRun(text[i+n:], n); end >= 0 {
				i += n + end + n // skip the code span
				boundary = true
				continue
			}
			i += n // backticks without their match are text
			boundary = false
			continue
		case strings.HasPrefix(text[i:], "<!--"):
			if end := strings.Index(text[i+4:], "-->"); end >= 0 {
				i += 4 + end + 3
				boundary = true
				continue
			}
		case c == '@' && (boundary || startsAfterSpace(text[:i])):
			p, end := importPath(text[i+1:])
			if validImport(p) {
				refs = append(refs, importRef{path: p, line: first + strings.Count(text[:i], "\n")})
			}
			i += 1 + end
			boundary = false
			continue
		}
		_, size := utf8.DecodeRuneInString(text[i:])
		i += size
		boundary = false
	}
	return refs
}

// importPath reads the path after an @: up to white space, a backtick, a
// '<' or a backslash not before a space. It returns the path (unescaped,
// without its #fragment) and the bytes it took.
func importPath(s string) (string, int) {
	var b strings.Builder
	i := 0
	for i < len(s) {
		c := s[i]
		if c == '\\' {
			if i+1 < len(s) && s[i+1] == ' ' {
				b.WriteByte(' ')
				i += 2
				continue
			}
			break
		}
		if c == '`' || c == '<' {
			break
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			break
		}
		b.WriteString(s[i : i+size])
		i += size
	}
	p := b.String()
	if k := strings.IndexByte(p, '#'); k >= 0 {
		p = p[:k]
	}
	return p, i
}

// validImport is Claude Code's test of what may follow an @.
func validImport(p string) bool {
	switch {
	case p == "" || p == "/":
		return false
	case strings.HasPrefix(p, "./"), strings.HasPrefix(p, "~/"), strings.HasPrefix(p, "/"):
		return true
	}
	c := p[0]
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

func startsAfterSpace(before string) bool {
	r, _ := utf8.DecodeLastRuneInString(before)
	return unicode.IsSpace(r)
}

// runLen counts the leading c bytes of s.
func runLen(s string, c byte) int {
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	return n
}

// closingRun returns the offset in s of the first run of exactly n
// backticks, or -1.
func closingRun(s string, n int) int {
	for i := 0; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		m := runLen(s[i:], '`')
		if m == n {
			return i
		}
		i += m
	}
	return -1
}

// indentWidth is the line's leading white space in columns (a tab to the
// next multiple of 4).
func indentWidth(line string) int {
	w := 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case ' ':
			w++
		case '\t':
			w += 4 - w%4
		default:
			return w
		}
	}
	return w
}

// opensFence reports whether line opens a fenced code block (up to three
// spaces, or any indentation inside a list, then three or more backticks
// without a backtick in the info string, or three or more tildes), and
// with which character and length.
func opensFence(line string, inList bool) (byte, int, bool) {
	if indentWidth(line) >= 4 && !inList {
		return 0, 0, false
	}
	s := strings.TrimLeft(line, " \t")
	if s == "" || s[0] != '`' && s[0] != '~' {
		return 0, 0, false
	}
	n := runLen(s, s[0])
	if n < 3 || s[0] == '`' && strings.IndexByte(s[n:], '`') >= 0 {
		return 0, 0, false
	}
	return s[0], n, true
}

// closesFence reports whether line closes a fence of c repeated n times: up
// to three spaces (any indentation when deep), at least n of c, then only
// white space.
func closesFence(line string, c byte, n int, deep bool) bool {
	if indentWidth(line) >= 4 && !deep {
		return false
	}
	s := strings.TrimLeft(line, " \t")
	m := runLen(s, c)
	return m >= n && strings.TrimSpace(s[m:]) == ""
}

// isListItem reports whether line starts a list item ("- ", "* ", "+ ",
// "1. ", "1) ").
func isListItem(line string) bool {
	s := strings.TrimLeft(line, " ")
	if len(s) >= 2 && (s[0] == '-' || s[0] == '*' || s[0] == '+') && (s[1] == ' ' || s[1] == '\t') {
		return true
	}
	d := 0
	for d < len(s) && d < 9 && s[d] >= '0' && s[d] <= '9' {
		d++
	}
	return d > 0 && d+1 < len(s) && (s[d] == '.' || s[d] == ')') && (s[d+1] == ' ' || s[d+1] == '\t')
}
