// Command genmcp is a real MCP server for tests: it serves a generated set of
// tools (and prompts) over stdio with realistic, varied names, descriptions and
// JSON Schemas, so tool search, deferral and listing can be tested at scale
// (hundreds or thousands of tools) against a real peer. It keeps no state:
// the same flags always serve the same tools.
//
// Usage:
//
//	genmcp [-tools N] [-prompts N] [-seed S] [-servers-style snake|camel|kebab|mixed]
//	       [-families LIST] [-page-size N]
//
// The tools are verb × noun combinations from 21 families (issues, chat,
// database, files, calendar, email, ci, cloud, code, monitoring, incidents,
// crm, wiki, payments, kubernetes, analytics, tasks, support, maps, hr,
// weather): create_issue, add_comment, send_message, run_query, list_tables,
// merge_pull_request, … With seed 0 (the default) the N tools are the first N
// of a fixed order that takes turns between families (and within a family
// between nouns), so any N gives a varied set and a larger N contains every
// smaller one. The ~540 plain names come first, then product-prefixed
// variants (jira_create_issue, slack_send_message, …; described as
// "Jira: <the plain description>"), then numbered ones (create_issue_v2, …),
// so any N gives distinct names. A seed other than 0 picks N names
// pseudo-randomly, but reproducibly, from the first 2N+100 of that order.
// -servers-style sets how names are spelled (mixed: a style per family);
// -families restricts the families; -page-size sets the list page size.
//
// Every tool has a draft 2020-12 object schema with a few typed properties
// (some required, additionalProperties false) and a handler that echoes
//
//	called NAME with {"arg":"value",...}
//
// (the arguments as compact JSON with sorted keys; the server does not
// validate them), so a test can prove a call reached the right tool. One more
// tool is always served besides the N: slow_wait {ms: integer} sleeps ms
// milliseconds, or until the call is cancelled, and answers
// "slow_wait slept MS ms".
//
// -prompts N serves N generated prompts (summarize_issue, draft_message, …,
// each with a required NOUN_id and an optional audience argument) whose
// result is one user message "prompt NAME with {args as JSON}".
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "genmcp:", err)
		os.Exit(2)
	}
}

// config is what the flags ask for.
type config struct {
	tools, prompts int
	seed           uint64
	style          string
	families       []string
	pageSize       int
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	var fams string
	fs := flag.NewFlagSet("genmcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.tools, "tools", 20, "number of generated tools (slow_wait is served besides them)")
	fs.IntVar(&c.prompts, "prompts", 0, "number of generated prompts")
	fs.Uint64Var(&c.seed, "seed", 0, "0: the first N names of the fixed order; other: a reproducible pseudo-random pick")
	fs.StringVar(&c.style, "servers-style", "snake", "tool name style: snake (create_issue), camel (createIssue), kebab (create-issue), mixed (one per family)")
	fs.StringVar(&fams, "families", "", "comma-separated families to draw from (default all): "+strings.Join(familyKeys(), ","))
	fs.IntVar(&c.pageSize, "page-size", 0, "list page size (0: the SDK default, 1000)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if c.tools < 0 || c.prompts < 0 || c.pageSize < 0 {
		return c, errors.New("-tools, -prompts and -page-size must not be negative")
	}
	if !slices.Contains(styles, c.style) {
		return c, fmt.Errorf("unknown -servers-style %q (want one of %s)", c.style, strings.Join(styles, ", "))
	}
	if fams != "" {
		for f := range strings.SplitSeq(fams, ",") {
			f = strings.TrimSpace(f)
			if !slices.Contains(familyKeys(), f) {
				return c, fmt.Errorf("unknown family %q in -families (want some of %s)", f, strings.Join(familyKeys(), ", "))
			}
			c.families = append(c.families, f)
		}
	}
	return c, nil
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	srv := newServer(c)
	if err := srv.Run(ctx, &mcp.StdioTransport{}); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("serving stdio: %w", err)
	}
	return nil
}

// newServer builds the MCP server for c.
func newServer(c config) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "genmcp", Version: "1.0.0"}, &mcp.ServerOptions{
		PageSize: c.pageSize,
		Instructions: "A generated test server: every tool echoes its name and arguments; " +
			"slow_wait sleeps for the given milliseconds.",
	})
	for _, t := range generateTools(c) {
		srv.AddTool(t, echo(t.Name))
	}
	srv.AddTool(slowWaitTool(), slowWait)
	for _, p := range generatePrompts(c) {
		srv.AddPrompt(p, echoPrompt)
	}
	return srv
}

// echo returns the handler of tool name: it answers "called NAME with ARGS".
func echo(name string) mcp.ToolHandler {
	return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, err := canonicalJSON(req.Params.Arguments)
		if err != nil {
			return errorResult(fmt.Sprintf("reading the arguments of %s: %v", name, err)), nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "called " + name + " with " + args}}}, nil
	}
}

// canonicalJSON re-encodes raw compactly with sorted object keys ("{}" when empty).
func canonicalJSON(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "{}", nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", err
	}
	b, err := json.Marshal(v) // maps marshal with sorted keys
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

func slowWaitTool() *mcp.Tool {
	return &mcp.Tool{
		Name:        "slow_wait",
		Description: "Wait for the given number of milliseconds, then answer. For timeout and cancellation tests.",
		InputSchema: schema([]prop{{Name: "ms", Type: "integer", Desc: "milliseconds to wait", Min: ptr(0), Max: ptr(3_600_000), Req: true}}),
	}
}

