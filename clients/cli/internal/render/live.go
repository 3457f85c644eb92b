package render

import (
	"fmt"
	"strings"
	"time"

	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// liveOutputMaxLine cuts a streamed output line for the terminal.
const liveOutputMaxLine = 400

// LiveOutput turns the call_progress text of running calls into whole
// lines to print as they come ("  │ LINE"), one partial line kept per
// call until its line break or its result.
type LiveOutput struct {
	partial map[string]string // call id → text after its last line break
	seen    map[string]bool   // calls that streamed something
}

// Add takes a call_progress event and returns the lines it completes.
func (l *LiveOutput) Add(e *tacklev1.Event) []string {
	if l.partial == nil {
		l.partial, l.seen = map[string]string{}, map[string]bool{}
	}
	id := e.GetCallId()
	l.seen[id] = true
	text := strings.ReplaceAll(l.partial[id]+e.GetText(), "\r\n", "\n")
	parts := strings.Split(text, "\n")
	l.partial[id] = parts[len(parts)-1]
	var out []string
	for _, p := range parts[:len(parts)-1] {
		out = append(out, liveLine(p))
	}
	return out
}

// End returns the call's last partial line (if any) when its result
// comes, and whether the call streamed output.
func (l *LiveOutput) End(callID string) (rest []string, streamed bool) {
	if p := l.partial[callID]; p != "" {
		rest = []string{liveLine(p)}
	}
	streamed = l.seen[callID]
	delete(l.partial, callID)
	delete(l.seen, callID)
	return rest, streamed
}

// liveLine is one output line as printed: the last state of a line a
// carriage return rewrites, cut to liveOutputMaxLine runes.
func liveLine(s string) string {
	if i := strings.LastIndexByte(s, '\r'); i >= 0 {
		s = s[i+1:]
	}
	return "  │ " + cutWidth(s, liveOutputMaxLine)
}

// longCall is how long a call runs before its result line says so.
const longCall = time.Second

// ResultTiming is " (4.2s)" for a call that took longCall or more, or
// streamed output; "" otherwise.
func ResultTiming(r *tacklev1.ToolResult, streamed bool) string {
	d := time.Duration(r.GetDurationMs()) * time.Millisecond
	if d < longCall && !streamed {
		return ""
	}
	return fmt.Sprintf(" (%s)", elapsed(d))
}
