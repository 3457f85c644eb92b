// Package render is the one place that turns the daemon's messages into the
// CLI's output: the --json shapes of the CLI contract (shapes.go), text for
// people (todos, results, previews, agent trees, attach lines, live output)
// and terminal handling (diffs, spinner, widths). Commands decide what to
// show; render decides how it looks. Asking for permissions is package
// ask's.
package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// todoItem is one entry of a session's todo list (TodoWrite's shape).
type todoItem struct {
	Content    string `json:"content"`
	Status     string `json:"status"`
	ActiveForm string `json:"activeForm"`
}

// todoMark is the check box of a todo status: ☐ ◐ ☑ on a terminal, else
// [ ] [~] [x].
func todoMark(status string, fancy bool) string {
	marks := map[string][2]string{
		"pending":     {"[ ]", "☐"},
		"in_progress": {"[~]", "◐"},
		"completed":   {"[x]", "☑"},
	}
	m, ok := marks[status]
	if !ok {
		m = [2]string{"[?]", "?"}
	}
	if fancy {
		return m[1]
	}
	return m[0]
}

// WriteTodos writes a todo list (a JSON array) one task a line, each line
// starting with indent. A list that does not parse is written as it is.
func WriteTodos(w io.Writer, raw, indent string, fancy bool) {
	var items []todoItem
	if err := json.Unmarshal([]byte(raw), &items); err != nil {
		fmt.Fprintf(w, "%s%s\n", indent, raw)
		return
	}
	if len(items) == 0 {
		fmt.Fprintf(w, "%s(no todos)\n", indent)
		return
	}
	var b strings.Builder
	for _, t := range items {
		b.WriteString(indent + todoMark(t.Status, fancy) + " " + OneLine(t.Content) + "\n")
	}
	io.WriteString(w, b.String())
}

// TodoCounts summarises a todo list: "3 todos: 1 completed, 1 in progress, 1 pending".
func TodoCounts(raw string) string {
	var items []todoItem
	if json.Unmarshal([]byte(raw), &items) != nil {
		return "todos updated"
	}
	n := map[string]int{}
	for _, t := range items {
		n[t.Status]++
	}
	noun := "todos"
	if len(items) == 1 {
		noun = "todo"
	}
	return fmt.Sprintf("%d %s: %d completed, %d in progress, %d pending", len(items), noun, n["completed"], n["in_progress"], n["pending"])
}

// ShellState says how a background shell stands: running, exited N, killed.
func ShellState(s *tacklev1.BackgroundShell) string {
	if s.GetStatus() == "exited" {
		return fmt.Sprintf("exited %d", s.GetExitCode())
	}
	return s.GetStatus()
}

// ShellLine describes a background shell on one line.
func ShellLine(s *tacklev1.BackgroundShell) string {
	return fmt.Sprintf("shell %s %s (%s): %s", s.GetId(), ShellState(s), ByteCount(s.GetOutputBytes()), OneLine(s.GetCommand()))
}

