package model

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSSEReader(t *testing.T) {
	type ev struct{ Name, Data string }
	long := strings.Repeat("x", 200_000) // past the bufio buffer
	tests := []struct {
		name string
		in   string
		want []ev
	}{
		{"named", "event: ping\ndata: {\"type\": \"ping\"}\n\n", []ev{{"ping", `{"type": "ping"}`}}},
		{"crlf", "event: a\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n", []ev{{"a", "1"}, {"", "2"}}},
		{"no space after colon", "data:x\n\n", []ev{{"", "x"}}},
		{"only one space stripped", "data:  x \n\n", []ev{{"", " x "}}},
		{"multi-line data", "data: a\ndata: b\n\n", []ev{{"", "a\nb"}}},
		{"comments and unknown fields", ": keep-alive\nid: 7\nretry: 100\ndata: x\n\n", []ev{{"", "x"}}},
		{"no data is no event", "event: a\n\ndata: b\n\n", []ev{{"", "b"}}},
		{"blank lines between", "\n\n\ndata: a\n\n\n\ndata: b\n\n", []ev{{"", "a"}, {"", "b"}}},
		{"last without blank line", "data: a\n\ndata: b\n", []ev{{"", "a"}, {"", "b"}}},
		{"last without newline", "data: a", []ev{{"", "a"}}},
		{"field without colon", "data\n\n", []ev{{"", ""}}},
		{"long line", "data: " + long + "\n\n", []ev{{"", long}}},
		{"name resets per event", "event: a\ndata: 1\n\ndata: 2\n\n", []ev{{"a", "1"}, {"", "2"}}},
		{"empty", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newSSEReader(strings.NewReader(tc.in))
			var got []ev
			for {
				name, data, err := r.next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ev{string(name), string(data)})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSSEReaderBoundsAnEvent(t *testing.T) {
	r := newSSEReader(strings.NewReader("data: " + strings.Repeat("x", maxEventBytes+10) + "\n\n"))
	if _, _, err := r.next(); !errors.Is(err, errEventTooLarge) {
		t.Fatalf("err = %v, want errEventTooLarge", err)
	}
}

type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) { return 0, f.err }

func TestSSEReaderReportsReadErrors(t *testing.T) {
	boom := errors.New("connection reset")
	r := newSSEReader(io.MultiReader(strings.NewReader("data: a\n\ndata: b"), failingReader{boom}))
	if _, data, err := r.next(); err != nil || string(data) != "a" {
		t.Fatalf("first = %q, %v", data, err)
	}
	if _, _, err := r.next(); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the read error (a cut event is not an event)", err)
	}
}
