package search

import (
	"bytes"
	"strconv"
)

// maxColumns is the line length (in bytes, with its line end) over which
// a line is replaced by a marker, as rg --max-columns 500 does.
const maxColumns = 500

// printer renders the content-mode output of one file, ripgrep style:
// "path:N:text" for matching lines, "path-N-text" for context lines and
// "--" between groups that are not adjacent.
type printer struct {
	dst          []byte
	path         string    // computed from file on first use
	file         *walkFile // the file being printed
	text         []byte
	finalNL      bool // text's last line ended with "\n" (cut off)
	m            *matcher
	lineNumbers  bool
	before       int
	after        int
	onlyMatching bool

	countPos, countLine int // line number of the line starting at countPos
	printedEnd          int // start of the first line not printed yet
	printedLine         int // its line number
	printedAny          bool
	afterLeft           int
}

func (p *printer) reset(dst []byte, file *walkFile, text []byte, finalNL bool) {
	*p = printer{dst: dst, file: file, text: text, finalNL: finalNL, m: p.m, lineNumbers: p.lineNumbers,
		before: p.before, after: p.after, onlyMatching: p.onlyMatching, countLine: 1}
}

// tooLong reports whether the line [ls, le) is over maxColumns with its
// line end, as ripgrep counts.
func (p *printer) tooLong(ls, le int) bool {
	n := le - ls
	if le < len(p.text) || p.finalNL {
		n++
	}
	return n > maxColumns
}

// lineNo returns the line number of the line holding ls, usually its
// start (non-decreasing calls).
func (p *printer) lineNo(ls int) int {
	if ls > p.countPos {
		p.countLine += bytes.Count(p.text[p.countPos:ls], []byte{'\n'})
		p.countPos = ls
	}
	return p.countLine
}

// lineEnd returns the end (excluding "\n") of the line starting at ls.
func (p *printer) lineEnd(ls int) int {
	if i := bytes.IndexByte(p.text[ls:], '\n'); i >= 0 {
		return ls + i
	}
	return len(p.text)
}

func (p *printer) prefix(sep byte, n int) {
	if p.path == "" {
		p.path = p.file.abs()
	}
	p.dst = append(p.dst, p.path...)
	p.dst = append(p.dst, sep)
	if p.lineNumbers {
		p.dst = strconv.AppendInt(p.dst, int64(n), 10)
		p.dst = append(p.dst, sep)
	}
}

func (p *printer) contextLine(ls, le, n int) {
	p.prefix('-', n)
	if p.tooLong(ls, le) {
		p.dst = append(p.dst, "[Omitted long context line]"...)
	} else {
		p.dst = append(p.dst, p.text[ls:le]...)
	}
	p.dst = append(p.dst, '\n')
}

func (p *printer) matchLine(ls, le, n int) {
	p.prefix(':', n)
	if p.tooLong(ls, le) {
		k := p.m.countMatches(p.text[ls:le])
		if k == 0 {
			k = 1
		}
		p.dst = append(p.dst, "[Omitted long line with "...)
		p.dst = strconv.AppendInt(p.dst, int64(k), 10)
		if k == 1 {
			p.dst = append(p.dst, " match]"...)
		} else {
			p.dst = append(p.dst, " matches]"...)
		}
	} else {
		p.dst = append(p.dst, p.text[ls:le]...)
	}
	p.dst = append(p.dst, '\n')
}

// flushAfter prints pending after-context lines that start before limit.
func (p *printer) flushAfter(limit int) {
	for p.afterLeft > 0 && p.printedEnd <= len(p.text) && p.printedEnd < limit {
		le := p.lineEnd(p.printedEnd)
		p.contextLine(p.printedEnd, le, p.printedLine)
		p.printedEnd, p.printedLine = le+1, p.printedLine+1
		p.afterLeft--
	}
}

// match prints the matching lines from the line starting at ls to the line
// ending at le (several lines for a multiline match) with their context.
// Calls come in order; lines already printed are skipped.
func (p *printer) match(ls, le int) {
	if p.printedAny && ls < p.printedEnd {
		if le < p.printedEnd {
			return
		}
		ls = p.printedEnd
	}
	n := p.lineNo(ls)
	if p.printedAny {
		p.flushAfter(ls)
	}
	start, k := ls, 0
	low := 0
	if p.printedAny {
		low = p.printedEnd
	}
	for k < p.before && start > low {
		start = bytes.LastIndexByte(p.text[:start-1], '\n') + 1
		k++
	}
	if p.printedAny && start > p.printedEnd && (p.before > 0 || p.after > 0) {
		p.dst = append(p.dst, "--\n"...)
	}
	for i := 0; start < ls; i++ {
		e := p.lineEnd(start)
		p.contextLine(start, e, n-k+i)
		start = e + 1
	}
	for {
		e := p.lineEnd(ls)
		if p.onlyMatching {
			p.onlyMatches(ls, e, n)
		} else {
			p.matchLine(ls, e, n)
		}
		ls, n = e+1, n+1
		if e >= le {
			break
		}
	}
	p.printedEnd, p.printedLine, p.printedAny, p.afterLeft = ls, n, true, p.after
}

// printed reports whether the match [s, e) lies in lines already printed,
// so that match would skip it.
func (p *printer) printed(s, e int) bool {
	return p.printedAny && max(s, e-1) < p.printedEnd
}

// onlyMatches prints each match in one line as "path:N:match"; an empty
// match (of ^$ on an empty line) too, as ripgrep does.
func (p *printer) onlyMatches(ls, le, n int) {
	p.m.eachMatch(p.text[ls:le], func(s, e int) {
		p.prefix(':', n)
		p.dst = append(p.dst, p.text[ls+s:ls+e]...)
		p.dst = append(p.dst, '\n')
	})
}

// multilineOnly prints a multiline match's text, one output line per line.
func (p *printer) multilineOnly(s, e int) {
	n := p.lineNo(s) // s's line, without looking for its start
	for _, part := range bytes.Split(p.text[s:e], []byte{'\n'}) {
		if len(part) > 0 {
			p.prefix(':', n)
			p.dst = append(p.dst, part...)
			p.dst = append(p.dst, '\n')
		}
		n++
	}
}

// finish prints the trailing after-context.
func (p *printer) finish() {
	if p.printedAny {
		p.flushAfter(len(p.text) + 1)
	}
}

// spanOf returns the bounds of the lines a match [s,e) covers.
func spanOf(text []byte, s, e int) (int, int) {
	ls, le := lineBounds(text, s)
	if e-1 > s {
		_, le = lineBounds(text, e-1)
	}
	return ls, le
}
