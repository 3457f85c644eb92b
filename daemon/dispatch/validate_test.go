package dispatch

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// decodeInputSeeds are inputs where JSON decoders are known to differ:
// duplicate keys, invalid UTF-8 and lone surrogates, numbers out of float
// range or with leading zeros, what follows the value, nesting.
var decodeInputSeeds = []string{
	`{"file_path":"/tmp/small.txt","offset":10,"limit":2000}`,
	`{"a":1,"a":2}`, "{\"a\":\"\xff\xfe\"}", "{\"\xff\":1}", `{"a":"\ud800"}`, `{"a":"\ud83d\ude00 \u00e9"}`,
	`{"a":1e400}`, `{"a":-0.0}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":1E+2}`, `{"a":123456789012345678901234567890}`,
	`{"a":[1,{"b":null}]} `, `{"a":1} x`, `{"a":1}{}`, " \t\r\n{\"a\" : 1 }\n ", `{"a":1},`, `[1]`, `"x"`, `null`, `1`,
	`{"a":true,"b":false,"c":null}`, `{"a":tru}`, `{"a":"x\u0000y"}`, "{\"a\":\"tab\there\"}", `{"a":"\/"}`,
	`{"a":[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]}`, `{`, ``, `{"a":1,}`, `{'a':1}`, `{"a":NaN}`, `{"A":1,"a":2}`,
}

// decodeInput must take exactly the inputs jsonschema.UnmarshalJSON takes
// and give exactly its values.
func checkDecodeInput(t *testing.T, in []byte) {
	want, werr := jsonschema.UnmarshalJSON(bytes.NewReader(in))
	got, gerr := decodeInput(in)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%q: jsonschema's decoder says %v, decodeInput %v", in, werr, gerr)
	}
	if werr != nil {
		if werr.Error() != gerr.Error() {
			t.Fatalf("%q: error %q, want jsonschema's %q", in, gerr, werr)
		}
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: decoded %#v, want %#v", in, got, want)
	}
}

func TestDecodeInputIsJSONSchemas(t *testing.T) {
	for _, s := range decodeInputSeeds {
		checkDecodeInput(t, []byte(s))
	}
}

// Deeply nested inputs go to jsonschema's decoder, whose time is linear in
// the depth (the fast one's grows with its square: this test would take
// hours).
func TestDecodeInputDeepNesting(t *testing.T) {
	for _, n := range []int{fastBrackets, fastBrackets + 1, 9_999, 100_000} {
		checkDecodeInput(t, []byte(`{"a":`+strings.Repeat("[", n-1)+strings.Repeat("]", n-1)+"}"))
	}
}

func FuzzDecodeInput(f *testing.F) {
	for _, s := range decodeInputSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkDecodeInput)
}
