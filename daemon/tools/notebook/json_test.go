package notebook

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestRoundTrip: a file parsed and written back unchanged is byte-identical,
// in each layout the file may have.
func TestRoundTrip(t *testing.T) {
	jupyter, err := os.ReadFile("testdata/analysis.ipynb")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"jupyter":         string(jupyter),
		"indent 2, CRLF":  "{\r\n  \"b\": [\r\n    1.50,\r\n    {}\r\n  ],\r\n  \"a\": \"caf\\u00e9 \\/\"\r\n}",
		"tabs":            "{\n\t\"x\": {\n\t\t\"y\": []\n\t}\n}\n\n",
		"compact":         `{"cells":[{"a":1e-5,"b":[true,false,null]}],"z":{}}`,
		"python one line": `{"cells": [{"a": -0.0, "b": ["x", "y"]}], "nbformat": 4}` + "\n",
		"leading space":   "  {\n \"a\": 1\n}\n",
	} {
		t.Run(name, func(t *testing.T) {
			if !json.Valid([]byte(data)) {
				t.Fatalf("test input is not JSON: %s", data)
			}
			got := string(encode(parseTree([]byte(data)), detectStyle([]byte(data))))
			if got != data {
				t.Errorf("round trip changed the file:\n got %q\nwant %q", got, data)
			}
		})
	}
}

// TestQuote: new strings are written as Python's json.dumps(...,
// ensure_ascii=False) writes them, as Jupyter does.
func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"plain":             `"plain"`,
		"a\"b\\c":           `"a\"b\\c"`,
		"\n\r\t\b\f":        `"\n\r\t\b\f"`,
		"\x00\x1f\x7f":      "\"\\u0000\\u001f\x7f\"",
		"café ✓ <&> \u2028": "\"café ✓ <&> \u2028\"",
		"bad \xff utf8":     "\"bad \uFFFD utf8\"",
	} {
		if got := string(quote(in)); got != want {
			t.Errorf("quote(%q) = %s, want %s", in, got, want)
		}
		var back string
		if err := json.Unmarshal(quote(in), &back); err != nil || back != strings.ToValidUTF8(in, "\uFFFD") {
			t.Errorf("quote(%q) decodes to %q, %v", in, back, err)
		}
	}
}

// TestSet: a new key goes in key order into a sorted object, at the end of
// an unsorted one; an existing key keeps its place.
func TestSet(t *testing.T) {
	keys := func(v *value) string {
		var ks []string
		for _, f := range v.fields {
			ks = append(ks, f.key)
		}
		return strings.Join(ks, ",")
	}
	sorted := parseTree([]byte(`{"cell_type":"markdown","id":"x","metadata":{},"source":[]}`))
	sorted.set("outputs", emptyArray())
	sorted.set("execution_count", literal("null"))
	sorted.set("cell_type", stringValue("code"))
	if got := keys(sorted); got != "cell_type,execution_count,id,metadata,outputs,source" {
		t.Errorf("sorted object keys %s", got)
	}
	unsorted := parseTree([]byte(`{"source":[],"cell_type":"markdown"}`))
	unsorted.set("outputs", emptyArray())
	unsorted.set("source", stringValue("x"))
	if got := keys(unsorted); got != "source,cell_type,outputs" {
		t.Errorf("unsorted object keys %s", got)
	}
	unsorted.del("cell_type")
	if got := keys(unsorted); got != "source,outputs" {
		t.Errorf("after del: %s", got)
	}
}

func TestSourceValue(t *testing.T) {
	st := style{colon: ":", comma: ","}
	for in, want := range map[string]string{
		"":           `[]`,
		"a":          `["a"]`,
		"a\n":        `["a\n"]`,
		"a\nb":       `["a\n","b"]`,
		"a\n\nb\n":   `["a\n","\n","b\n"]`,
		"x\r\ny\r\n": `["x\r\n","y\r\n"]`,
	} {
		if got := string(encode(sourceValue(in, true), st)); got != want {
			t.Errorf("sourceValue(%q) = %s, want %s", in, got, want)
		}
		if got := sourceText(sourceValue(in, true)); got != in {
			t.Errorf("sourceText(sourceValue(%q)) = %q", in, got)
		}
	}
	if got := string(encode(sourceValue("a\nb", false), st)); got != `"a\nb"` {
		t.Errorf("string form: %s", got)
	}
}

func TestDisplay(t *testing.T) {
	e := &edit{file: &file{path: "/n.ipynb"}, mode: modeReplace, cellID: "c", oldType: "code", newType: "code",
		oldSrc: "1\n2\n3\n4\n5\n6\n7\n8\n9\n", newSrc: "1\n2\n3\n4\nfive\n6\n7\n8\n9\n"}
	want := "--- /n.ipynb\n+++ /n.ipynb\n@@ -2,7 +2,7 @@ code cell c\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"
	if got := e.display(1 << 10); got != want {
		t.Errorf("display:\n%s\nwant\n%s", got, want)
	}
	e = &edit{file: &file{path: "/n.ipynb"}, mode: modeInsert, cellID: "c", newType: "code", index: 0}
	if got := e.display(1 << 10); !strings.HasSuffix(got, "@@ -0,0 +0,0 @@ new code cell c at index 0\n") {
		t.Errorf("display of an empty new cell:\n%s", got)
	}
	e = &edit{file: &file{path: "/n.ipynb"}, mode: modeDelete, cellID: "c", oldType: "markdown", oldSrc: strings.Repeat("line\n", 1000)}
	if got := e.display(200); len(got) > 260 || !strings.Contains(got, "(diff truncated:") {
		t.Errorf("display not capped (%d bytes):\n%s", len(got), got)
	}
}