// ByteCount formats a size for people: 512 B, 1.5 KiB, 3.0 MiB.
func ByteCount(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// OneLine cuts s at its first line break, marking the cut.
func OneLine(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// Text the daemon writes for the model, which people read differently.
const (
	userRejected = "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file)."
	stopAndWait  = " STOP what you are doing and wait for the user to tell you how to proceed."
	userSaid     = " To tell you how to proceed, the user said:\n"
	todoReminder = "Todos have been modified successfully. Ensure that you continue to use the todo list to track your progress. Please proceed with the current tasks if applicable"
	interrupted  = "[Request interrupted by user for tool use]"
)

// modelTagRe matches the tags a result carries for the model only.
var modelTagRe = regexp.MustCompile(`</?tool_use_error>`)

// systemReminderRe matches a <system-reminder> block meant for the model.
var systemReminderRe = regexp.MustCompile(`(?s)\s*<system-reminder>.*?</system-reminder>\s*`)

// forPeople rewrites a result's text meant for the model for a person's
// terminal: no <tool_use_error> tags or system reminders, "denied by the
// user" for the rejection the model is told to stop at, no todo-list
// reminder, nothing for the interruption note of a cancelled call (its
// status says it). --json output keeps the text as the model got it.
func forPeople(text string) string {
	if strings.HasPrefix(text, userRejected) {
		rest := strings.TrimPrefix(text, userRejected)
		switch {
		case strings.HasPrefix(rest, userSaid):
			return "denied by the user: " + strings.TrimPrefix(rest, userSaid)
		case strings.HasPrefix(rest, stopAndWait):
			return "denied by the user" + strings.TrimPrefix(rest, stopAndWait)
		}
		return "denied by the user" + rest
	}
	if strings.TrimSpace(text) == interrupted {
		return "" // the status says "cancelled"
	}
	if strings.HasPrefix(text, todoReminder) {
		return "todos updated" + strings.TrimPrefix(text, todoReminder)
	}
	text = modelTagRe.ReplaceAllString(text, "")
	text = systemReminderRe.ReplaceAllString(text, "\n")
	return strings.TrimLeft(text, "\n")
}

// resultSummary is a short account of a result for one line: its display
// text, else its first text block, rewritten for people.
func resultSummary(r *tacklev1.ToolResult) string {
	if d := r.GetDisplay(); d != "" && !IsDiff(d) {
		return FirstLine(forPeople(d))
	}
	for _, b := range r.GetContent() {
		if b.GetText() != "" {
			return FirstLine(forPeople(b.GetText()))
		}
	}
	return ""
}

// SummarySuffix is ": SUMMARY" for a result with a summary, else "".
func SummarySuffix(r *tacklev1.ToolResult) string {
	if s := resultSummary(r); s != "" {
		return ": " + s
	}
	return ""
}

// WritePreview shows what the call of permission request r would do: the
// daemon's preview (a diff in colour when colour is set; other text with
// each line after indent), else, from an older daemon, the input as
// indented JSON.
func WritePreview(w io.Writer, r *tacklev1.PermissionRequest, indent string, colour bool) {
	text := r.GetPreview()
	if text == "" {
		text = indentJSON(r.GetInputJson())
	}
	if strings.HasPrefix(text, "--- ") {
		WriteDiff(w, text, colour)
		return
	}
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		b.WriteString(indent + line + "\n")
	}
	io.WriteString(w, b.String())
}

// indentJSON is text as indented JSON, or text itself when it is not JSON.
func indentJSON(text string) string {
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(text), "", "  "); err != nil {
		return text
	}
	return b.String()
}

// ReasonLine is a permission request's reason on one line when a preview
// shows the call in full (a Bash reason holds the whole command).
func ReasonLine(r *tacklev1.PermissionRequest) string {
	reason := r.GetReason()
	if first, _, multi := strings.Cut(reason, "\n"); multi && r.GetPreview() != "" {
		return first + " …"
	}
	return reason
}

// WriteSettingsProblems lists the settings files that do not parse, each
// as "PATH:LINE:COL: MESSAGE" after indent, under a line saying what it
// means.
func WriteSettingsProblems(w io.Writer, ps []*tacklev1.SettingsProblem, indent string) {
	if len(ps) == 0 {
		return
	}
	fmt.Fprintf(w, "%s%d settings %s not parse (the last good version, or nothing, is in force until fixed):\n", indent, len(ps), Plural(len(ps), "file does", "files do"))
	for _, p := range ps {
		where := p.GetPath()
		if p.GetLine() > 0 {
			where += fmt.Sprintf(":%d:%d", p.GetLine(), p.GetColumn())
		}
		fmt.Fprintf(w, "%s  %s: %s\n", indent, where, p.GetMessage())
	}
}

