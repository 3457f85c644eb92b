package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// isTerminal reports whether v is an *os.File open on a terminal.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok || f == nil {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// colour reports whether output to w may be coloured: w is a terminal,
// NO_COLOR is unset and TERM is not "dumb".
func (a *app) colour(w io.Writer) bool {
	return isTerminal(w) && a.getenv("NO_COLOR") == "" && a.getenv("TERM") != "dumb"
}

const (
	ansiReset = "\x1b[0m"
	ansiBold  = "\x1b[1m"
	ansiRed   = "\x1b[31m"
	ansiGreen = "\x1b[32m"
	ansiCyan  = "\x1b[36m"
)

// isDiff reports whether s looks like a unified diff.
func isDiff(s string) bool {
	return strings.HasPrefix(s, "--- ") || strings.HasPrefix(s, "diff ") || strings.HasPrefix(s, "@@ ") ||
		strings.Contains(s, "\n@@ ")
}

// writeDiff writes a unified diff, coloured when colour is set.
func writeDiff(w io.Writer, diff string, colour bool) {
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
			b.WriteString(ansiBold + body + ansiReset + "\n")
		case strings.HasPrefix(line, "@@"):
			b.WriteString(ansiCyan + body + ansiReset + "\n")
		case strings.HasPrefix(line, "+"):
			b.WriteString(ansiGreen + body + ansiReset + "\n")
		case strings.HasPrefix(line, "-"):
			b.WriteString(ansiRed + body + ansiReset + "\n")
		default:
			b.WriteString(line)
		}
	}
	io.WriteString(w, b.String())
}

// spinnerDelay is how long a call runs before the spinner shows.
const spinnerDelay = 300 * time.Millisecond

// spinner shows a turning wheel and a label on a terminal while a call runs.
// It draws nothing until spinnerDelay has passed. Safe for concurrent use.
type spinner struct {
	w io.Writer

	mu      sync.Mutex // guards the fields below
	label   string
	shown   bool
	stopped bool
	done    chan struct{}
	exited  chan struct{}
}

// startSpinner starts a spinner on w, or returns nil when w is not a terminal.
func startSpinner(w io.Writer, label string) *spinner {
	if !isTerminal(w) {
		return nil
	}
	s := &spinner{w: w, label: label, done: make(chan struct{}), exited: make(chan struct{})}
	go s.run()
	return s
}

func (s *spinner) run() {
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
		fmt.Fprintf(s.w, "\r\x1b[K%s %s", frames[i%len(frames)], s.label)
		s.shown = true
		s.mu.Unlock()
		select {
		case <-s.done:
			return
		case <-tick.C:
		}
	}
}

// SetLabel changes the label.
func (s *spinner) SetLabel(label string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.label = label
	s.mu.Unlock()
}

// Stop stops the spinner and clears its line. It is idempotent.
func (s *spinner) Stop() {
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
	if s.shown {
		io.WriteString(s.w, "\r\x1b[K")
	}
}
