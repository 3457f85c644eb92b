package shell

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tackle-agent/tackle/daemon/tool"
)

const (
	// progressMaxBytes bounds the text of one progress call.
	progressMaxBytes = 8 << 10
	// progressInterval spaces progress calls: at most 20 a second.
	progressInterval = 50 * time.Millisecond
	// noteRoom is kept free in a result for the notes after the output.
	noteRoom = 1000
	// resultCeiling keeps a result under the pipeline's own persistence
	// threshold (50,000 characters), so it is never persisted twice.
	resultCeiling = 48000
)

// limits are the sizes derived from the result cap.
type limits struct {
	maxChars int // output up to this many characters is returned whole
	memMax   int // bytes kept whole in memory before spilling to a file
	headMax  int // bytes of head shown when over the cap
	tailMax  int // bytes of tail shown when over the cap
}

func newLimits(maxChars int) limits {
	maxChars = min(maxChars, resultCeiling-noteRoom)
	half := max(maxChars/2-100, 1)
	return limits{maxChars: maxChars, memMax: 4 * maxChars, headMax: half, tailMax: half}
}

// collector takes a command's output as it comes: it keeps it whole up to
// memMax bytes, then writes everything to a file and keeps only the head
// and a ring of the tail, so its memory is bounded whatever the volume. It
// also forwards the output to a progress callback, throttled. write and
// finish are called from one goroutine; the progress timer may run
// concurrently with them.
type collector struct {
	lim      limits
	openFile func() (*os.File, error) // creates the spill file

	all      []byte // everything, until spilled
	head     []byte // after spilling: the first headMax bytes
	tail     ring   // after spilling: the last tailMax bytes
	spilled  bool
	total    int64
	newlines int64
	file     *os.File
	path     string
	fileErr  error
	// where, if set, replaces the sentence naming the spill file (a
	// collector without openFile writes no file).
	where string
	// linesUnknown is set when bytes were skipped unseen (skip).
	linesUnknown bool

	prog progressThrottle
}

func newCollector(lim limits, openFile func() (*os.File, error), progress tool.Progress) *collector {
	c := &collector{lim: lim, openFile: openFile}
	c.prog.fn = progress
	return c
}

// write takes the next chunk of output. p is not retained.
func (c *collector) write(p []byte) {
	if len(p) == 0 {
		return
	}
	c.total += int64(len(p))
	c.newlines += int64(bytes.Count(p, []byte{'\n'}))
	c.prog.add(p)
	if !c.spilled {
		if len(c.all)+len(p) <= c.lim.memMax {
			c.all = append(c.all, p...)
			return
		}
		c.spill()
	}
	if room := c.lim.headMax - len(c.head); room > 0 {
		// The chunk that overflowed memory may be the first one (a read
		// larger than memMax): the head still comes from it.
		c.head = append(c.head, p[:min(room, len(p))]...)
	}
	c.tail.write(p)
	c.writeFile(p)
}

// spill moves the output so far to the file, the head and the tail ring.
func (c *collector) spill() {
	c.spilled = true
	c.head = append([]byte(nil), c.all[:min(len(c.all), c.lim.headMax)]...)
	c.tail = newRing(c.lim.tailMax)
	c.tail.write(c.all)
	if c.openFile != nil {
		c.file, c.fileErr = c.openFile()
		if c.fileErr == nil {
			c.path = c.file.Name()
		}
	}
	c.writeFile(c.all)
	c.all = nil
}

func (c *collector) writeFile(p []byte) {
	if c.file == nil || c.fileErr != nil {
		return
	}
	if _, err := c.file.Write(p); err != nil {
		c.fileErr = fmt.Errorf("writing %s: %w", c.path, err)
	}
}

// output is what finish returns.
type output struct {
	// Text is the whole output, or its head and tail with a note between.
	Text string
	// Path is the file that holds the whole output ("" when Text is whole).
	Path  string
	Total int64
	Lines int64
}

// finish flushes the progress, closes the file and returns the result text:
// the whole output (invalid UTF-8 replaced) when it is within the cap, else
// head and tail with the file's path.
func (c *collector) finish() output {
	c.prog.close()
	lines := c.newlines
	if c.total > 0 && c.lastByte() != '\n' {
		lines++
	}
	if !c.spilled {
		text := sanitize(c.all)
		if utf8.RuneCountInString(text) <= c.lim.maxChars {
			return output{Text: text, Total: c.total, Lines: lines}
		}
		c.spill()
	}
	if c.file != nil {
		if err := c.file.Close(); err != nil && c.fileErr == nil {
			c.fileErr = fmt.Errorf("writing %s: %w", c.path, err)
		}
	}
	head := cutHead(c.head, c.lim.headMax)
	tail := cutTail(c.tail.bytes(), c.lim.tailMax)
	omitted := c.total - int64(len(head)) - int64(len(tail))
	var where string
	switch {
	case c.where != "":
		where = c.where
	case c.fileErr != nil:
		where = fmt.Sprintf("Saving the whole output failed (%v): only the first and last parts are available.", c.fileErr)
	case c.file == nil:
		where = "Only the first and last parts are available."
	default:
		where = fmt.Sprintf("The whole output is in %s: use Read with offset and limit, or Grep, to see the rest.", c.path)
	}
	var sb strings.Builder
	if c.linesUnknown {
		fmt.Fprintf(&sb, "Output too large: %d bytes; the first and last parts are shown. %s\n\n", c.total, where)
	} else {
		fmt.Fprintf(&sb, "Output too large: %d bytes in %d lines; the first and last parts are shown. %s\n\n", c.total, lines, where)
	}
	sb.WriteString(sanitize(head))
	fmt.Fprintf(&sb, "\n\n[... %d bytes omitted ...]\n\n", omitted)
	sb.WriteString(sanitize(tail))
	out := output{Text: sb.String(), Total: c.total, Lines: lines}
	if c.fileErr == nil {
		out.Path = c.path
	}
	return out
}