// PrintResult prints a result for a person: a diff for edits (coloured on
// a terminal), else the text content; images as a placeholder line. When
// the result is an error its status goes to stderr.
func PrintResult(a *cmdutil.App, r *tacklev1.ToolResult) {
	w := a.Stdout
	if !r.GetIsError() && IsDiff(r.GetDisplay()) {
		WriteDiff(w, r.GetDisplay(), a.Colour(w))
		return
	}
	for _, b := range r.GetContent() {
		switch b.GetType() {
		case "image", "audio":
			fmt.Fprintf(w, "[%s %s, %d bytes]\n", b.GetType(), b.GetMimeType(), len(b.GetData()))
		case "resource_link":
			fmt.Fprintf(w, "[resource link %s] %s\n", b.GetUri(), b.GetText())
		case "resource":
			if len(b.GetData()) > 0 && b.GetText() == "" {
				fmt.Fprintf(w, "[resource %s %s, %d bytes]\n", b.GetUri(), b.GetMimeType(), len(b.GetData()))
				continue
			}
			fmt.Fprintf(w, "[resource %s]\n", b.GetUri())
			text := b.GetText()
			io.WriteString(w, text)
			if text != "" && !strings.HasSuffix(text, "\n") {
				io.WriteString(w, "\n")
			}
		default:
			text := forPeople(b.GetText())
			io.WriteString(w, text)
			if text != "" && !strings.HasSuffix(text, "\n") {
				io.WriteString(w, "\n")
			}
		}
	}
	if r.GetIsError() {
		fmt.Fprintf(a.Stderr, "tackle: %s %s\n", r.GetName(), r.GetStatus())
	}
}

// McpAuthLine is how a terminal shows a step of an MCP server's OAuth flow.
func McpAuthLine(m *tacklev1.McpAuth) string {
	switch m.GetState() {
	case "required":
		return fmt.Sprintf("MCP server %q needs authorisation: open %s (or run tackle mcp login %s)", m.GetServer(), m.GetUrl(), m.GetServer())
	case "authorized":
		return fmt.Sprintf("MCP server %q is authorised", m.GetServer())
	default:
		return fmt.Sprintf("MCP server %q: authorisation failed: %s", m.GetServer(), m.GetError())
	}
}

// Clip shortens s to n runes with an ellipsis.
func Clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// PrintTrust tells what an untrusted project's settings lose (and what a
// trusted one's lose without the person's consent).
func PrintTrust(a *cmdutil.App, t *tacklev1.TrustInfo) {
	if t == nil {
		return
	}
	if t.GetTrusted() {
		if len(t.GetIgnored()) > 0 {
			fmt.Fprintf(a.Stdout, "  project %s is trusted; ignored: %s\n", t.GetDir(), strings.Join(t.GetIgnored(), "; "))
		}
		return
	}
	if len(t.GetIgnored()) == 0 {
		fmt.Fprintf(a.Stdout, "  project %s is not trusted (it sets nothing that needs trust)\n", t.GetDir())
		return
	}
	fmt.Fprintf(a.Stdout, "  project %s is not trusted; ignored until it is: %s\n  to trust it: %s\n",
		t.GetDir(), strings.Join(t.GetIgnored(), "; "), t.GetHint())
}

// MainArgument is the argument a tool line shows: the path, command,
// pattern or URL of the call (cut to 80 characters).
func MainArgument(inputJSON string) string {
	var in map[string]any
	if json.Unmarshal([]byte(inputJSON), &in) != nil {
		return ""
	}
	for _, k := range []string{"file_path", "command", "pattern", "url", "path", "query", "skill", "description"} {
		if s, ok := in[k].(string); ok && s != "" {
			s = strings.ReplaceAll(s, "\n", " ")
			if len(s) > 80 {
				s = s[:77] + "…"
			}
			return s
		}
	}
	return ""
}

// ModeName is m, or "default" for the empty permission mode.
func ModeName(m string) string {
	if m == "" {
		return "default"
	}
	return m
}

// Plural is one when n is 1, else many.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// FirstLine returns the first line of s, cut at 80 characters.
func FirstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > 80 {
		s = string(r[:79]) + "…"
	}
	return s
}
