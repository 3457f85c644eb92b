package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"testing"
)

// FuzzLineFilter reads the input through lineFilter, in reads of 1 to 16
// bytes (which), over a small buffer. What comes out is exactly the
// input's lines that are JSON, trimmed, each ending in a newline, in
// order; each non-blank line that is not JSON is answered with one
// JSON-RPC parse error on out; the end is io.EOF.
func FuzzLineFilter(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":8,"method":"initialize","params":{"protocolVersion":1}}` + "\n",
		"{this is not json\n" + `{"jsonrpc":"2.0","id":7,"method":"no/such_method","params":{}}` + "\n",
		"  {\"a\":1}  \r\n\n\n[1,2]\n5\nnull\n\"x\"\n{\"b\":", "", "\n", "{}", "{}\n{}\n", "\t\r\n", "\xff\xfe\n{}\n",
	} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(6))
	}
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		var errs bytes.Buffer
		lf := &lineFilter{r: bufio.NewReaderSize(bytes.NewReader(data), 16), out: &errs}
		p := make([]byte, int(which%16)+1)
		var got []byte
		for reads := 0; ; reads++ {
			n, err := lf.Read(p)
			got = append(got, p[:n]...)
			if err != nil {
				if err != io.EOF {
					t.Fatalf("read error %v", err)
				}
				break
			}
			if n == 0 && reads > len(data)+16 {
				t.Fatal("Read returns nothing and no error")
			}
		}
		var want []byte
		bad := 0
		for _, line := range bytes.SplitAfter(data, []byte("\n")) {
			tl := bytes.TrimSpace(line)
			switch {
			case len(tl) == 0:
			case json.Valid(tl):
				want = append(append(want, tl...), '\n')
			default:
				bad++
			}
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("passed %q, want %q", got, want)
		}
		if !bytes.Equal(errs.Bytes(), bytes.Repeat(parseError, bad)) {
			t.Fatalf("answered %q, want %d parse errors", errs.Bytes(), bad)
		}
		for _, l := range bytes.Split(errs.Bytes(), []byte("\n")) {
			if len(l) > 0 && !json.Valid(l) {
				t.Fatalf("an answer %q that is not JSON", l)
			}
		}
	})
}
