package render

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
	"golang.org/x/sys/unix"
)

// The ANSI escapes the CLI writes on a terminal with colour.
const (
	AnsiReset = "\x1b[0m"
	AnsiBold  = "\x1b[1m"
	AnsiRed   = "\x1b[31m"
	AnsiGreen = "\x1b[32m"
	AnsiCyan  = "\x1b[36m"
)

// IsDiff reports whether s looks like a unified diff.
func IsDiff(s string) bool {
	return strings.HasPrefix(s, "--- ") || strings.HasPrefix(s, "diff ") || strings.HasPrefix(s, "@@ ") ||
		strings.Contains(s, "\n@@ ")
}

// WriteDiff writes a unified diff, coloured when colour is set.
func WriteDiff(w io.Writer, diff string, colour bool) {
	if !strings.HasSuffix(diff, "\n") {
		diff += "\n"
	}
	if !colour {
		io.WriteString(w, diff)
		return
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(diff, "\n") {
		if line == "" {
			continue
		}
		body := strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, "+++ "), strings.HasPrefix(line, "--- "), strings.HasPrefix(line, "diff "):
			b.WriteString(AnsiBold + body + AnsiReset + "\n")
		case strings.HasPrefix(line, "@@"):
			b.WriteString(AnsiCyan + body + AnsiReset + "\n")
		case strings.HasPrefix(line, "+"):
			b.WriteString(AnsiGreen + body + AnsiReset + "\n")
		case strings.HasPrefix(line, "-"):
			b.WriteString(AnsiRed + body + AnsiReset + "\n")
		default:
			b.WriteString(line)
		}
	}
	io.WriteString(w, b.String())
}

// spinnerDelay is how long a call runs before the spinner shows.
const spinnerDelay = 300 * time.Millisecond

// spinnerTailLines is how many of the last output lines the spinner shows
// under its label.
const spinnerTailLines = 8

// Spinner shows a turning wheel, a label and the time since start on a
// terminal while a call runs, and under it the last lines of the call's
// output, redrawn in place. It draws nothing until spinnerDelay has
// passed. Safe for concurrent use.
type Spinner struct {
	w     io.Writer
	width int // the terminal's columns

	mu      sync.Mutex // guards the fields below
	label   string
	start   time.Time
	tail    []string // the last output lines (at most spinnerTailLines)
	partial string   // output after the last line break
	drawn   int      // lines drawn by the last frame
	stopped bool
	done    chan struct{}
	exited  chan struct{}
}

// StartSpinner starts a spinner on w, or returns nil when w is not a terminal.
func StartSpinner(w io.Writer, label string) *Spinner {
	if !cmdutil.IsTerminal(w) {
		return nil
	}
	s := &Spinner{w: w, width: termWidth(w), label: label, start: time.Now(), done: make(chan struct{}), exited: make(chan struct{})}
	go s.run()
	return s
}

// termWidth is the number of columns of the terminal w, 80 when unknown.
func termWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			return int(ws.Col)
		}
	}
	return 80
}

func (s *Spinner) run() {
	defer close(s.exited)
	frames := []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}
	delay := time.NewTimer(spinnerDelay)
	defer delay.Stop()
	select {
	case <-s.done:
		return
	case <-delay.C:
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		s.mu.Lock()
		if s.stopped {
			s.mu.Unlock()
			return
		}
		s.draw(frames[i%len(frames)])
		s.mu.Unlock()
		select {
		case <-s.done:
			return
		case <-tick.C:
		}
	}
}

// draw redraws the spinner's lines in place; s.mu is held.
func (s *Spinner) draw(frame string) {
	var b strings.Builder
	if s.drawn > 1 {
		fmt.Fprintf(&b, "\x1b[%dA", s.drawn-1)
	}
	b.WriteString("\r\x1b[J")
	head := frame + " " + s.label
	if el := time.Since(s.start); el >= time.Second {
		head += " (" + elapsed(el) + ")"
	}
	b.WriteString(cutWidth(head, s.width-1))
	lines := s.tail
	if s.partial != "" {
		lines = append(append([]string(nil), s.tail...), s.partial)
		if len(lines) > spinnerTailLines {
			lines = lines[len(lines)-spinnerTailLines:]
		}
	}
	for _, l := range lines {
		b.WriteString("\n" + cutWidth("  │ "+l, s.width-1))
	}
	s.drawn = 1 + len(lines)
	io.WriteString(s.w, b.String())
}

// elapsed is d for people: "4.2s" under a minute, else "3m05s".
func elapsed(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}

// cutWidth cuts s to at most n runes (a terminal line: no wrapping, which
// would break redrawing in place), without control characters.
func cutWidth(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\t':
			return ' '
		case r < ' ' || r == 0x7f:
			return -1
		}
		return r
	}, s)
	if r := []rune(s); len(r) > n && n > 1 {
		return string(r[:n-1]) + "…"
	}
	return s
}

// SetLabel changes the label.
func (s *Spinner) SetLabel(label string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.label = label
	s.mu.Unlock()
}

// SetStart sets the time the elapsed time counts from (the call's start,
// when the spinner is restarted after a prompt).
func (s *Spinner) SetStart(t time.Time) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.start = t
	s.mu.Unlock()
}

// Output adds text a call wrote to the lines shown under the label.
func (s *Spinner) Output(text string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	text = strings.ReplaceAll(s.partial+text, "\r\n", "\n")
	lines := strings.Split(text, "\n")
	s.partial = lines[len(lines)-1]
	for _, l := range lines[:len(lines)-1] {
		// A carriage return rewrites the line (progress bars): keep its last state.
		if i := strings.LastIndexByte(l, '\r'); i >= 0 {
			l = l[i+1:]
		}
		s.tail = append(s.tail, l)
	}
	if len(s.tail) > spinnerTailLines {
		s.tail = append(s.tail[:0], s.tail[len(s.tail)-spinnerTailLines:]...)
	}
	if i := strings.LastIndexByte(s.partial, '\r'); i >= 0 {
		s.partial = s.partial[i+1:]
	}
}

// Stop stops the spinner and clears its line. It is idempotent.
func (s *Spinner) Stop() {
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.stopped = true
	close(s.done)
	s.mu.Unlock()
	<-s.exited
	if s.drawn > 0 {
		up := ""
		if s.drawn > 1 {
			up = fmt.Sprintf("\x1b[%dA", s.drawn-1)
		}
		io.WriteString(s.w, up+"\r\x1b[J")
	}
}
