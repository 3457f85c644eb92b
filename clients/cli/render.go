package cli

import (
	"encoding/json"
	"fmt"
	"io"
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
