package skill

import (
	"os"
	"strconv"
	"strings"
)

// Vars are the session values a skill body may refer to.
type Vars struct {
	// SessionID is ${TACKLE_SESSION_ID} and ${CLAUDE_SESSION_ID}.
	SessionID string
	// ProjectDir is ${TACKLE_PROJECT_DIR} and ${CLAUDE_PROJECT_DIR}.
	ProjectDir string
	// Effort is ${TACKLE_EFFORT} and ${CLAUDE_EFFORT}.
	Effort string
}

// Render expands a skill's body for one invocation with args (the text
// after the skill's name):
//
//   - $ARGUMENTS is args as given; $ARGUMENTS[N] and $N (0-based) are the
//     Nth word of args split as a shell would (quotes group words);
//     $name and ${name} are the word at the position of name in the
//     skill's `arguments`. When the body uses none of these and args is not
//     empty, "\n\nARGUMENTS: <args>" is appended.
//   - ${TACKLE_SKILL_DIR} / ${CLAUDE_SKILL_DIR} are the skill's directory;
//     ${TACKLE_SESSION_ID} / ${CLAUDE_SESSION_ID}, ${TACKLE_PROJECT_DIR} /
//     ${CLAUDE_PROJECT_DIR} and ${TACKLE_EFFORT} / ${CLAUDE_EFFORT} come
//     from vars; a plugin's skill has ${CLAUDE_PLUGIN_ROOT}, its plugin's
//     directory, and ${CLAUDE_PLUGIN_DATA}, its persistent directory,
//     which is made when a skill names it, as Claude Code makes it
//     (elsewhere both are left as written).
//   - Each !`cmd` (on a line of its own or inline) and each fenced block
//     opened with ```! is replaced by run(cmd), after the substitutions
//     above; inside a command, argument values are shell-quoted. Commands in
//     ordinary fenced code blocks are examples and are left as written, and
//     text that comes from args is never run as a command.
//   - A backslash before a placeholder keeps it literally: \$ARGUMENTS
//     renders as $ARGUMENTS (for skills that document placeholders).
//
// run may be nil: commands are then reported as not run.
func Render(sk *Skill, args string, vars Vars, run func(cmd string) string) string {
	r := &renderer{sk: sk, args: args, words: SplitArgs(args), vars: vars}
	var b strings.Builder
	b.Grow(len(sk.Body) + len(args) + 16)
	for _, seg := range segments(sk.Body) {
		if !seg.cmd {
			b.WriteString(r.subst(seg.text, false))
			continue
		}
		cmd := r.subst(seg.text, true)
		var out string
		if run == nil {
			out = "[!`" + cmd + "` was not run: commands need the tool pipeline]"
		} else {
			out = strings.TrimRight(run(cmd), "\n")
		}
		b.WriteString(out)
		if seg.block {
			b.WriteByte('\n')
		}
	}
	out := b.String()
	if !r.used && strings.TrimSpace(args) != "" {
		out = strings.TrimRight(out, "\n") + "\n\nARGUMENTS: " + args
	}
	return out
}

type renderer struct {
	sk    *Skill
	args  string
	words []string
	vars  Vars
	used  bool // an argument placeholder was substituted
}

func (r *renderer) word(i int, quote bool) string {
	w := ""
	if i >= 0 && i < len(r.words) {
		w = r.words[i]
	}
	if quote {
		return ShellQuote(w)
	}
	return w
}

func (r *renderer) variable(name string) (string, bool) {
	base, ok := strings.CutPrefix(name, "TACKLE_")
	if !ok {
		base, ok = strings.CutPrefix(name, "CLAUDE_")
	}
	if !ok {
		return "", false
	}
	switch base {
	case "SKILL_DIR":
		return r.sk.Dir, true
	case "SESSION_ID":
		return r.vars.SessionID, true
	case "PROJECT_DIR":
		return r.vars.ProjectDir, true
	case "EFFORT":
		return r.vars.Effort, true
	case "PLUGIN_ROOT":
		if r.sk.PluginRoot != "" {
			return r.sk.PluginRoot, true
		}
	case "PLUGIN_DATA":
		if r.sk.PluginRoot != "" && r.sk.PluginData != "" {
			// A failure shows when the skill's commands use it.
			_ = os.MkdirAll(r.sk.PluginData, 0o755)
			return r.sk.PluginData, true
		}
	}
	return "", false
}

func (r *renderer) named(name string) int {
	for i, a := range r.sk.Arguments {
		if a == name {
			return i
		}
	}
	return -1
}

func isIdent(c byte, first bool) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || !first && '0' <= c && c <= '9'
}

// subst replaces the placeholders of s; quote shell-quotes argument values
// (inside a command). A backslash before a placeholder (\$ARGUMENTS, \$0,
// \${CLAUDE_SKILL_DIR}) keeps it as written, without the backslash.
func (r *renderer) subst(s string, quote bool) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], '$')
		if j < 0 {
			b.WriteString(s[i:])
			break
		}
		rest := s[i+j+1:]
		val, n, arg := r.placeholder(rest, quote)
		switch {
		case n > 0 && j > 0 && s[i+j-1] == '\\':
			b.WriteString(s[i : i+j-1])
			b.WriteString(s[i+j : i+j+1+n])
		case n > 0:
			b.WriteString(s[i : i+j])
			b.WriteString(val)
			if arg {
				r.used = true
			}
		default:
			b.WriteString(s[i : i+j+1])
		}
		i += j + 1 + n
	}
	return b.String()
}

