package search

import "bytes"

// byteRank estimates how common a byte is in source code and text (higher
// is more common). Searching for the rarest byte of a literal first keeps
// the number of false candidates low, as ripgrep's memchr heuristics do.
var byteRank = func() [256]uint8 {
	var r [256]uint8
	for i := range r {
		r[i] = 60 // control bytes, non-ASCII
	}
	for c := 'A'; c <= 'Z'; c++ {
		r[c] = 120
	}
	for _, c := range "ESTRNIAOCLD" {
		r[c] = 130
	}
	for c := '0'; c <= '9'; c++ {
		r[c] = 160
	}
	r['0'], r['1'], r['2'] = 170, 170, 165
	lower := "etaoinsrlhcdumpfgwybvkxjqz" // most to least common
	for i, c := range lower {
		r[c] = uint8(250 - 4*i)
	}
	for c, v := range map[byte]uint8{
		' ': 255, '\n': 235, '\t': 215, '.': 200, '(': 195, ')': 195, '"': 185, ',': 190, '=': 185,
		'_': 175, '/': 180, '*': 160, '{': 160, '}': 160, '-': 175, ':': 175, ';': 150, '[': 150,
		']': 150, '\'': 150, '&': 140, '<': 140, '>': 140, '!': 130, '+': 140, '#': 125, '%': 120,
		'|': 120, '\\': 120, '$': 110, '@': 100, '?': 110, '^': 90, '~': 80, '`': 100, '\r': 100,
	} {
		r[c] = v
	}
	return r
}()

// rareIndex returns the position of the rarest byte of lit.
func rareIndex(lit []byte) int {
	best := 0
	for i, c := range lit {
		if byteRank[c] < byteRank[lit[best]] {
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
