package toolsearch_test

import (
	"testing"

	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/toolsearch"
)

// tools2000 is 2,000 deferred tools: the corpus' servers repeated under
// new names.
func tools2000(b *testing.B) []tool.Tool {
	all := corpus(2000/len(corpus(1)) + 1)
	if len(all) < 2000 {
		b.Fatalf("only %d tools", len(all))
	}
	return all[:2000]
}

// BenchmarkSearch2000 is a keyword query over 2,000 deferred tools with the
// index built once (goal: ≤ 2 ms/op).
func BenchmarkSearch2000(b *testing.B) {
	ix := toolsearch.NewIndex(tools2000(b))
	b.ReportAllocs()
	for b.Loop() {
		if got := ix.Search("send a message to a slack channel", 5); len(got) != 5 {
			b.Fatalf("%d results", len(got))
		}
	}
}

// BenchmarkSearch2000Required is a "+term rest" query over 2,000 tools.
func BenchmarkSearch2000Required(b *testing.B) {
	ix := toolsearch.NewIndex(tools2000(b))
	b.ReportAllocs()
	for b.Loop() {
		if got := ix.Search("+github pull request review", 5); len(got) != 5 {
			b.Fatalf("%d results", len(got))
		}
	}
}

// BenchmarkIndexBuild2000 builds the index of 2,000 tools.
func BenchmarkIndexBuild2000(b *testing.B) {
	tools := tools2000(b)
	b.ReportAllocs()
	for b.Loop() {
		toolsearch.NewIndex(tools)
	}
}

// BenchmarkToolRun2000 is a whole ToolSearch call over 2,000 deferred tools
// with the index cached: fingerprint, search, result JSON.
func BenchmarkToolRun2000(b *testing.B) {
	tools := tools2000(b)
	ts := toolsearch.NewTool(&toolsearch.Options{Deferred: func(tool.Env) []tool.Tool { return tools }})
	call := &tool.Call{Input: []byte(`{"query":"send a message to a slack channel"}`)}
	b.ReportAllocs()
	for b.Loop() {
		res, err := ts.Run(b.Context(), call, nil)
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}
