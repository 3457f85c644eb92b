package search

import "bytes"

// byteFreq estimates each byte's share of source code and text (roughly as
// in Go's source tree). It only ranks candidates — the prefilter's byte
// class runs, the rarest byte of a literal to search for first (as
// ripgrep's memchr heuristics do) — so it need not be exact.
var byteFreq = func() [256]float64 {
	var f [256]float64
	for c := range f {
		f[c] = 1 // control bytes, non-ASCII
	}
	for c := 'A'; c <= 'Z'; c++ {
		f[c] = 40
	}
	for _, c := range "ESTRNIAOCLD" {
		f[c] = 100
	}
	for c := '0'; c <= '9'; c++ {
		f[c] = 50
	}
	for c, n := range map[byte]float64{
		'e': 500, 't': 400, 'a': 330, 'r': 330, 'n': 320, 'o': 300, 'i': 300, 's': 270, 'c': 200,
		'l': 190, 'd': 160, 'f': 160, 'u': 140, 'p': 130, 'x': 110, 'h': 100, 'm': 100, 'g': 100,
		'b': 80, 'y': 40, 'v': 40, 'w': 25, 'k': 20, 'j': 10, 'q': 10, 'z': 10,
		'0': 250, '1': 130, '2': 100,
		' ': 1600, '\t': 320, ',': 200, '.': 150, '(': 120, ')': 120, '/': 120, '"': 110, '_': 110,
		'=': 80, ':': 80, '*': 40, '-': 40, '{': 40, '}': 40, ';': 20, '[': 15, ']': 15, '+': 15,
		'|': 15, '\\': 15, '\'': 10, '&': 10, '<': 10, '>': 10, '!': 10, '#': 5, '%': 5, '$': 5,
		'\n': 300, '\r': 5, '`': 2, '@': 1, '?': 1, '^': 1, '~': 1,
	} {
		f[c] = n
	}
	total := 0.0
	for _, n := range f {
		total += n
	}
	for c := range f {
		f[c] /= total
	}
	return f
}()

// rareIndex returns the position of the rarest byte of lit.
func rareIndex(lit []byte) int {
	best := 0
	for i, c := range lit {
		if byteFreq[c] < byteFreq[lit[best]] {
			best = i
		}
	}
	return best
}

// indexRare finds lit in s by scanning for its byte at position k (the
// rarest one) and comparing around each candidate.
func indexRare(s, lit []byte, k int) int {
	if len(lit) <= 1 {
		return bytes.Index(s, lit)
	}
	c := lit[k]
	for pos := k; pos < len(s); {
		j := bytes.IndexByte(s[pos:], c)
		if j < 0 {
			return -1
		}
		start := pos + j - k
		if start+len(lit) <= len(s) && string(s[start:start+len(lit)]) == string(lit) {
			return start
		}
		pos += j + 1
	}
	return -1
}