// skip takes output of which only the head and the tail are seen, with n
// bytes between them: the result shows head and tail.
func (c *collector) skip(head []byte, n int64, tail []byte) {
	c.write(head)
	if !c.spilled {
		c.spill()
	}
	c.total += n
	c.linesUnknown = true
	c.tail.write(tail)
	c.total += int64(len(tail))
	c.prog.add(tail)
}

func (c *collector) lastByte() byte {
	if !c.spilled {
		if len(c.all) == 0 {
			return 0
		}
		return c.all[len(c.all)-1]
	}
	return c.tail.last()
}

// sanitize returns b as a string with invalid UTF-8 replaced by U+FFFD.
func sanitize(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// cutHead returns at most n bytes of b's start, ended at a line end when
// one is in the second half, else at a rune boundary.
func cutHead(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	cut := n
	for cut > 0 && cut > n-utf8.UTFMax && !utf8.RuneStart(b[cut]) {
		cut--
	}
	b = b[:cut]
	if i := bytes.LastIndexByte(b, '\n'); i >= n/2 {
		b = b[:i+1]
	}
	return b
}

// cutTail returns at most n bytes of b's end, started after a line end when
// one is in the first half, else at a rune boundary.
func cutTail(b []byte, n int) []byte {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	if i := bytes.IndexByte(b, '\n'); i >= 0 && i < len(b)/2 && i < len(b)-1 {
		b = b[i+1:]
	}
	return b
}

// ring keeps the last len(buf) bytes written.
type ring struct {
	buf  []byte
	pos  int // where the next byte goes
	full bool
}

func newRing(n int) ring { return ring{buf: make([]byte, n)} }

func (r *ring) write(p []byte) {
	n := len(r.buf)
	if n == 0 {
		return
	}
	if len(p) >= n {
		copy(r.buf, p[len(p)-n:])
		r.pos, r.full = 0, true
		return
	}
	k := copy(r.buf[r.pos:], p)
	if k < len(p) {
		r.pos = copy(r.buf, p[k:])
		r.full = true
		return
	}
	r.pos += k
	if r.pos == n {
		r.pos, r.full = 0, true
	}
}

// bytes returns the kept bytes, oldest first (a new slice).
func (r *ring) bytes() []byte {
	if !r.full {
		return append([]byte(nil), r.buf[:r.pos]...)
	}
	out := make([]byte, 0, len(r.buf))
	out = append(out, r.buf[r.pos:]...)
	return append(out, r.buf[:r.pos]...)
}

func (r *ring) last() byte {
	switch {
	case r.pos > 0:
		return r.buf[r.pos-1]
	case r.full:
		return r.buf[len(r.buf)-1]
	}
	return 0
}

// progressThrottle forwards output to a tool.Progress at most every
// progressInterval and at most progressMaxBytes a call; what arrives faster
// is dropped from the front (progress is droppable), marked in the text.
// Runes split across chunks are held back until complete.
type progressThrottle struct {
	fn tool.Progress

	mu      sync.Mutex // guards the fields below
	pending []byte
	dropped bool
	last    time.Time
	timer   *time.Timer
	closed  bool
}

func (t *progressThrottle) add(p []byte) {
	if t.fn == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	if len(t.pending)+len(p) <= progressMaxBytes {
		t.pending = append(t.pending, p...)
	} else {
		t.dropped = true
		if len(p) >= progressMaxBytes {
			t.pending = append(t.pending[:0], p[len(p)-progressMaxBytes:]...)
		} else {
			drop := len(t.pending) + len(p) - progressMaxBytes
			t.pending = append(append(t.pending[:0], t.pending[drop:]...), p...)
		}
		for i := 0; i < utf8.UTFMax-1 && len(t.pending) > 0 && !utf8.RuneStart(t.pending[0]); i++ {
			t.pending = t.pending[1:]
		}
	}
	if wait := progressInterval - time.Since(t.last); wait > 0 {
		if t.timer == nil {
			t.timer = time.AfterFunc(wait, t.tick)
		}
		return
	}
	t.emitLocked(false)
}

func (t *progressThrottle) tick() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.timer = nil
	if !t.closed {
		t.emitLocked(false)
	}
}

// emitLocked sends the pending text; unless final, an incomplete rune at
// its end waits for the next chunk.
func (t *progressThrottle) emitLocked(final bool) {
	p := t.pending
	keep := 0
	if !final {
		keep = incompleteSuffix(p)
	}
	send := p[:len(p)-keep]
	if len(send) == 0 {
		return
	}
	text := sanitize(send)
	if t.dropped {
		text = "[... output skipped ...]\n" + text
		t.dropped = false
	}
	t.pending = append(t.pending[:0], p[len(p)-keep:]...)
	t.last = time.Now()
	t.fn(text)
}

// close sends what is pending and stops the timer.
func (t *progressThrottle) close() {
	if t.fn == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	if !t.closed {
		t.emitLocked(true)
		t.closed = true
	}
}

// incompleteSuffix is the length of a truncated UTF-8 sequence at the end of p.
func incompleteSuffix(p []byte) int {
	for i := 1; i < utf8.UTFMax && i <= len(p); i++ {
		b := p[len(p)-i]
		if utf8.RuneStart(b) {
			if b >= 0x80 && !utf8.FullRune(p[len(p)-i:]) {
				return i
			}
			return 0
		}
	}
	return 0
}
