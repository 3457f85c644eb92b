package dispatch

import (
	"strings"
	"testing"
)

func TestPreviewFallbackAndCap(t *testing.T) {
	if got := indentedInput([]byte(`{"a":[1,2],"b":"x\ny"}`)); got != "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": \"x\\ny\"\n}\n" {
		t.Errorf("indentedInput = %q", got)
	}
	if got := indentedInput([]byte(`not json`)); got != "not json\n" {
		t.Errorf("indentedInput of text = %q", got)
	}
	long := strings.Repeat("0123456789abcdef\n", maxPreviewBytes/17+100)
	got := capPreview(long)
	if len(got) > maxPreviewBytes+100 || !strings.HasSuffix(got, "more bytes)\n") || !strings.HasPrefix(got, "0123456789abcdef\n") {
		t.Errorf("capPreview: %d bytes, ends %q", len(got), got[len(got)-40:])
	}
	if capPreview("short\n") != "short\n" {
		t.Error("capPreview changed a short preview")
	}
}
