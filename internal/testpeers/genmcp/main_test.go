package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.uber.org/goleak"

	"github.com/tackle-agent/tackle/internal/testpeers"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// connect starts the built genmcp with args and returns a client session.
func connect(t *testing.T, args ...string) *mcp.ClientSession {
	t.Helper()
	bin := testpeers.BuildGenMCP(t)
	var stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "genmcp-test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to genmcp %v: %v\nstderr: %s", args, err, stderr.String())
	}
	t.Cleanup(func() {
		if err := cs.Close(); err != nil {
			t.Errorf("closing the genmcp session: %v (stderr: %s)", err, stderr.String())
		}
	})
	return cs
}

func listTools(t *testing.T, cs *mcp.ClientSession) []*mcp.Tool {
	t.Helper()
	var tools []*mcp.Tool
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatalf("listing tools: %v", err)
		}
		tools = append(tools, tool)
	}
	return tools
}

func callText(t *testing.T, cs *mcp.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

func TestServeOverStdio(t *testing.T) {
	cs := connect(t, "-tools", "500", "-prompts", "12")
	tools := listTools(t, cs)
	if len(tools) != 501 {
		t.Fatalf("listed %d tools, want 500 generated + slow_wait", len(tools))
	}
	compiler := jsonschema.NewCompiler()
	seen := map[string]bool{}
	for i, tool := range tools {
		if seen[tool.Name] {
			t.Errorf("tool name %q listed twice", tool.Name)
		}
		seen[tool.Name] = true
		if tool.Description == "" {
			t.Errorf("tool %s has no description", tool.Name)
		}
		raw, err := json.Marshal(tool.InputSchema)
		if err != nil {
			t.Fatalf("encoding the schema of %s: %v", tool.Name, err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("decoding the schema of %s: %v", tool.Name, err)
		}
		url := fmt.Sprintf("mem://tool/%d.json", i)
		if err := compiler.AddResource(url, doc); err != nil {
			t.Fatalf("adding the schema of %s: %v", tool.Name, err)
		}
		if _, err := compiler.Compile(url); err != nil {
			t.Errorf("schema of %s does not compile: %v\n%s", tool.Name, err, raw)
		}
		m := doc.(map[string]any)
		if m["type"] != "object" || m["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
			t.Errorf("schema of %s: want a draft 2020-12 object schema, got %s", tool.Name, raw)
		}
	}
	for _, name := range []string{"create_issue", "run_query", "slow_wait"} {
		if !seen[name] {
			t.Errorf("tool %s not listed", name)
		}
	}

	text, isErr := callText(t, cs, "create_issue", map[string]any{"title": "Crash on start", "labels": []string{"bug"}})
	if want := `called create_issue with {"labels":["bug"],"title":"Crash on start"}`; text != want || isErr {
		t.Errorf("create_issue answered %q (error %v), want %q", text, isErr, want)
	}
	text, isErr = callText(t, cs, "run_query", map[string]any{"sql": "SELECT 1"})
	if want := `called run_query with {"sql":"SELECT 1"}`; text != want || isErr {
		t.Errorf("run_query answered %q (error %v), want %q", text, isErr, want)
	}
	text, isErr = callText(t, cs, "slow_wait", map[string]any{"ms": 1})
	if want := "slow_wait slept 1 ms"; text != want || isErr {
		t.Errorf("slow_wait answered %q (error %v), want %q", text, isErr, want)
	}
	text, isErr = callText(t, cs, "slow_wait", map[string]any{"ms": "soon"})
	if !isErr || !strings.Contains(text, "non-negative integer") {
		t.Errorf("slow_wait with a string answered %q (error %v), want a tool error", text, isErr)
	}

	var prompts []*mcp.Prompt
	for p, err := range cs.Prompts(t.Context(), nil) {
		if err != nil {
			t.Fatalf("listing prompts: %v", err)
		}
		prompts = append(prompts, p)
	}
	if len(prompts) != 12 {
		t.Fatalf("listed %d prompts, want 12", len(prompts))
	}
	p := prompts[0]
	args := map[string]string{}
	for _, a := range p.Arguments {
		args[a.Name] = "x-" + a.Name
	}
	res, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: p.Name, Arguments: args})
	if err != nil {
		t.Fatalf("getting prompt %s: %v", p.Name, err)
	}
	want, _ := json.Marshal(args)
	if len(res.Messages) != 1 || res.Messages[0].Content.(*mcp.TextContent).Text != "prompt "+p.Name+" with "+string(want) {
		t.Errorf("prompt %s gave %+v, want one message echoing %s", p.Name, res.Messages, want)
	}
}

func TestPagesAndStyles(t *testing.T) {
	cs := connect(t, "-tools", "2000", "-page-size", "300", "-servers-style", "camel")
	page, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Tools) != 300 || page.NextCursor == "" {
		t.Errorf("first page has %d tools, cursor %q; want 300 and a cursor", len(page.Tools), page.NextCursor)
	}
	tools := listTools(t, cs)
	if len(tools) != 2001 {
		t.Fatalf("listed %d tools, want 2001", len(tools))
	}
	text, _ := callText(t, cs, "sendMessage", map[string]any{"channel": "general", "text": "hi"})
	if want := `called sendMessage with {"channel":"general","text":"hi"}`; text != want {
		t.Errorf("sendMessage answered %q, want %q", text, want)
	}
}

