package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"

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

// writeTodos writes a todo list (a JSON array) one task a line, each line
// starting with indent. A list that does not parse is written as it is.
func writeTodos(w io.Writer, raw, indent string, fancy bool) {
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
		b.WriteString(indent + todoMark(t.Status, fancy) + " " + oneLine(t.Content) + "\n")
	}
	io.WriteString(w, b.String())
}

// todoCounts summarises a todo list: "3 todos: 1 completed, 1 in progress, 1 pending".
func todoCounts(raw string) string {
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

// shellState says how a background shell stands: running, exited N, killed.
func shellState(s *tacklev1.BackgroundShell) string {
	if s.GetStatus() == "exited" {
		return fmt.Sprintf("exited %d", s.GetExitCode())
	}
	return s.GetStatus()
}

// shellLine describes a background shell on one line.
func shellLine(s *tacklev1.BackgroundShell) string {
	return fmt.Sprintf("shell %s %s (%s): %s", s.GetId(), shellState(s), byteCount(s.GetOutputBytes()), oneLine(s.GetCommand()))
}

// byteCount formats a size for people: 512 B, 1.5 KiB, 3.0 MiB.
func byteCount(n int64) string {
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

// oneLine cuts s at its first line break, marking the cut.
func oneLine(s string) string {
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
	if d := r.GetDisplay(); d != "" && !isDiff(d) {
		return firstLine(forPeople(d))
	}
	for _, b := range r.GetContent() {
		if b.GetText() != "" {
			return firstLine(forPeople(b.GetText()))
		}
	}
	return ""
}

// summarySuffix is ": SUMMARY" for a result with a summary, else "".
func summarySuffix(r *tacklev1.ToolResult) string {
	if s := resultSummary(r); s != "" {
		return ": " + s
	}
	return ""
}

// writePreview shows what the call of permission request r would do: the
// daemon's preview (a diff in colour when colour is set; other text with
// each line after indent), else, from an older daemon, the input as
// indented JSON.
func writePreview(w io.Writer, r *tacklev1.PermissionRequest, indent string, colour bool) {
	text := r.GetPreview()
	if text == "" {
		text = indentJSON(r.GetInputJson())
	}
	if strings.HasPrefix(text, "--- ") {
		writeDiff(w, text, colour)
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

// reasonLine is a permission request's reason on one line when a preview
// shows the call in full (a Bash reason holds the whole command).
func reasonLine(r *tacklev1.PermissionRequest) string {
	reason := r.GetReason()
	if first, _, multi := strings.Cut(reason, "\n"); multi && r.GetPreview() != "" {
		return first + " …"
	}
	return reason
}

// writeSettingsProblems lists the settings files that do not parse, each
// as "PATH:LINE:COL: MESSAGE" after indent, under a line saying what it
// means.
func writeSettingsProblems(w io.Writer, ps []*tacklev1.SettingsProblem, indent string) {
	if len(ps) == 0 {
		return
	}
	fmt.Fprintf(w, "%s%d settings %s not parse (the last good version, or nothing, is in force until fixed):\n", indent, len(ps), plural(len(ps), "file does", "files do"))
	for _, p := range ps {
		where := p.GetPath()
		if p.GetLine() > 0 {
			where += fmt.Sprintf(":%d:%d", p.GetLine(), p.GetColumn())
		}
		fmt.Fprintf(w, "%s  %s: %s\n", indent, where, p.GetMessage())
	}
}