// placeholder recognises the placeholder at the start of rest (what follows
// a '$'): its value, its length in rest (0: none) and whether it is an
// argument.
func (r *renderer) placeholder(rest string, quote bool) (val string, n int, arg bool) {
	switch {
	case strings.HasPrefix(rest, "{"):
		if end := strings.IndexByte(rest, '}'); end > 1 {
			name := rest[1:end]
			if v, ok := r.variable(name); ok {
				return v, end + 1, false
			}
			if k := r.named(name); k >= 0 {
				return r.word(k, quote), end + 1, true
			}
		}
	case strings.HasPrefix(rest, "ARGUMENTS["):
		if end := strings.IndexByte(rest, ']'); end > len("ARGUMENTS[") {
			if k, err := strconv.Atoi(rest[len("ARGUMENTS["):end]); err == nil {
				return r.word(k, quote), end + 1, true
			}
		}
	case strings.HasPrefix(rest, "ARGUMENTS") && (len(rest) == len("ARGUMENTS") || !isIdent(rest[len("ARGUMENTS")], false)):
		if quote {
			return ShellQuote(r.args), len("ARGUMENTS"), true
		}
		return r.args, len("ARGUMENTS"), true
	case len(rest) > 0 && '0' <= rest[0] && rest[0] <= '9':
		k := 0
		for k < len(rest) && '0' <= rest[k] && rest[k] <= '9' {
			k++
		}
		i, _ := strconv.Atoi(rest[:k])
		return r.word(i, quote), k, true
	case len(rest) > 0 && isIdent(rest[0], true):
		k := 1
		for k < len(rest) && isIdent(rest[k], false) {
			k++
		}
		if i := r.named(rest[:k]); i >= 0 {
			return r.word(i, quote), k, true
		}
	}
	return "", 0, false
}

// segment is a piece of a body: text, or a command to run.
type segment struct {
	text  string
	cmd   bool
	block bool // a ```! block (its output ends the line)
}

// segments splits a body into text and commands: inline !`cmd` outside
// ordinary fenced code blocks, and ```! blocks.
func segments(body string) []segment {
	var segs []segment
	var text strings.Builder
	flush := func() {
		if text.Len() > 0 {
			segs = append(segs, segment{text: text.String()})
			text.Reset()
		}
	}
	fence := "" // the open ordinary fence, if any
	lines := strings.SplitAfter(body, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		t := strings.TrimSpace(line)
		if fence != "" {
			text.WriteString(line)
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(t, "```!") && strings.TrimSpace(t[4:]) == "" {
			// a command block: up to the closing ```
			var cmd []string
			j := i + 1
			for ; j < len(lines) && strings.TrimSpace(lines[j]) != "```"; j++ {
				cmd = append(cmd, strings.TrimRight(lines[j], "\n"))
			}
			if j < len(lines) {
				flush()
				segs = append(segs, segment{text: strings.Join(cmd, "\n"), cmd: true, block: true})
				i = j
				continue
			}
		}
		if m := fenceOpen(t); m != "" {
			fence = m
			text.WriteString(line)
			continue
		}
		for {
			k := strings.Index(line, "!`")
			if k < 0 {
				break
			}
			end := strings.IndexByte(line[k+2:], '`')
			if end <= 0 {
				break
			}
			text.WriteString(line[:k])
			flush()
			segs = append(segs, segment{text: line[k+2 : k+2+end], cmd: true})
			line = line[k+2+end+1:]
		}
		text.WriteString(line)
	}
	flush()
	return segs
}

// fenceOpen returns the fence (``` or ~~~, possibly longer) that t opens,
// or "".
func fenceOpen(t string) string {
	for _, c := range []string{"`", "~"} {
		if strings.HasPrefix(t, c+c+c) {
			n := len(t) - len(strings.TrimLeft(t, c))
			return strings.Repeat(c, n)
		}
	}
	return ""
}

// SplitArgs splits args into words as a POSIX shell would, without any
// expansion: whitespace separates words, '…' and "…" group them, a
// backslash escapes the next character (inside "…" only before " \ $ `).
// An unclosed quote runs to the end.
func SplitArgs(args string) []string {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(args); i++ {
		c := args[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '\'':
			inWord = true
			end := strings.IndexByte(args[i+1:], '\'')
			if end < 0 {
				w.WriteString(args[i+1:])
				i = len(args)
			} else {
				w.WriteString(args[i+1 : i+1+end])
				i += end + 1
			}
		case c == '"':
			inWord = true
			for i++; i < len(args) && args[i] != '"'; i++ {
				if args[i] == '\\' && i+1 < len(args) && strings.IndexByte("\"\\$`", args[i+1]) >= 0 {
					i++
				}
				w.WriteByte(args[i])
			}
		case c == '\\' && i+1 < len(args):
			inWord = true
			i++
			w.WriteByte(args[i])
		default:
			inWord = true
			w.WriteByte(c)
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// ShellQuote quotes s for a POSIX shell: unchanged when it is made only of
// safe characters, else in single quotes.
func ShellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isIdent(c, false) || strings.IndexByte("@%+=:,./-", c) >= 0) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