func slowWait(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		MS *int64 `json:"ms"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &in); err != nil || in.MS == nil || *in.MS < 0 {
		return errorResult(`slow_wait needs {"ms": a non-negative integer}`), nil
	}
	t := time.NewTimer(time.Duration(*in.MS) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("slow_wait slept %d ms", *in.MS)}}}, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("slow_wait cancelled before %d ms: %w", *in.MS, ctx.Err())
	}
}

func echoPrompt(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	args, err := json.Marshal(req.Params.Arguments) // map: sorted keys
	if err != nil {
		return nil, fmt.Errorf("encoding the arguments of prompt %s: %w", req.Params.Name, err)
	}
	if req.Params.Arguments == nil {
		args = []byte("{}")
	}
	return &mcp.GetPromptResult{
		Description: "generated prompt " + req.Params.Name,
		Messages: []*mcp.PromptMessage{{
			Role:    "user",
			Content: &mcp.TextContent{Text: "prompt " + req.Params.Name + " with " + string(args)},
		}},
	}, nil
}

// --- schemas ---------------------------------------------------------------

// prop is one property of a generated input schema.
type prop struct {
	Name, Type, Desc string
	Items            string   // element type of an array
	Enum             []string // allowed values of a string
	Format           string
	Min, Max         *int
	Req              bool
}

func ptr(i int) *int { return &i }

// schema builds a draft 2020-12 object schema with props.
func schema(props []prop) map[string]any {
	properties := map[string]any{}
	required := []string{}
	for _, p := range props {
		s := map[string]any{"type": p.Type, "description": p.Desc}
		if p.Items != "" {
			s["items"] = map[string]any{"type": p.Items}
		}
		if len(p.Enum) > 0 {
			s["enum"] = p.Enum
		}
		if p.Format != "" {
			s["format"] = p.Format
		}
		if p.Min != nil {
			s["minimum"] = *p.Min
		}
		if p.Max != nil {
			s["maximum"] = *p.Max
		}
		properties[p.Name] = s
		if p.Req {
			required = append(required, p.Name)
		}
	}
	s := map[string]any{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"type":                 "object",
		"properties":           properties,
		"additionalProperties": false,
	}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// --- generation ------------------------------------------------------------

var styles = []string{"snake", "camel", "kebab", "mixed"}

// spec is one generated tool before styling.
type spec struct {
	fam     *family
	product *product // nil for the plain name
	verb    string   // snake, may hold several words ("reply_to")
	noun    *noun
	plural  bool
	version int // 0, or 2, 3, … for numbered variants
}

// words are the name's words in order.
func (s spec) words() []string {
	var w []string
	if s.product != nil {
		w = append(w, strings.Split(s.product.slug, "_")...)
	}
	w = append(w, strings.Split(s.verb, "_")...)
	w = append(w, strings.Split(s.noun.form(s.plural), "_")...)
	if s.version > 0 {
		w = append(w, fmt.Sprintf("v%d", s.version))
	}
	return w
}

// styleName joins words in style.
func styleName(words []string, style string) string {
	switch style {
	case "camel":
		var b strings.Builder
		for i, w := range words {
			if i > 0 {
				r := []rune(w)
				r[0] = unicode.ToUpper(r[0])
				w = string(r)
			}
			b.WriteString(w)
		}
		return b.String()
	case "kebab":
		return strings.Join(words, "-")
	default:
		return strings.Join(words, "_")
	}
}

// candidates is the fixed order of all names: plain verb_noun names taking
// turns between families (and within a family between nouns), then each
// product's prefixed variants, then numbered variants, up to at least n.
func candidates(fams []*family, n int) []spec {
	var perFam [][]spec
	for _, f := range fams {
		var perNoun [][]spec
		for _, nn := range f.nouns {
			var l []spec
			for _, v := range nn.verbs {
				verb, plural := v, verbs[strings.TrimSuffix(strings.TrimSuffix(v, "+p"), "+s")].plural
				switch {
				case strings.HasSuffix(v, "+p"):
					verb, plural = strings.TrimSuffix(v, "+p"), true
				case strings.HasSuffix(v, "+s"):
					verb, plural = strings.TrimSuffix(v, "+s"), false
				}
				l = append(l, spec{fam: f, verb: verb, noun: nn, plural: plural})
			}
			perNoun = append(perNoun, l)
		}
		perFam = append(perFam, interleave(perNoun))
	}
	seen := map[string]bool{}
	var out []spec
	add := func(s spec) {
		k := strings.Join(s.words(), "_")
		if !seen[k] {
			seen[k] = true
			out = append(out, s)
		}
	}
	plain := interleave(perFam)
	for _, s := range plain {
		add(s)
	}
	for p := 0; len(out) < n && p < 3; p++ {
		for _, s := range plain {
			if p < len(s.fam.products) {
				s.product = &s.fam.products[p]
				add(s)
			}
		}
	}
	for v := 2; len(out) < n; v++ {
		for _, s := range plain {
			s.version = v
			add(s)
		}
	}
	return out
}

// interleave takes one element of each list in turn until all are used.
func interleave[T any](lists [][]T) []T {
	var out []T
	for i := 0; ; i++ {
		took := false
		for _, l := range lists {
			if i < len(l) {
				out = append(out, l[i])
				took = true
			}
		}
		if !took {
			return out
		}
	}
}

func selectedFamilies(c config) []*family {
	if len(c.families) == 0 {
		return families
	}
	var out []*family
	for _, f := range families {
		if slices.Contains(c.families, f.key) {
			out = append(out, f)
		}
	}
	return out
}

// pick chooses n specs of all: the first n for seed 0, else a reproducible
// pseudo-random n of the first 2n+100.
func pick(all []spec, n int, seed uint64) []spec {
	if seed == 0 {
		return all[:n]
	}
	pool := slices.Clone(all[:min(len(all), 2*n+100)])
	r := rand.New(rand.NewPCG(seed, 0x67656e6d6370))
	r.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	return pool[:n]
}

// generateTools returns the c.tools generated tools.
func generateTools(c config) []*mcp.Tool {
	fams := selectedFamilies(c)
	specs := pick(candidates(fams, c.tools), c.tools, c.seed)
	tools := make([]*mcp.Tool, 0, len(specs))
	for _, s := range specs {
		style := c.style
		if style == "mixed" {
			style = styles[s.fam.index%3]
		}
		tools = append(tools, &mcp.Tool{
			Name:        styleName(s.words(), style),
			Description: describe(s),
			InputSchema: schema(properties(s)),
		})
	}
	return tools
}

// describe writes s's description from its verb's templates.
func describe(s spec) string {
	vs := verbs[s.verb]
	plain := s
	plain.product, plain.version = nil, 0
	tmpl := vs.desc[hash(strings.Join(plain.words(), "_"))%uint32(len(vs.desc))]
	if t, ok := s.noun.desc[s.verb]; ok {
		tmpl = t
	}
	d := strings.NewReplacer(
		"{s}", s.noun.spaced(false),
		"{p}", s.noun.spaced(true),
		"{a}", article(s.noun.spaced(false)),
		"{S}", s.fam.system,
	).Replace(tmpl)
	d = strings.ToUpper(d[:1]) + d[1:]
	if s.noun.gloss != "" {
		d += " " + s.noun.gloss
	}
	if s.product != nil {
		d = s.product.display + ": " + d
	}
	if s.version > 0 {
		d += fmt.Sprintf(" (API version %d.)", s.version)
	}
	return d
}

func hash(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

func article(w string) string {
	if strings.ContainsRune("aeiou", rune(w[0])) {
		return "an " + w
	}
	return "a " + w
}

// properties are s's input properties: the noun's id for verbs acting on one
// thing, its fields for verbs making one, paging or a query for listings, and
// the verb's own extras.
func properties(s spec) []prop {
	vs := verbs[s.verb]
	if a, ok := s.noun.args[s.verb]; ok {
		return a
	}
	if a, ok := s.noun.args[""]; ok {
		return a
	}
	id := s.noun.name + "_id"
	idProp := prop{Name: id, Type: "string", Desc: "ID of the " + s.noun.spaced(false), Req: true}
	if s.noun.intID {
		idProp = prop{Name: id, Type: "integer", Desc: "number of the " + s.noun.spaced(false), Min: ptr(1), Req: true}
	}
	fields := s.noun.fields
	if len(fields) == 0 {
		fields = []prop{
			{Name: "name", Type: "string", Desc: "name of the " + s.noun.spaced(false), Req: true},
			{Name: "description", Type: "string", Desc: "what the " + s.noun.spaced(false) + " is for"},
		}
	}
	var ps []prop
	switch {
	case vs.kind == kindNone:
	case s.plural && vs.kind == kindQuery:
		ps = append(ps,
			prop{Name: "query", Type: "string", Desc: "keywords or a filter expression", Req: true},
			prop{Name: "limit", Type: "integer", Desc: "maximum number of results", Min: ptr(1), Max: ptr(100)})
	case s.plural && vs.kind != kindMake:
		ps = append(ps,
			prop{Name: "limit", Type: "integer", Desc: "maximum number of results per page", Min: ptr(1), Max: ptr(100)},
			prop{Name: "cursor", Type: "string", Desc: "opaque cursor from the previous page"})
	case vs.kind == kindMake:
		ps = append(ps, fields...)
	case vs.kind == kindChange:
		ps = append(ps, idProp)
		for _, f := range fields {
			f.Req = false
			ps = append(ps, f)
		}
	default:
		ps = append(ps, idProp)
	}
	return append(ps, vs.extra...)
}

// --- prompts ---------------------------------------------------------------

var promptVerbs = []struct{ name, desc string }{
	{"summarize", "Summarize {a} for a busy reader: what it is, its current state and what needs attention."},
	{"draft", "Draft {a} from a short description, in the house style."},
	{"review", "Review {a} and list problems, risks and suggested changes."},
	{"explain", "Explain {a} to someone new to the team."},
	{"triage", "Triage {a}: decide priority, owner and next step."},
	{"plan", "Plan the work around {a} as a short checklist."},
}

// generatePrompts returns c.prompts prompts: prompt verbs × nouns (nouns
// taking turns between families), then numbered variants.
func generatePrompts(c config) []*mcp.Prompt {
	var perFam [][]*noun
	for _, f := range selectedFamilies(c) {
		perFam = append(perFam, f.nouns)
	}
	nouns := interleave(perFam)
	var out []*mcp.Prompt
	seen := map[string]bool{}
	for v := 1; len(out) < c.prompts; v++ {
		for _, pv := range promptVerbs {
			for _, nn := range nouns {
				if len(out) == c.prompts {
					return out
				}
				name := pv.name + "_" + nn.name
				if v > 1 {
					name += fmt.Sprintf("_v%d", v)
				}
				if seen[name] {
					continue
				}
				seen[name] = true
				out = append(out, &mcp.Prompt{
					Name:        name,
					Description: strings.NewReplacer("{a}", article(nn.spaced(false))).Replace(pv.desc),
					Arguments: []*mcp.PromptArgument{
						{Name: nn.name + "_id", Description: "ID of the " + nn.spaced(false), Required: true},
						{Name: "audience", Description: "who will read the result (default: the team)"},
					},
				})
			}
		}
	}
	return out
}

// --- the catalogue ---------------------------------------------------------

// family is one domain of tools (an issue tracker, a chat, …).
type family struct {
	index    int
	key      string    // -families name
	system   string    // how descriptions name it: "the issue tracker"
	products []product // prefixes of the variant names
	nouns    []*noun
}

// product is a vendor whose prefixed variants follow the plain names.
type product struct{ slug, display string }

// noun is a thing a family's tools act on.
type noun struct {
	name   string            // snake singular
	plural string            // snake plural ("" → name + "s")
	gloss  string            // a sentence appended to every description
	intID  bool              // the id is a number
	fields []prop            // what making one takes (default name + description)
	args   map[string][]prop // replaces the computed properties for a verb ("" for all verbs)
	desc   map[string]string // replaces the verb's description template for a verb
	verbs  []string
}

func (n *noun) form(plural bool) string {
	switch {
	case !plural:
		return n.name
	case n.plural != "":
		return n.plural
	}
	return n.name + "s"
}

func (n *noun) spaced(plural bool) string { return strings.ReplaceAll(n.form(plural), "_", " ") }

// verb kinds decide the properties (see properties).
const (
	kindOne    = iota // acts on one thing: its id
	kindMake          // makes something: the noun's fields
	kindChange        // changes one thing: its id and optional fields
	kindQuery         // searches: query and limit
	kindList          // lists: limit and cursor
	kindNone          // only the verb's extras
)

// verbSpec describes one verb: its noun form, kind, description templates
// ({s} singular, {p} plural, {a} "a/an singular", {S} the system) and extra
// properties.
type verbSpec struct {
	plural bool
	kind   int
	desc   []string
	extra  []prop
}

var (
	force    = prop{Name: "force", Type: "boolean", Desc: "skip the confirmation checks"}
	reason   = prop{Name: "reason", Type: "string", Desc: "why, recorded in the audit log"}
	dest     = prop{Name: "destination", Type: "string", Desc: "where to put it (path, folder or parent ID)", Req: true}
	duration = prop{Name: "duration_minutes", Type: "integer", Desc: "how long, in minutes", Min: ptr(1), Max: ptr(10080), Req: true}
	target   = prop{Name: "target_id", Type: "string", Desc: "ID of the other object", Req: true}
)

var verbs = map[string]verbSpec{
	"create":      {kind: kindMake, desc: []string{"create a new {s} in {S}. Returns the new {s} with its ID.", "create {a} in {S} and return it."}},
	"add":         {kind: kindMake, desc: []string{"add {a} in {S}.", "add a new {s} in {S} and return its ID."}},
	"get":         {desc: []string{"get one {s} from {S} by ID, with all its fields.", "fetch the details of {a} in {S}."}},
	"read":        {desc: []string{"read {a} from {S}: headers, body and attachments list."}},
	"describe":    {desc: []string{"describe {a} in {S}: its columns, types and constraints."}},
	"update":      {kind: kindChange, desc: []string{"update {a} in {S}. Only the fields given change.", "change fields of an existing {s} in {S}."}},
	"delete":      {desc: []string{"delete {a} from {S}. This cannot be undone.", "permanently delete {a} in {S}."}, extra: []prop{force}},
	"remove":      {desc: []string{"remove {a} in {S}."}},
	"list":        {plural: true, kind: kindList, desc: []string{"list {p} in {S}, newest first, one page at a time.", "list all {p} in {S} with paging."}},
	"search":      {plural: true, kind: kindQuery, desc: []string{"search {p} in {S} by keywords and filters, best matches first.", "find {p} in {S} matching a query."}},
	"query":       {plural: true, kind: kindQuery, desc: []string{"query {p} in {S} with an expression over a time range."}},
	"count":       {plural: true, kind: kindQuery, desc: []string{"count {p} in {S} that match a filter, grouped by day."}},
	"tail":        {plural: true, kind: kindQuery, desc: []string{"tail {p} from {S}: stream the newest lines that match a filter."}},
	"close":       {desc: []string{"close {a} in {S}."}, extra: []prop{reason}},
	"reopen":      {desc: []string{"reopen a closed {s} in {S}."}},
	"assign":      {desc: []string{"assign {a} in {S} to a person."}, extra: []prop{{Name: "assignee", Type: "string", Desc: "username of the new owner", Req: true}}},
	"transition":  {desc: []string{"move {a} in {S} to another workflow state."}, extra: []prop{{Name: "state", Type: "string", Desc: "the new state", Enum: []string{"todo", "in_progress", "in_review", "done"}, Req: true}}},
	"link":        {desc: []string{"link {a} in {S} to another one (blocks, duplicates, relates to)."}, extra: []prop{target, {Name: "relation", Type: "string", Desc: "kind of link", Enum: []string{"blocks", "duplicates", "relates_to"}}}},
	"rename":      {desc: []string{"rename {a} in {S}."}, extra: []prop{{Name: "new_name", Type: "string", Desc: "the new name", Req: true}}},
	"start":       {desc: []string{"start {a} in {S}.", "start a stopped {s} in {S}."}},
	"stop":        {desc: []string{"stop a running {s} in {S}."}},
	"complete":    {desc: []string{"mark {a} in {S} as complete."}},
	"archive":     {desc: []string{"archive {a} in {S}: hidden from default views but kept for history."}},
	"send":        {kind: kindMake, desc: []string{"send {a} with {S}.", "send a new {s} through {S}."}},
	"pin":         {desc: []string{"pin {a} in {S} so everyone sees it at the top."}},
	"join":        {desc: []string{"join {a} in {S}."}},
	"leave":       {desc: []string{"leave {a} in {S}."}},
	"follow":      {desc: []string{"follow {a} in {S} to get notified of new replies."}},
	"mute":        {desc: []string{"mute {a} in {S} for a while: no notifications."}, extra: []prop{duration}},
	"unmute":      {desc: []string{"unmute a muted {s} in {S}."}},
	"set":         {kind: kindMake, desc: []string{"set your {s} in {S}."}},
	"run":         {kind: kindMake, desc: []string{"run {a} in {S} and return its result.", "run {a} on {S}."}},
	"explain":     {kind: kindMake, desc: []string{"explain {a} in {S}: show the execution plan without running it."}},
	"cancel":      {desc: []string{"cancel a running {s} in {S}.", "cancel {a} in {S}."}, extra: []prop{reason}},
	"drop":        {desc: []string{"drop {a} from {S}, with all its data."}, extra: []prop{force}},
	"truncate":    {desc: []string{"truncate {a} in {S}: remove all rows, keep the structure."}},
	"insert":      {plural: true, kind: kindMake, desc: []string{"insert {p} into a table in {S}."}},
	"restore":     {desc: []string{"restore {a} in {S} to its earlier state."}},
	"upload":      {kind: kindMake, desc: []string{"upload {a} to {S}."}},
	"download":    {desc: []string{"download {a} from {S}."}},
	"move":        {desc: []string{"move {a} in {S} to another place."}, extra: []prop{dest}},
	"copy":        {desc: []string{"copy {a} in {S} to another place."}, extra: []prop{dest}},
	"share":       {desc: []string{"share {a} in {S} with a person by email."}, extra: []prop{{Name: "email", Type: "string", Desc: "who to share with", Format: "email", Req: true}, {Name: "role", Type: "string", Desc: "what they may do", Enum: []string{"viewer", "commenter", "editor"}}}},
	"empty":       {kind: kindNone, desc: []string{"empty the {s} in {S}: delete everything in it for good."}, extra: []prop{{Name: "older_than_days", Type: "integer", Desc: "only items older than this", Min: ptr(0)}}},
	"check":       {kind: kindMake, desc: []string{"check the {s} of people in {S} over a time range."}},
	"find":        {kind: kindMake, desc: []string{"find a {s} in {S} when all attendees are free."}},
	"book":        {kind: kindMake, desc: []string{"book {a} in {S} for a time slot."}},
	"reply_to":    {desc: []string{"reply to {a} in {S}."}, extra: []prop{{Name: "body", Type: "string", Desc: "the reply text", Req: true}}},
	"forward":     {desc: []string{"forward {a} in {S} to other people."}, extra: []prop{{Name: "to", Type: "array", Items: "string", Desc: "recipient addresses", Req: true}}},
	"trigger":     {kind: kindMake, desc: []string{"trigger {a} in {S} by hand."}},
	"enable":      {desc: []string{"enable {a} in {S}."}},
	"disable":     {desc: []string{"disable {a} in {S}."}},
	"retry":       {desc: []string{"retry a failed {s} in {S}."}},
	"protect":     {desc: []string{"protect {a} in {S}: require reviews and passing checks before changes land."}},
	"fork":        {desc: []string{"fork {a} in {S} into your own account."}},
	"merge":       {desc: []string{"merge {a} in {S}.", "merge {a} into its base in {S}."}, extra: []prop{{Name: "merge_method", Type: "string", Desc: "how to merge", Enum: []string{"merge", "squash", "rebase"}}}},
	"approve":     {desc: []string{"approve {a} in {S}."}, extra: []prop{{Name: "comment", Type: "string", Desc: "optional comment"}}},
	"publish":     {desc: []string{"publish {a} in {S} so readers can see it."}},
	"revert":      {desc: []string{"revert {a} in {S} with a new change that undoes it."}},
	"resolve":     {desc: []string{"resolve {a} in {S}."}, extra: []prop{{Name: "resolution", Type: "string", Desc: "what fixed it"}}},
	"acknowledge": {desc: []string{"acknowledge {a} in {S} so others know someone is on it."}},
	"silence":     {desc: []string{"silence {a} in {S} for a while."}, extra: []prop{duration}},
	"escalate":    {desc: []string{"escalate {a} in {S} to the next level of responders."}, extra: []prop{{Name: "level", Type: "integer", Desc: "escalation level", Min: ptr(1), Max: ptr(5)}}},
	"convert":     {desc: []string{"convert {a} in {S} into a contact, an account and a deal."}},
	"log":         {kind: kindMake, desc: []string{"log {a} in {S}."}},
	"capture":     {desc: []string{"capture an authorized {s} in {S}."}, extra: []prop{{Name: "amount", Type: "integer", Desc: "amount in cents (default: all)", Min: ptr(1)}}},
	"refund":      {desc: []string{"refund {a} in {S}, fully or in part, back to the customer."}, extra: []prop{{Name: "amount", Type: "integer", Desc: "amount in cents (default: all)", Min: ptr(1)}, reason}},
	"void":        {desc: []string{"void {a} in {S} so it can no longer be paid."}},
	"finalize":    {desc: []string{"finalize a draft {s} in {S} so it can be sent."}},
	"pay":         {desc: []string{"pay {a} in {S} now with the default payment method."}},
	"pause":       {desc: []string{"pause {a} in {S}."}},
	"resume":      {desc: []string{"resume a paused {s} in {S}."}},
	"scale":       {desc: []string{"scale {a} in {S} to a number of replicas."}, extra: []prop{{Name: "replicas", Type: "integer", Desc: "desired replica count", Min: ptr(0), Max: ptr(500), Req: true}}},
	"restart":     {desc: []string{"restart {a} in {S}.", "do a rolling restart of {a} in {S}."}},
	"rollback":    {desc: []string{"roll back {a} in {S} to an earlier revision."}, extra: []prop{{Name: "revision", Type: "integer", Desc: "revision to return to (default: the previous)", Min: ptr(1)}}},
	"drain":       {desc: []string{"drain {a} in {S}: evict its pods before maintenance."}},
	"cordon":      {desc: []string{"cordon {a} in {S}: no new pods are scheduled on it."}},
	"uncordon":    {desc: []string{"uncordon {a} in {S}: allow scheduling on it again."}},
	"install":     {kind: kindMake, desc: []string{"install {a} into {S} from a chart."}},
	"upgrade":     {kind: kindChange, desc: []string{"upgrade {a} in {S} to a new chart version or values."}},
	"uninstall":   {desc: []string{"uninstall {a} from {S}."}},
	"track":       {kind: kindMake, desc: []string{"track {a} in {S} for a user."}},
	"export":      {desc: []string{"export {a} from {S} as a file."}, extra: []prop{{Name: "format", Type: "string", Desc: "file format", Enum: []string{"csv", "json", "xlsx"}}}},
	"schedule":    {desc: []string{"schedule {a} in {S} to run on a cron schedule."}, extra: []prop{{Name: "cron", Type: "string", Desc: "cron expression, e.g. \"0 9 * * 1\"", Req: true}}},
	"toggle":      {desc: []string{"turn {a} in {S} on or off."}, extra: []prop{{Name: "enabled", Type: "boolean", Desc: "the new state", Req: true}}},
	"reboot":      {desc: []string{"reboot {a} in {S}."}},
	"terminate":   {desc: []string{"terminate {a} in {S} and release its disks."}, extra: []prop{force}},
	"resize":      {desc: []string{"resize {a} in {S} to another machine type."}, extra: []prop{{Name: "size", Type: "string", Desc: "machine type, e.g. \"m5.large\"", Req: true}}},
	"rotate":      {desc: []string{"rotate {a} in {S}: generate a new value and expire the old one."}},
	"attach":      {desc: []string{"attach {a} in {S} to a role or user."}, extra: []prop{target}},
	"detach":      {desc: []string{"detach {a} in {S} from a role or user."}, extra: []prop{target}},
	"subscribe":   {desc: []string{"subscribe to {a} in {S}."}},
	"apply":       {desc: []string{"apply {a} in {S}."}},
	"invite":      {desc: []string{"invite a person to {a} in {S}."}, extra: []prop{{Name: "email", Type: "string", Desc: "who to invite", Format: "email", Req: true}}},
	"kill":        {desc: []string{"kill {a} in {S}: end its backend process."}},
	"geocode":     {kind: kindMake, desc: []string{"geocode {a} with {S}: turn it into latitude and longitude."}},
	"suspend":     {desc: []string{"suspend {a} in {S} so it stops running on its schedule."}},
	"reject":      {desc: []string{"reject {a} in {S}."}, extra: []prop{reason}},
}

func str(name, desc string, req bool) prop {
	return prop{Name: name, Type: "string", Desc: desc, Req: req}
}

func integer(name, desc string, req bool) prop {
	return prop{Name: name, Type: "integer", Desc: desc, Min: ptr(0), Req: req}
}

func list(name, desc string, req bool) prop {
	return prop{Name: name, Type: "array", Items: "string", Desc: desc, Req: req}
}

var families = []*family{
	{key: "issues", system: "the issue tracker", products: []product{{"jira", "Jira"}, {"linear", "Linear"}, {"youtrack", "YouTrack"}}, nouns: []*noun{
		{name: "issue", intID: true, gloss: "Issues are bug reports, tasks and feature requests.",
			fields: []prop{str("title", "one-line summary", true), str("body", "markdown description", false), list("labels", "label names", false)},
			verbs:  []string{"create", "search", "get", "update", "list", "close", "reopen", "assign", "transition", "link", "delete"}},
		{name: "comment", gloss: "Comments are the discussion under an issue.",
			fields: []prop{integer("issue_id", "the issue to comment on", true), str("body", "markdown text", true)},
			verbs:  []string{"add", "list", "update", "delete"}},
		{name: "label", fields: []prop{str("name", "label name", true), str("color", "hex color like #d73a4a", false)},
			verbs: []string{"create", "list", "rename", "delete", "update"}},
		{name: "milestone", gloss: "Milestones group issues under a due date.",
			fields: []prop{str("title", "milestone title", true), {Name: "due_date", Type: "string", Format: "date", Desc: "due date"}},
			verbs:  []string{"create", "list", "update", "close"}},
		{name: "sprint", gloss: "Sprints are fixed iterations of planned issues.",
			verbs: []string{"start", "complete", "list", "get", "create"}},
		{name: "project", verbs: []string{"create", "list", "get", "archive", "update", "delete"}},
	}},
	{key: "chat", system: "the team chat", products: []product{{"slack", "Slack"}, {"teams", "Microsoft Teams"}, {"discord", "Discord"}}, nouns: []*noun{
		{name: "message", gloss: "Messages are posts in channels and direct conversations.",
			fields: []prop{str("channel", "channel name or ID", true), str("text", "message text (markdown)", true), str("thread_id", "reply in this thread", false)},
			verbs:  []string{"send", "search", "update", "delete", "pin", "list", "get", "reply_to"}},
		{name: "channel", gloss: "Channels are named rooms for a team or topic.",
			fields: []prop{str("name", "channel name without #", true), {Name: "private", Type: "boolean", Desc: "invite-only channel"}},
			verbs:  []string{"list", "create", "join", "leave", "archive", "rename", "get", "invite"}},
		{name: "thread", gloss: "Threads are replies under one message.", verbs: []string{"get", "follow", "mute", "list"}},
		{name: "reaction", fields: []prop{str("message_id", "the message", true), str("emoji", "emoji name like thumbsup", true)},
			verbs: []string{"add", "remove", "list"}},
		{name: "member", gloss: "Members are the people in the workspace.", verbs: []string{"list", "search", "get", "remove"}},
		{name: "status", plural: "statuses", fields: []prop{str("text", "status text", true), str("emoji", "status emoji", false)},
			verbs: []string{"set"}},
	}},
	{key: "database", system: "the SQL database", products: []product{{"postgres", "PostgreSQL"}, {"mysql", "MySQL"}, {"sqlite", "SQLite"}}, nouns: []*noun{
		{name: "query", plural: "queries", gloss: "Queries are SQL statements.",
			fields: []prop{str("sql", "the SQL statement", true), list("params", "positional parameters", false)},
			verbs:  []string{"run", "explain", "cancel"}},
		{name: "table", gloss: "Tables hold rows with typed columns.", verbs: []string{"list", "describe", "create", "drop", "truncate"}},
		{name: "index", plural: "indexes", fields: []prop{str("table", "table name", true), list("columns", "indexed columns", true), {Name: "unique", Type: "boolean", Desc: "unique index"}},
			verbs: []string{"create", "list", "drop"}},
		{name: "schema", gloss: "Schemas are namespaces of tables.", verbs: []string{"list", "describe"}},
		{name: "row", fields: []prop{str("table", "table name", true), {Name: "rows", Type: "array", Items: "object", Desc: "rows as column→value objects", Req: true}},
			verbs: []string{"insert"}},
		{name: "backup", gloss: "Backups are point-in-time snapshots of the database.", verbs: []string{"create", "restore", "list", "delete"}},
		{name: "connection", verbs: []string{"list", "kill"}},
		{name: "view", gloss: "Views are saved queries that act like tables.", fields: []prop{str("name", "view name", true), str("sql", "the SELECT statement", true)}, verbs: []string{"create", "list", "drop"}},
		{name: "migration", gloss: "Migrations are versioned schema changes.", verbs: []string{"run", "list", "rollback"}},
	}},
	{key: "files", system: "cloud file storage", products: []product{{"dropbox", "Dropbox"}, {"gdrive", "Google Drive"}, {"box", "Box"}}, nouns: []*noun{
		{name: "file", gloss: "Files are documents, images and other uploads.",
			fields: []prop{str("path", "destination path", true), str("content_base64", "file content, base64", true)},
			verbs:  []string{"upload", "download", "search", "list", "move", "copy", "rename", "share", "delete"}},
		{name: "folder", fields: []prop{str("path", "folder path", true)}, verbs: []string{"create", "list", "move", "share", "delete", "rename"}},
		{name: "share_link", gloss: "Share links give anyone with the URL access.", fields: []prop{str("path", "file or folder path", true), {Name: "expires", Type: "string", Format: "date-time", Desc: "expiry time"}},
			verbs: []string{"create", "list", "delete"}},
		{name: "file_version", desc: map[string]string{"list": "list earlier versions of a file in {S}.", "restore": "restore an earlier version of a file in {S}."}, args: map[string][]prop{"list": {str("path", "the file", true)}, "restore": {str("path", "the file", true), str("file_version_id", "version to restore", true)}}, gloss: "File versions are earlier copies kept on every save.", verbs: []string{"list", "restore"}},
		{name: "trash", plural: "trash", verbs: []string{"empty"}},
	}},
	{key: "calendar", system: "the calendar", products: []product{{"gcal", "Google Calendar"}, {"outlook", "Outlook Calendar"}, {"caldav", "CalDAV"}}, nouns: []*noun{
		{name: "event", gloss: "Events are meetings and appointments with a start and end time.",
			fields: []prop{str("title", "event title", true), {Name: "start", Type: "string", Format: "date-time", Desc: "start time", Req: true}, {Name: "end", Type: "string", Format: "date-time", Desc: "end time"}, list("attendees", "attendee emails", false)},
			verbs:  []string{"create", "list", "get", "update", "delete", "search", "cancel", "move"}},
		{name: "calendar", verbs: []string{"list", "create", "share", "subscribe", "get", "delete"}},
		{name: "attendee", fields: []prop{str("event_id", "the event", true), {Name: "email", Type: "string", Format: "email", Desc: "attendee email", Req: true}},
			verbs: []string{"add", "remove", "list"}},
		{name: "availability", plural: "availability", fields: []prop{list("attendees", "emails of the people", true), {Name: "from", Type: "string", Format: "date-time", Desc: "range start", Req: true}, {Name: "to", Type: "string", Format: "date-time", Desc: "range end"}},
			verbs: []string{"check"}},
		{name: "meeting_time", fields: []prop{list("attendees", "emails of the attendees", true), integer("duration_minutes", "meeting length", true)},
			verbs: []string{"find"}},
		{name: "reminder", fields: []prop{str("event_id", "the event", true), integer("minutes_before", "when to remind", true)}, verbs: []string{"add", "list", "delete"}},
		{name: "room", gloss: "Rooms are bookable meeting rooms.", fields: []prop{str("room_id", "the room", true), {Name: "start", Type: "string", Format: "date-time", Desc: "start time", Req: true}, {Name: "end", Type: "string", Format: "date-time", Desc: "end time", Req: true}},
			verbs: []string{"book", "list"}},
	}},
	{key: "email", system: "the mailbox", products: []product{{"gmail", "Gmail"}, {"fastmail", "Fastmail"}, {"proton", "Proton Mail"}}, nouns: []*noun{
		{name: "email", gloss: "Emails are messages in the inbox and other mail folders.",
			fields: []prop{list("to", "recipient addresses", true), str("subject", "subject line", true), str("body", "plain text body", false), list("cc", "copy recipients", false)},
			verbs:  []string{"send", "search", "read", "reply_to", "forward", "archive", "delete", "list", "move"}},
		{name: "draft", fields: []prop{list("to", "recipient addresses", true), str("subject", "subject line", false), str("body", "plain text body", false)},
			verbs: []string{"create", "update", "send", "list", "delete"}},
		{name: "attachment", gloss: "Attachments are files sent with an email.", verbs: []string{"download", "list"}},
		{name: "filter", gloss: "Filters sort incoming mail automatically.", fields: []prop{str("from", "sender to match", false), str("has_words", "words to match", false), str("label", "label to apply", true)},
			verbs: []string{"create", "list", "delete"}},
		{name: "contact", gloss: "Contacts are people in the address book.", fields: []prop{str("name", "full name", true), {Name: "email", Type: "string", Format: "email", Desc: "email address"}, str("phone", "phone number", false)},
			verbs: []string{"create", "search", "get", "update", "delete"}},
		{name: "signature", desc: map[string]string{"get": "get your email signature in {S}.", "update": "update your email signature in {S}."}, args: map[string][]prop{"update": {str("text", "the new signature text", true), str("from", "sending address (default: primary)", false)}, "get": {str("from", "sending address (default: primary)", false)}}, verbs: []string{"get", "update"}},
		{name: "mail_label", gloss: "Mail labels tag and group emails.", verbs: []string{"create", "list", "delete"}},
	}},
	{key: "ci", system: "the CI/CD service", products: []product{{"jenkins", "Jenkins"}, {"circleci", "CircleCI"}, {"buildkite", "Buildkite"}}, nouns: []*noun{
		{name: "pipeline", gloss: "Pipelines build, test and deploy a branch.", fields: []prop{str("branch", "branch or tag to build", true), {Name: "variables", Type: "object", Desc: "extra environment variables"}},
			verbs: []string{"run", "list", "get", "cancel", "schedule", "retry"}},
		{name: "build", intID: true, gloss: "Builds are single runs of a pipeline.", verbs: []string{"get", "list", "cancel", "retry"}},
		{name: "build_log", desc: map[string]string{"get": "get the console log of a build in {S}.", "download": "download the full console log of a build from {S}."}, args: map[string][]prop{"get": {integer("build_id", "the build", true), str("step", "step name (default: all)", false)}, "download": {integer("build_id", "the build", true)}}, gloss: "Build logs are the console output of build steps.", verbs: []string{"get", "search", "download"}},
		{name: "artifact", gloss: "Artifacts are files a build produced.", verbs: []string{"list", "download", "delete", "get"}},
		{name: "workflow", fields: []prop{str("workflow", "workflow file or name", true), str("ref", "git ref", true)},
			verbs: []string{"list", "trigger", "disable", "enable", "get"}},
		{name: "runner", gloss: "Runners are the machines that execute jobs.", verbs: []string{"list", "get", "remove", "pause"}},
		{name: "ci_variable", fields: []prop{str("key", "variable name", true), str("value", "variable value", true), {Name: "masked", Type: "boolean", Desc: "hide in logs"}},
			verbs: []string{"list", "set", "delete"}},
	}},
	{key: "cloud", system: "the cloud account", products: []product{{"aws", "AWS"}, {"gcp", "Google Cloud"}, {"azure", "Azure"}}, nouns: []*noun{
		{name: "instance", gloss: "Instances are virtual machines.", fields: []prop{str("name", "instance name", true), str("machine_type", "machine type", true), str("image", "boot image", false), str("region", "region", false)},
			verbs: []string{"create", "list", "get", "start", "stop", "reboot", "resize", "terminate"}},
		{name: "bucket", gloss: "Buckets are object storage containers.", fields: []prop{str("name", "globally unique bucket name", true), str("region", "region", false)},
			verbs: []string{"create", "list", "get", "delete", "update"}},
		{name: "dns_record", gloss: "DNS records map host names to addresses.", fields: []prop{str("zone", "DNS zone", true), str("name", "record name", true), {Name: "type", Type: "string", Enum: []string{"A", "AAAA", "CNAME", "TXT", "MX"}, Desc: "record type", Req: true}, str("value", "record value", true)},
			verbs: []string{"create", "list", "update", "delete"}},
		{name: "load_balancer", verbs: []string{"create", "list", "get", "delete", "update"}},
		{name: "secret", gloss: "Secrets hold credentials such as API keys and passwords.", fields: []prop{str("name", "secret name", true), str("value", "secret value", true)},
			verbs: []string{"rotate", "create", "get", "list", "delete"}},
		{name: "policy", plural: "policies", gloss: "Policies grant IAM permissions.", verbs: []string{"list", "attach", "detach"}},
		{name: "cost_report", desc: map[string]string{"get": "get the cost report of {S} for a month."}, args: map[string][]prop{"": {{Name: "month", Type: "string", Desc: "month as YYYY-MM", Req: true}, {Name: "group_by", Type: "string", Enum: []string{"service", "region", "tag"}, Desc: "grouping"}}}, gloss: "Cost reports break down spending by service.", verbs: []string{"get"}},
		{name: "volume", gloss: "Volumes are block storage disks for instances.", fields: []prop{integer("size_gb", "size in GB", true), str("zone", "availability zone", true)},
			verbs: []string{"create", "attach", "detach", "list", "resize", "delete"}},
		{name: "snapshot", gloss: "Snapshots are point-in-time copies of a disk.", verbs: []string{"create", "list", "restore", "delete"}},
	}},
	{key: "code", system: "the code host", products: []product{{"github", "GitHub"}, {"gitlab", "GitLab"}, {"bitbucket", "Bitbucket"}}, nouns: []*noun{
		{name: "pull_request", intID: true, gloss: "Pull requests propose merging a branch into another.",
			fields: []prop{str("title", "title", true), str("head", "branch with the changes", true), str("base", "branch to merge into", true), str("body", "description", false)},
			verbs:  []string{"create", "merge", "get", "list", "approve", "update", "close", "search"}},
		{name: "repository", plural: "repositories", gloss: "Repositories hold code and its history.", fields: []prop{str("name", "repository name", true), {Name: "private", Type: "boolean", Desc: "private repository"}},
			verbs: []string{"create", "get", "list", "fork", "search", "archive", "delete", "update"}},
		{name: "branch", plural: "branches", fields: []prop{str("name", "branch name", true), str("from", "start point", false)}, verbs: []string{"create", "list", "delete", "protect"}},
		{name: "commit", gloss: "Commits are recorded changes with a message and author.", verbs: []string{"get", "list", "search", "revert"}},
		{name: "release", gloss: "Releases are tagged versions with notes and binaries.", fields: []prop{str("tag", "tag name like v1.2.0", true), str("notes", "release notes", false)},
			verbs: []string{"create", "list", "get", "publish", "delete"}},
		{name: "review_comment", fields: []prop{integer("pull_request_id", "the pull request", true), str("path", "file path", true), integer("line", "line number", true), str("body", "comment", true)},
			verbs: []string{"add", "list", "resolve"}},
		{name: "code", plural: "code", args: map[string][]prop{"": {str("query", "code search query", true), str("language", "limit to a language", false), integer("limit", "maximum number of results", false)}},
			desc: map[string]string{"search": "search source code across {S} for a symbol, string or regular expression."}, verbs: []string{"search"}},
		{name: "webhook", gloss: "Webhooks post repository events to a URL.", fields: []prop{{Name: "url", Type: "string", Format: "uri", Desc: "payload URL", Req: true}, list("events", "events to send", true)},
			verbs: []string{"create", "list", "delete"}},
	}},
	{key: "monitoring", system: "the monitoring service", products: []product{{"datadog", "Datadog"}, {"grafana", "Grafana"}, {"newrelic", "New Relic"}}, nouns: []*noun{
		{name: "alert", gloss: "Alerts fire when a monitored value crosses a threshold.", verbs: []string{"acknowledge", "list", "get", "silence", "resolve", "create"}},
		{name: "metric", gloss: "Metrics are time series such as CPU, latency and error rate.", verbs: []string{"query+p", "list"}},
		{name: "dashboard", gloss: "Dashboards are pages of graphs.", verbs: []string{"create", "get", "list", "update", "delete", "share"}},
		{name: "log", gloss: "Logs are timestamped lines from services.", verbs: []string{"search", "tail+p"}},
		{name: "monitor", fields: []prop{str("name", "monitor name", true), str("query", "metric query", true), {Name: "threshold", Type: "number", Desc: "alert threshold", Req: true}},
			verbs: []string{"create", "mute", "unmute", "list", "delete"}},
		{name: "slo", gloss: "SLOs are service level objectives with an error budget.", verbs: []string{"create", "get", "list"}},
		{name: "trace", gloss: "Traces follow one request through the services it touched.", verbs: []string{"search", "get"}},
	}},
	{key: "incidents", system: "the incident response service", products: []product{{"pagerduty", "PagerDuty"}, {"opsgenie", "Opsgenie"}, {"incidentio", "incident.io"}}, nouns: []*noun{
		{name: "incident", gloss: "Incidents are outages and degradations being worked on.", fields: []prop{str("title", "what is broken", true), {Name: "severity", Type: "string", Enum: []string{"sev1", "sev2", "sev3", "sev4"}, Desc: "severity", Req: true}, str("service", "affected service", false)},
			verbs: []string{"create", "get", "list", "update", "resolve", "escalate", "acknowledge"}},
		{name: "on_call_schedule", gloss: "On-call schedules say who is paged when.", verbs: []string{"get", "list"}},
		{name: "postmortem", gloss: "Postmortems record causes and follow-ups of an incident.", verbs: []string{"create", "get", "publish"}},
		{name: "responder", fields: []prop{str("incident_id", "the incident", true), str("user", "username", true)}, verbs: []string{"add", "remove"}},
		{name: "status_page", gloss: "Status pages tell customers about outages.", verbs: []string{"get", "update"}},
		{name: "escalation_policy", plural: "escalation_policies", verbs: []string{"list", "get", "update"}},
	}},
	{key: "crm", system: "the CRM", products: []product{{"salesforce", "Salesforce"}, {"hubspot", "HubSpot"}, {"pipedrive", "Pipedrive"}}, nouns: []*noun{
		{name: "lead", gloss: "Leads are prospective customers not yet qualified.", fields: []prop{str("name", "person name", true), str("company", "company", false), {Name: "email", Type: "string", Format: "email", Desc: "email"}},
			verbs: []string{"create", "get", "update", "convert", "list", "search", "assign"}},
		{name: "deal", gloss: "Deals are sales opportunities with an amount and a stage.", fields: []prop{str("name", "deal name", true), integer("amount", "value in cents", false), str("stage", "pipeline stage", false)},
			verbs: []string{"create", "get", "update", "close", "list", "search"}},
		{name: "account", gloss: "Accounts are customer companies.", verbs: []string{"create", "get", "update", "list"}},
		{name: "activity", plural: "activities", gloss: "Activities are calls, meetings and notes on a record.", fields: []prop{str("record_id", "lead, deal or account", true), {Name: "type", Type: "string", Enum: []string{"call", "meeting", "note"}, Desc: "kind", Req: true}, str("notes", "what happened", false)},
			verbs: []string{"log", "list"}},
		{name: "quote", fields: []prop{str("deal_id", "the deal", true), list("line_items", "product IDs", true)}, verbs: []string{"create", "send", "get"}},
		{name: "sales_pipeline", verbs: []string{"list", "get"}},
	}},
	{key: "wiki", system: "the wiki", products: []product{{"confluence", "Confluence"}, {"notion", "Notion"}, {"gitbook", "GitBook"}}, nouns: []*noun{
		{name: "page", gloss: "Pages are documents in the knowledge base.", fields: []prop{str("title", "page title", true), str("content", "markdown content", true), str("parent_id", "parent page", false)},
			verbs: []string{"create", "get", "update", "search", "list", "move", "publish", "delete", "archive", "export"}},
		{name: "space", gloss: "Spaces group pages for a team.", verbs: []string{"create", "list", "get", "archive", "update"}},
		{name: "template", args: map[string][]prop{"apply": {str("template_id", "the template", true), str("title", "title of the new page", true)}}, desc: map[string]string{"apply": "apply {a} in {S}: create a new page from it."}, gloss: "Templates are reusable page layouts.", verbs: []string{"list", "get", "apply"}},
		{name: "page_comment", fields: []prop{str("page_id", "the page", true), str("body", "comment", true)}, verbs: []string{"add", "list", "resolve"}},
		{name: "page_attachment", fields: []prop{str("page_id", "the page", true), str("filename", "file name", true), str("content_base64", "content, base64", true)},
			verbs: []string{"upload", "list"}},
		{name: "page_history", desc: map[string]string{"get": "get the edit history of a page in {S}: who changed what, when."}, plural: "page_history", args: map[string][]prop{"": {str("page_id", "the page", true), integer("limit", "most recent versions to return", false)}}, verbs: []string{"get"}},
	}},
	{key: "payments", system: "the payments platform", products: []product{{"stripe", "Stripe"}, {"paypal", "PayPal"}, {"adyen", "Adyen"}}, nouns: []*noun{
		{name: "payment", gloss: "Payments are card or bank charges to a customer.", fields: []prop{integer("amount", "amount in cents", true), str("currency", "ISO currency code", true), str("customer_id", "who pays", false)},
			verbs: []string{"create", "refund", "capture", "get", "list", "cancel"}},
		{name: "invoice", gloss: "Invoices bill a customer for line items.", fields: []prop{str("customer_id", "the customer", true), integer("days_until_due", "payment terms", false)},
			verbs: []string{"create", "send", "void", "get", "list", "finalize", "pay"}},
		{name: "customer", gloss: "Customers are the people and companies who pay.", fields: []prop{{Name: "email", Type: "string", Format: "email", Desc: "billing email", Req: true}, str("name", "name", false)},
			verbs: []string{"create", "get", "update", "delete", "list", "search"}},
		{name: "subscription", gloss: "Subscriptions bill a customer on a recurring plan.", fields: []prop{str("customer_id", "the customer", true), str("price_id", "the plan price", true)},
			verbs: []string{"create", "cancel", "update", "get", "list", "pause", "resume"}},
		{name: "payout", gloss: "Payouts move the balance to your bank account.", verbs: []string{"list", "get", "create", "cancel"}},
		{name: "coupon", fields: []prop{integer("percent_off", "discount percent", true), str("duration", "once, repeating or forever", false)}, verbs: []string{"create", "delete", "list"}},
		{name: "dispute", gloss: "Disputes are chargebacks opened by a cardholder's bank.", verbs: []string{"list", "get", "update", "close"}},
		{name: "price", gloss: "Prices set what a product costs, once or per billing period.", fields: []prop{str("product_id", "the product", true), integer("unit_amount", "amount in cents", true), str("interval", "month or year for recurring prices", false)},
			verbs: []string{"create", "list", "get"}},
	}},
	{key: "kubernetes", system: "the Kubernetes cluster", products: []product{{"eks", "EKS"}, {"gke", "GKE"}, {"aks", "AKS"}}, nouns: []*noun{
		{name: "pod", gloss: "Pods are running groups of containers.", verbs: []string{"list", "get", "delete"}},
		{name: "pod_log", desc: map[string]string{"get": "get the logs of a container in a pod in {S}.", "tail": "tail the logs of a pod in {S}: stream the newest lines."}, args: map[string][]prop{"": {str("pod_id", "the pod", true), str("container", "container name (default: the first)", false), integer("tail_lines", "lines from the end", false)}}, gloss: "Pod logs are the container output of a pod.", verbs: []string{"get+p", "tail+p"}},
		{name: "deployment", gloss: "Deployments keep a number of pod replicas running.", fields: []prop{str("name", "deployment name", true), str("image", "container image", true), integer("replicas", "replica count", false)},
			verbs: []string{"scale", "list", "get", "restart", "rollback", "create", "delete"}},
		{name: "service", gloss: "Services expose pods on a stable address.", verbs: []string{"list", "get", "create", "delete"}},
		{name: "namespace", verbs: []string{"list", "create", "delete"}},
		{name: "config_map", fields: []prop{str("name", "config map name", true), {Name: "data", Type: "object", Desc: "key→value data", Req: true}}, verbs: []string{"get", "create", "update", "list"}},
		{name: "node", gloss: "Nodes are the worker machines of the cluster.", verbs: []string{"list", "get", "drain", "cordon", "uncordon"}},
		{name: "helm_release", gloss: "Helm releases are installed charts.", fields: []prop{str("name", "release name", true), str("chart", "chart reference", true), {Name: "values", Type: "object", Desc: "chart values"}},
			verbs: []string{"install", "upgrade", "uninstall", "list", "rollback"}},
		{name: "ingress", plural: "ingresses", gloss: "Ingresses route outside HTTP traffic to services.", verbs: []string{"list", "get", "create", "delete"}},
		{name: "cron_job", gloss: "Cron jobs run pods on a schedule.", fields: []prop{str("name", "name", true), str("schedule", "cron schedule", true), str("image", "container image", true)},
			verbs: []string{"list", "create", "suspend", "delete"}},
	}},
	{key: "analytics", system: "product analytics", products: []product{{"mixpanel", "Mixpanel"}, {"amplitude", "Amplitude"}, {"posthog", "PostHog"}}, nouns: []*noun{
		{name: "event", gloss: "Analytics events record what users did in the product.", fields: []prop{str("event", "event name", true), str("distinct_id", "user ID", true), {Name: "properties", Type: "object", Desc: "event properties"}},
			verbs: []string{"track", "count+p"}},
		{name: "funnel", gloss: "Funnels measure conversion through a series of steps.", verbs: []string{"create", "get", "list"}},
		{name: "cohort", gloss: "Cohorts are groups of users sharing behaviour.", verbs: []string{"create", "get", "list", "export"}},
		{name: "report", verbs: []string{"run", "get", "list", "schedule", "export"}},
		{name: "experiment", gloss: "Experiments are A/B tests between variants.", verbs: []string{"create", "start", "stop", "get", "list"}},
		{name: "feature_flag", gloss: "Feature flags turn features on for some users.", fields: []prop{str("key", "flag key", true), {Name: "rollout_percent", Type: "integer", Desc: "share of users", Min: ptr(0), Max: ptr(100)}},
			verbs: []string{"create", "get", "update", "toggle", "list", "delete"}},
		{name: "insight", gloss: "Insights are saved charts of events over time.", verbs: []string{"create", "get", "list"}},
	}},
	{key: "tasks", system: "the task manager", products: []product{{"todoist", "Todoist"}, {"asana", "Asana"}, {"trello", "Trello"}}, nouns: []*noun{
		{name: "task", gloss: "Tasks are to-do items with a due date.", fields: []prop{str("title", "what to do", true), {Name: "due", Type: "string", Format: "date", Desc: "due date"}, {Name: "priority", Type: "integer", Desc: "1 (high) to 4", Min: ptr(1), Max: ptr(4)}},
			verbs: []string{"create", "get", "update", "complete", "delete", "list", "search", "assign", "move"}},
		{name: "board", gloss: "Boards are columns of cards for a workflow.", verbs: []string{"create", "list", "get", "archive", "update"}},
		{name: "subtask", fields: []prop{str("task_id", "parent task", true), str("title", "what to do", true)}, verbs: []string{"create", "list"}},
		{name: "task_list", verbs: []string{"create", "list"}},
		{name: "time_entry", plural: "time_entries", gloss: "Time entries track hours spent on a task.", fields: []prop{str("task_id", "the task", true), integer("minutes", "time spent", true)},
			verbs: []string{"start", "stop", "list", "create"}},
		{name: "tag", fields: []prop{str("task_id", "the task", true), str("tag", "tag name", true)}, verbs: []string{"add", "list"}},
	}},
	{key: "support", system: "the help desk", products: []product{{"zendesk", "Zendesk"}, {"freshdesk", "Freshdesk"}, {"intercom", "Intercom"}}, nouns: []*noun{
		{name: "ticket", intID: true, gloss: "Tickets are customer support requests.", fields: []prop{str("subject", "subject", true), str("description", "the customer's problem", true), {Name: "priority", Type: "string", Enum: []string{"low", "normal", "high", "urgent"}, Desc: "priority"}},
			verbs: []string{"create", "get", "update", "list", "search", "assign", "close", "reopen", "reply_to", "escalate"}},
		{name: "macro", gloss: "Macros are canned replies and actions for tickets.", args: map[string][]prop{"apply": {integer("ticket_id", "the ticket", true), str("macro_id", "the macro", true)}},
			desc: map[string]string{"apply": "apply a macro to a ticket in {S}: canned reply plus field changes."}, verbs: []string{"list", "apply"}},
		{name: "satisfaction_rating", gloss: "Satisfaction ratings are customers' scores of solved tickets.", verbs: []string{"list", "get"}},
		{name: "help_article", gloss: "Help articles are the public self-service knowledge base.", fields: []prop{str("title", "title", true), str("body", "HTML body", true)},
			verbs: []string{"create", "search", "update", "list"}},
		{name: "support_agent", verbs: []string{"list", "get"}},
	}},
	{key: "maps", system: "the maps service", products: []product{{"google_maps", "Google Maps"}, {"mapbox", "Mapbox"}, {"here", "HERE"}}, nouns: []*noun{
		{name: "directions", plural: "directions", args: map[string][]prop{"": {str("origin", "start address or place", true), str("destination", "end address or place", true), {Name: "mode", Type: "string", Enum: []string{"driving", "walking", "bicycling", "transit"}, Desc: "travel mode"}}},
			desc: map[string]string{"get": "get driving, walking or transit directions between two places, with travel time and distance."}, verbs: []string{"get+p"}},
		{name: "place", gloss: "Places are businesses and points of interest.", verbs: []string{"search", "get"}},
		{name: "address", plural: "addresses", fields: []prop{str("address", "street address", true)}, verbs: []string{"geocode"}},
		{name: "time_zone", args: map[string][]prop{"": {{Name: "latitude", Type: "number", Desc: "latitude", Req: true}, {Name: "longitude", Type: "number", Desc: "longitude", Req: true}}},
			desc: map[string]string{"get": "get the time zone and UTC offset of a location."}, verbs: []string{"get"}},
	}},
	{key: "hr", system: "the HR system", products: []product{{"workday", "Workday"}, {"bamboohr", "BambooHR"}, {"personio", "Personio"}}, nouns: []*noun{
		{name: "employee", gloss: "Employees are people on the payroll with a manager and team.", verbs: []string{"get", "search", "list", "update"}},
		{name: "time_off_request", gloss: "Time off requests ask for vacation or sick leave.", fields: []prop{{Name: "start", Type: "string", Format: "date", Desc: "first day", Req: true}, {Name: "end", Type: "string", Format: "date", Desc: "last day", Req: true}, {Name: "type", Type: "string", Enum: []string{"vacation", "sick", "parental", "unpaid"}, Desc: "kind of leave", Req: true}},
			verbs: []string{"create", "approve", "reject", "list", "cancel"}},
		{name: "job_opening", gloss: "Job openings are positions being hired for.", verbs: []string{"create", "list", "get", "close"}},
		{name: "candidate", gloss: "Candidates are applicants for a job opening.", verbs: []string{"search", "get", "reject"}},
		{name: "org_chart", plural: "org_chart", args: map[string][]prop{"": {str("employee_id", "whose part of the chart (default: the whole company)", false)}},
			desc: map[string]string{"get": "get the org chart of {S}: who reports to whom."}, verbs: []string{"get"}},
	}},
	{key: "weather", system: "the weather service", products: []product{{"tomorrowio", "Tomorrow.io"}, {"noaa", "NOAA"}, {"metno", "MET Norway"}}, nouns: []*noun{
		{name: "forecast", desc: map[string]string{"get": "get the weather forecast for a location from {S}."}, args: map[string][]prop{"": {str("location", "city name or \"lat,lon\"", true), {Name: "units", Type: "string", Enum: []string{"metric", "imperial"}, Desc: "units"}, {Name: "days", Type: "integer", Desc: "days ahead", Min: ptr(1), Max: ptr(10)}}}, gloss: "Forecasts give temperature, rain and wind for the coming days.", verbs: []string{"get"}},
		{name: "current_weather", desc: map[string]string{"get": "get the current weather conditions at a location: temperature, humidity, wind."}, args: map[string][]prop{"": {str("location", "city name or \"lat,lon\"", true), {Name: "units", Type: "string", Enum: []string{"metric", "imperial"}, Desc: "units"}}}, plural: "current_weather", verbs: []string{"get"}},
		{name: "weather_alert", desc: map[string]string{"list": "list active weather alerts for a location from {S}."}, args: map[string][]prop{"": {str("location", "city name or \"lat,lon\"", true), {Name: "units", Type: "string", Enum: []string{"metric", "imperial"}, Desc: "units"}}}, gloss: "Weather alerts warn of storms, floods and heat.", verbs: []string{"list"}},
		{name: "air_quality", desc: map[string]string{"get": "get the air quality index and pollutant levels at a location."}, args: map[string][]prop{"": {str("location", "city name or \"lat,lon\"", true), {Name: "units", Type: "string", Enum: []string{"metric", "imperial"}, Desc: "units"}}}, plural: "air_quality", verbs: []string{"get"}},
	}},
}

func init() {
	for i, f := range families {
		f.index = i
		for _, n := range f.nouns {
			for _, v := range n.verbs {
				if _, ok := verbs[strings.TrimSuffix(strings.TrimSuffix(v, "+p"), "+s")]; !ok {
					panic(fmt.Sprintf("genmcp: noun %s uses verb %q, which has no verbSpec", n.name, v))
				}
			}
		}
	}
}

func familyKeys() []string {
	keys := make([]string, len(families))
	for i, f := range families {
		keys[i] = f.key
	}
	return keys
}