var validName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

func names(c config) []string {
	var out []string
	for _, t := range generateTools(c) {
		out = append(out, t.Name)
	}
	return out
}

func TestGeneratedNames(t *testing.T) {
	for _, style := range styles {
		for _, n := range []int{0, 1, 50, 500, 2000, 5000} {
			got := names(config{tools: n, style: style})
			if len(got) != n {
				t.Errorf("%s/%d: %d names", style, n, len(got))
			}
			seen := map[string]bool{"slow_wait": true}
			for _, name := range got {
				if seen[name] || !validName.MatchString(name) {
					t.Errorf("%s/%d: name %q is a duplicate or invalid", style, n, name)
				}
				seen[name] = true
			}
		}
	}
	small, large := names(config{tools: 200, style: "snake"}), names(config{tools: 2000, style: "snake"})
	if !slices.Equal(small, large[:200]) {
		t.Errorf("the first 200 of -tools 2000 differ from -tools 200")
	}
	a, b := names(config{tools: 300, seed: 7, style: "snake"}), names(config{tools: 300, seed: 7, style: "snake"})
	c := names(config{tools: 300, seed: 8, style: "snake"})
	if !slices.Equal(a, b) || slices.Equal(a, c) {
		t.Errorf("seed 7 twice gave equal=%v, seeds 7 and 8 gave equal=%v; want true, false", slices.Equal(a, b), slices.Equal(a, c))
	}
	for _, name := range names(config{tools: 300, style: "snake", families: []string{"weather"}}) {
		if !strings.Contains(name, "weather") && !strings.Contains(name, "forecast") && !strings.Contains(name, "air_quality") {
			t.Errorf("-families weather gave %q", name)
		}
	}
}

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-tools", "-1"}, "must not be negative"},
		{[]string{"-servers-style", "shouty"}, `unknown -servers-style "shouty"`},
		{[]string{"-families", "issues,nope"}, `unknown family "nope"`},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"-tools", "x"}, "invalid value"},
	} {
		_, err := parseFlags(tc.args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFlags(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// tokens splits text the way a tool search would: on non-alphanumerics and
// camelCase boundaries, lowercased, optionally with a crude plural stem.
func tokens(s string, stem bool) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			w := strings.ToLower(string(cur))
			if stem && len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
				w = strings.TrimSuffix(w, "s")
			}
			out = append(out, w)
			cur = cur[:0]
		}
	}
	for i, r := range s {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && i > 0 && len(cur) > 0 && unicode.IsLower(cur[len(cur)-1]):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return out
}

// bm25 ranks tools for query (k1 1.2, b 0.75) over name parts (repeated
// nameBoost times) and description words.
func bm25(tools []*mcp.Tool, query string, nameBoost int, stem bool) []string {
	docs := make([]map[string]float64, len(tools))
	lens := make([]float64, len(tools))
	df := map[string]float64{}
	var total float64
	for i, tool := range tools {
		tf := map[string]float64{}
		for range nameBoost {
			for _, w := range tokens(tool.Name, stem) {
				tf[w]++
				lens[i]++
			}
		}
		for _, w := range tokens(tool.Description, stem) {
			tf[w]++
			lens[i]++
		}
		for w := range tf {
			df[w]++
		}
		docs[i] = tf
		total += lens[i]
	}
	avg, n := total/float64(len(tools)), float64(len(tools))
	type hit struct {
		name  string
		score float64
	}
	var hits []hit
	for i, tf := range docs {
		var score float64
		for _, q := range tokens(query, stem) {
			f := tf[q]
			if f == 0 {
				continue
			}
			idf := math.Log(1 + (n-df[q]+0.5)/(df[q]+0.5))
			score += idf * f * 2.2 / (f + 1.2*(0.25+0.75*lens[i]/avg))
		}
		hits = append(hits, hit{tools[i].Name, score})
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].score > hits[j].score })
	if hits[0].score == hits[1].score {
		return []string{"(tie) " + hits[0].name, hits[1].name}
	}
	return []string{hits[0].name, hits[1].name}
}

func TestQueryCatalogue(t *testing.T) {
	first200 := names(config{tools: 200, style: "snake"})
	for _, q := range testpeers.GenMCPQueries {
		if !slices.Contains(first200, q.Want) {
			t.Errorf("%s is not among the first 200 tools", q.Want)
		}
	}
	for _, n := range []int{200, 500, 2000} {
		tools := append(generateTools(config{tools: n, style: "snake"}), slowWaitTool())
		for _, q := range testpeers.GenMCPQueries {
			for _, v := range []struct {
				boost int
				stem  bool
			}{{1, false}, {3, false}, {1, true}, {3, true}} {
				if got := bm25(tools, q.Query, v.boost, v.stem); got[0] != q.Want {
					t.Errorf("-tools %d, name boost %d, stem %v: %q ranks %v first, want %s", n, v.boost, v.stem, q.Query, got, q.Want)
				}
			}
		}
	}
}
