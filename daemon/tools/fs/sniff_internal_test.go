package fs

import (
	"math/rand/v2"
	"net/http"
	"testing"
)

// TestImageTypeIsDetectContentTypes: imageType answers what
// net/http.DetectContentType does for the four image types Read shows, for
// heads that start with any signature DetectContentType knows (whole, cut
// short, with random bytes after) and for random heads made of their bytes.
func TestImageTypeIsDetectContentTypes(t *testing.T) {
	want := func(head []byte) string {
		switch mime := http.DetectContentType(head); mime {
		case "image/png", "image/jpeg", "image/gif", "image/webp":
			return mime
		}
		return ""
	}
	sigs := []string{
		"\x89PNG\r\n\x1a\n", "\xff\xd8\xff", "GIF87a", "GIF89a", "RIFF\x10\x20\x30\x40WEBPVP8 ",
		"RIFF\x00\x00\x00\x00WEBPVP", "RIFF\x00\x00\x00\x00WAVE", "RIFF\x00\x00\x00\x00AVI ",
		"\x00\x00\x01\x00", "\x00\x00\x02\x00", "BM", "%PDF-", "%!PS-Adobe-", "\xfe\xff", "\xff\xfe", "\xef\xbb\xbf",
		"<!DOCTYPE HTML", " \n<html>", "<?xml", "OggS\x00", "PK\x03\x04", "\x1f\x8b\x08", "wOFF", "\x00asm",
		"FORM\x00\x00\x00\x00AIFF", "ID3", "\x1a\x45\xdf\xa3", "Rar!\x1a\x07\x00", "\x00\x00\x00\x18ftypmp42",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	tail := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return b
	}
	var heads [][]byte
	for _, s := range sigs {
		for cut := 0; cut <= len(s); cut++ {
			heads = append(heads, []byte(s[:cut]))
			for range 20 {
				heads = append(heads, append([]byte(s[:cut]), tail(rng.IntN(600))...))
			}
		}
	}
	alphabet := []byte("\x00\x01\x02\x08\x0a\x0d\x1a\x20\x89\xd8\xff\xfeBFGIMNPRWEVa79< ")
	for range 20000 {
		b := make([]byte, 1+rng.IntN(20))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		heads = append(heads, b)
	}
	for _, h := range heads {
		if got, w := imageType(h), want(h); got != w {
			t.Fatalf("imageType(%q) = %q, DetectContentType says %q", h, got, w)
		}
	}
}
