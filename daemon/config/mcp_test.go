package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func (e *env) mcpJSON() string    { return filepath.Join(e.project, MCPProjectFile) }
func (e *env) claudeJSON() string { return filepath.Join(e.home, ClaudeUserFile) }

// servers returns the servers by name.
func byName(servers []MCPServer) map[string]MCPServer {
	m := map[string]MCPServer{}
	for _, s := range servers {
		m[s.Name] = s
	}
	return m
}

func stdio(cmd string) string { return `{"command":"` + cmd + `"}` }

func mcpFile(entries ...string) string {
	return `{"mcpServers":{` + strings.Join(entries, ",") + `}}`
}

func TestMCPPrecedence(t *testing.T) {
	type file struct{ which, content string }
	tests := []struct {
		name               string
		files              []file
		extra              bool // a --mcp-config file
		inline             string
		wantCmd, wantScope string
		wantSource         func(e *env) string
		wantDir            bool
	}{
		{"managed only", []file{{"managed", mcpFile(`"s":` + stdio("managed"))}}, false, "", "managed", ScopeManaged, func(e *env) string { return e.managed }, false},
		{"user claude over managed", []file{
			{"managed", mcpFile(`"s":` + stdio("managed"))},
			{"claude", mcpFile(`"s":` + stdio("cc-user"))},
		}, false, "", "cc-user", ScopeUser, func(e *env) string { return e.claudeJSON() }, false},
		{"tackle user over claude user", []file{
			{"claude", mcpFile(`"s":` + stdio("cc-user"))},
			{"user", mcpFile(`"s":` + stdio("tackle-user"))},
		}, false, "", "tackle-user", ScopeUser, func(e *env) string { return e.path(ScopeUser, true) }, false},
		{"project over user", []file{
			{"user", mcpFile(`"s":` + stdio("tackle-user"))},
			{"project", mcpFile(`"s":` + stdio("project"))},
		}, false, "", "project", ScopeProject, func(e *env) string { return e.mcpJSON() }, true},
		{"claude local over project", []file{
			{"project", mcpFile(`"s":` + stdio("project"))},
			{"claudeLocal", ""},
		}, false, "", "cc-local", ScopeLocal, func(e *env) string { return e.claudeJSON() + " [projects." + e.project + "]" }, true},
		{"tackle local over claude local", []file{
			{"claudeLocal", ""},
			{"local", mcpFile(`"s":` + stdio("tackle-local"))},
		}, false, "", "tackle-local", ScopeLocal, func(e *env) string { return e.path(ScopeLocal, true) }, true},
		{"session over all", []file{
			{"local", mcpFile(`"s":` + stdio("tackle-local"))},
			{"project", mcpFile(`"s":` + stdio("project"))},
		}, true, "", "session", ScopeSession, func(e *env) string { return filepath.Join(e.project, "session.json") }, true},
		{"inline session JSON", []file{{"local", mcpFile(`"s":` + stdio("tackle-local"))}}, false,
			mcpFile(`"s":` + stdio("inline")), "inline", ScopeSession, func(*env) string { return "--mcp-config" }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			var extra []string
			for _, f := range tt.files {
				switch f.which {
				case "managed":
					write(t, e.managed, f.content)
				case "claude":
					write(t, e.claudeJSON(), f.content)
				case "claudeLocal":
					write(t, e.claudeJSON(), `{"numStartups":3,"mcpServers":{"s":{"command":"cc-user"}},"projects":{`+
						`"/elsewhere":{"mcpServers":{"s":{"command":"wrong-project"}}},`+
						`"`+e.project+`":{"mcpServers":{"s":{"command":"cc-local"}}}}}`)
				case "user":
					write(t, e.path(ScopeUser, true), f.content)
				case "project":
					write(t, e.mcpJSON(), f.content)
				case "local":
					write(t, e.path(ScopeLocal, true), f.content)
				}
			}
			if tt.extra {
				p := filepath.Join(e.project, "session.json")
				write(t, p, mcpFile(`"s":`+stdio("session")))
				// an earlier --mcp-config loses to a later one
				early := filepath.Join(e.project, "early.json")
				write(t, early, mcpFile(`"s":`+stdio("early")))
				extra = []string{early, p}
			}
			if tt.inline != "" {
				extra = []string{tt.inline}
			}
			got, problems := e.l.MCPServers(e.project, nil, extra, true)
			if problems != nil {
				t.Fatalf("problems: %v", problems)
			}
			s, ok := byName(got)["s"]
			if len(got) != 1 || !ok {
				t.Fatalf("servers = %+v, want one named s", got)
			}
			wantDir := ""
			if tt.wantDir {
				wantDir = e.project
			}
			want := MCPServer{Name: "s", Scope: tt.wantScope, Source: tt.wantSource(e), Type: "stdio", Command: tt.wantCmd, Dir: wantDir}
			if tt.wantScope == ScopeProject {
				want.State = MCPNeedsApproval // not approved here
			}
			if diff := cmp.Diff(want, s); diff != "" {
				t.Errorf("server (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMCPWholeEntry: nothing of a lower entry leaks into a higher one, and
// servers of every source are merged by name.
func TestMCPWholeEntry(t *testing.T) {
	e := newEnv(t)
	write(t, e.path(ScopeUser, true), mcpFile(
		`"a":{"command":"user-a","args":["x"],"env":{"K":"v"},"timeout":5000}`,
		`"u":{"type":"http","url":"https://u.example/mcp"}`))
	write(t, e.path(ScopeLocal, true), mcpFile(`"a":{"command":"local-a"}`))
	write(t, e.mcpJSON(), mcpFile(`"p":{"type":"sse","url":"http://p.example/sse"}`))
	got, problems := e.l.MCPServers(e.project, nil, nil, true)
	if problems != nil {
		t.Fatal(problems)
	}
	want := []MCPServer{
		{Name: "a", Scope: ScopeLocal, Source: e.path(ScopeLocal, true), Type: "stdio", Command: "local-a", Dir: e.project},
		{Name: "p", Scope: ScopeProject, Source: e.mcpJSON(), Type: "sse", URL: "http://p.example/sse", Dir: e.project, State: MCPNeedsApproval},
		{Name: "u", Scope: ScopeUser, Source: e.path(ScopeUser, true), Type: "http", URL: "https://u.example/mcp"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
}

func TestMCPExpansion(t *testing.T) {
	environ := []string{"HOME_DIR=/h", "TOKEN=secret", "EMPTY=", "TOKEN=later-wins", "PORT=8080"}
	tests := []struct {
		name     string
		entry    string
		want     MCPServer
		warnings []string
	}{
		{"stdio everywhere",
			`{"command":"${HOME_DIR}/bin/srv","args":["--token=${TOKEN}","${MISSING:-dflt}","plain"],"env":{"A":"${TOKEN}","B":"x${EMPTY}y"}}`,
			MCPServer{Type: "stdio", Command: "/h/bin/srv", Args: []string{"--token=later-wins", "dflt", "plain"}, Env: map[string]string{"A": "later-wins", "B": "xy"}}, nil},
		{"http url and headers",
			`{"type":"http","url":"http://localhost:${PORT}/mcp","headers":{"Authorization":"Bearer ${TOKEN}","X":"${EMPTY:-fallback}"}}`,
			MCPServer{Type: "http", URL: "http://localhost:8080/mcp", Headers: map[string]string{"Authorization": "Bearer later-wins", "X": "fallback"}}, nil},
		{"unset stays literal, warned once",
			`{"command":"srv","args":["${NOPE}","${NOPE}"],"env":{"K":"${ALSO_NOPE}"}}`,
			MCPServer{Type: "stdio", Command: "srv", Args: []string{"${NOPE}", "${NOPE}"}, Env: map[string]string{"K": "${ALSO_NOPE}"}},
			[]string{"${NOPE} is not set (left as is)", "${ALSO_NOPE} is not set (left as is)"}},
		{"unset in url is not a URL error",
			`{"type":"sse","url":"${BASE_URL}/sse","headers":{"K":"$NOT_A_REF ${"}}`,
			MCPServer{Type: "sse", URL: "${BASE_URL}/sse", Headers: map[string]string{"K": "$NOT_A_REF ${"}},
			[]string{"${BASE_URL} is not set (left as is)"}},
		{"default with spaces and empty default",
			`{"command":"srv","args":["${X:-a b c}","${X:-}"]}`,
			MCPServer{Type: "stdio", Command: "srv", Args: []string{"a b c", ""}}, nil},
		{"name and env keys are not expanded",
			`{"command":"srv","env":{"${TOKEN}":"v"}}`,
			MCPServer{Type: "stdio", Command: "srv", Env: map[string]string{"${TOKEN}": "v"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			write(t, e.path(ScopeUser, true), mcpFile(`"s":`+tt.entry))
			got, problems := e.l.MCPServers(e.project, environ, nil, true)
			if problems != nil || len(got) != 1 {
				t.Fatalf("%+v, %v", got, problems)
			}
			tt.want.Name, tt.want.Scope, tt.want.Source = "s", ScopeUser, e.path(ScopeUser, true)
			tt.want.Warnings = tt.warnings
			if diff := cmp.Diff(tt.want, got[0], cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestMCPInvalidEntries(t *testing.T) {
	tests := []struct {
		name, entry, msg string
	}{
		{"url without type", `{"url":"https://x/mcp"}`, `"url" without "type"`},
		{"stdio without command", `{"type":"stdio","args":["x"]}`, `needs a "command"`},
		{"empty command", `{"command":"  "}`, `needs a "command"`},
		{"http without url", `{"type":"http"}`, `http server needs a "url"`},
		{"sse without url", `{"type":"sse","url":""}`, `sse server needs a "url"`},
		{"ws unsupported", `{"type":"ws","url":"wss://x"}`, `"ws" (WebSocket) is not supported`},
		{"unknown type", `{"type":"grpc","url":"http://x"}`, `unknown type "grpc"`},
		{"not an object", `["srv"]`, "must be a JSON object, found a JSON array"},
		{"null entry", `null`, "must be a JSON object, found null"},
		{"args not strings", `{"command":"srv","args":[1]}`, `"args" must be a list of strings`},
		{"args a string", `{"command":"srv","args":"a b"}`, `"args" must be a list of strings`},
		{"env not strings", `{"command":"srv","env":{"K":1}}`, `"env" must be an object of string values`},
		{"headers a list", `{"type":"http","url":"http://x","headers":["a"]}`, `"headers" must be an object`},
		{"command a list", `{"command":["srv"]}`, `"command" must be a string, found a JSON array`},
		{"timeout string", `{"command":"srv","timeout":"5s"}`, `"timeout" must be a number of milliseconds`},
		{"timeout negative", `{"command":"srv","timeout":-1}`, `"timeout" -1 is out of range`},
		{"alwaysLoad string", `{"command":"srv","alwaysLoad":"yes"}`, `"alwaysLoad" must be true or false`},
		{"bad url", `{"type":"http","url":"localhost:3000"}`, `is not an http(s) URL`},
		{"ftp url", `{"type":"http","url":"ftp://x/y"}`, `is not an http(s) URL`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			p := e.path(ScopeUser, true)
			write(t, p, mcpFile(`"bad":`+tt.entry, `"good":`+stdio("ok")))
			got, problems := e.l.MCPServers(e.project, nil, nil, true)
			if len(got) != 1 || got[0].Name != "good" {
				t.Errorf("servers = %+v, want only good", got)
			}
			if len(problems) != 1 {
				t.Fatalf("problems = %v, want one", problems)
			}
			pr := problems[0]
			if pr.Path != p || pr.Server != "bad" || !strings.Contains(pr.Message, tt.msg) {
				t.Errorf("problem = %q, want %s: server bad: ...%s...", pr.Error(), p, tt.msg)
			}
			if !strings.HasPrefix(pr.Error(), p+": server bad: ") {
				t.Errorf("Error() = %q", pr.Error())
			}
		})
	}
}

func TestMCPTypesAndFields(t *testing.T) {
	e := newEnv(t)
	write(t, e.path(ScopeUser, true), mcpFile(
		`"a":{"type":"streamable-http","url":"https://a/mcp","timeout":1500,"alwaysLoad":true}`,
		`"b":{"type":"stdio","command":"b","url":"ignored","oauth":{"clientId":"x"}}`,
		`"c":{"command":"c","args":null,"env":null,"timeout":null}`))
	got, problems := e.l.MCPServers(e.project, nil, nil, true)
	if problems != nil {
		t.Fatal(problems)
	}
	m := byName(got)
	if a := m["a"]; a.Type != "http" || a.Timeout != 1500*time.Millisecond || !a.AlwaysLoad {
		t.Errorf("a = %+v", a)
	}
	if b := m["b"]; b.Type != "stdio" || len(b.Warnings) != 2 || !strings.Contains(strings.Join(b.Warnings, "|"), `"oauth" is ignored for a stdio server`) {
		t.Errorf("b = %+v", b)
	}
	if c := m["c"]; c.Type != "stdio" || c.Args != nil || c.Timeout != 0 {
		t.Errorf("c = %+v", c)
	}
}

// Claude Code's "oauth" keys (and tackle's) are read, ${VAR}s expanded,
// wrong values refused with the key named, unknown keys warned about.
func TestMCPOAuthBlock(t *testing.T) {
	e := newEnv(t)
	write(t, e.path(ScopeUser, true), mcpFile(
		`"gh":{"type":"http","url":"https://api.example/mcp","oauth":{"clientId":"Iv1.abc","clientSecret":"${GH_SECRET}","callbackPort":8931,"scopes":"repo read:org","authServerMetadataUrl":"https://x/y","colour":1}}`,
		`"cimd":{"type":"http","url":"https://b.example/mcp","oauth":{"clientMetadataUrl":"https://tackle.example/client.json"}}`,
		`"badport":{"type":"http","url":"https://c.example/mcp","oauth":{"callbackPort":70000}}`,
		`"badcimd":{"type":"http","url":"https://d.example/mcp","oauth":{"clientMetadataUrl":"http://tackle.example/client.json"}}`,
		`"secretonly":{"type":"http","url":"https://e.example/mcp","oauth":{"clientSecret":"s"}}`,
		`"notobject":{"type":"http","url":"https://f.example/mcp","oauth":"yes"}`))
	got, problems := e.l.MCPServers(e.project, []string{"GH_SECRET=s3cret"}, nil, true)
	m := byName(got)
	gh := m["gh"]
	if gh.OAuth == nil || *gh.OAuth != (MCPOAuth{ClientID: "Iv1.abc", ClientSecret: "s3cret", CallbackPort: 8931, Scopes: "repo read:org"}) {
		t.Errorf("gh.OAuth = %+v", gh.OAuth)
	}
	if w := strings.Join(gh.Warnings, "|"); !strings.Contains(w, "authServerMetadataUrl") || !strings.Contains(w, `unknown key "colour"`) {
		t.Errorf("gh warnings %q", w)
	}
	if c := m["cimd"]; c.OAuth == nil || c.OAuth.ClientMetadataURL != "https://tackle.example/client.json" {
		t.Errorf("cimd = %+v", c.OAuth)
	}
	if cimd := m["cimd"]; gh.Digest() == cimd.Digest() {
		t.Error("digests clash")
	}
	want := map[string]string{
		"badport":    "callbackPort",
		"badcimd":    "must be an https URL",
		"secretonly": `needs "oauth.clientId"`,
		"notobject":  `"oauth" must be an object`,
	}
	for _, p := range problems {
		if w, ok := want[p.Server]; ok && strings.Contains(p.Message, w) {
			delete(want, p.Server)
		}
	}
	if len(want) > 0 {
		t.Errorf("missing problems %v in %v", want, problems)
	}
}

func TestMCPBrokenFiles(t *testing.T) {
	tests := []struct {
		name      string
		path      func(e *env) string
		content   string
		line, col int
		msg       string
	}{
		{".mcp.json syntax", (*env).mcpJSON, "{\n  \"mcpServers\": {\n    \"x\": {\"command\": \"x\",}\n  }\n}\n", 3, 26, "invalid character '}'"},
		{".mcp.json not an object", (*env).mcpJSON, "[]", 1, 1, "must be a JSON object"},
		{"claude.json truncated", (*env).claudeJSON, "{\n  \"projects\": {", 2, 16, "unexpected end of JSON input"},
		{"tackle user settings", func(e *env) string { return e.path(ScopeUser, true) }, "{\"mcpServers\": {\"a\" 1}}", 1, 21, "invalid character '1'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			// One good server in each other source.
			sources := map[string]string{
				e.mcpJSON():                        mcpFile(`"p":` + stdio("p")),
				e.claudeJSON():                     mcpFile(`"c":` + stdio("c")),
				e.path(ScopeUser, true):            mcpFile(`"u":` + stdio("u")),
				e.path(ScopeLocal, true):           mcpFile(`"l":` + stdio("l")),
				e.managed:                          mcpFile(`"m":` + stdio("m")),
				filepath.Join(e.project, "s.json"): mcpFile(`"s":` + stdio("s")),
			}
			broken := tt.path(e)
			for p, c := range sources {
				if p == broken {
					c = tt.content
				}
				write(t, p, c)
			}
			got, problems := e.l.MCPServers(e.project, nil, []string{filepath.Join(e.project, "s.json")}, true)
			if len(problems) != 1 {
				t.Fatalf("problems = %v, want one", problems)
			}
			pr := problems[0]
			if pr.Path != broken || pr.Line != tt.line || pr.Column != tt.col || !strings.Contains(pr.Message, tt.msg) {
				t.Errorf("problem = %q, want %s:%d:%d: ...%s", pr.Error(), broken, tt.line, tt.col, tt.msg)
			}
			if len(got) != 5 {
				t.Errorf("servers = %d (%+v), want the 5 of the other files", len(got), got)
			}
		})
	}

	t.Run("last good version stays", func(t *testing.T) {
		e := newEnv(t)
		write(t, e.mcpJSON(), mcpFile(`"p":`+stdio("p")))
		if got, problems := e.l.MCPServers(e.project, nil, nil, true); len(got) != 1 || problems != nil {
			t.Fatalf("%+v %v", got, problems)
		}
		write(t, e.mcpJSON(), `{"mcpServers":`)
		got, problems := e.l.MCPServers(e.project, nil, nil, true)
		if len(got) != 1 || len(problems) != 1 || !strings.Contains(problems[0].Message, "last good") {
			t.Errorf("%+v %v", got, problems)
		}
	})

	t.Run("session files", func(t *testing.T) {
		e := newEnv(t)
		missing := filepath.Join(e.project, "missing.json")
		noKey := filepath.Join(e.project, "nokey.json")
		write(t, noKey, `{"servers":{}}`)
		broken := filepath.Join(e.project, "broken.json")
		write(t, broken, "{\n\"mcpServers\": nope}")
		good := filepath.Join(e.project, "good.json")
		write(t, good, mcpFile(`"g":`+stdio("g")))
		got, problems := e.l.MCPServers(e.project, nil, []string{missing, noKey, broken, good, `{"mcpServers": 1}`}, true)
		if len(got) != 1 || got[0].Name != "g" {
			t.Errorf("servers = %+v", got)
		}
		var msgs []string
		for _, p := range problems {
			msgs = append(msgs, p.Error())
		}
		want := []string{
			"--mcp-config: \"mcpServers\" must be an object mapping server names to entries, found a JSON number",
			broken + ":2:16: invalid character 'o' in literal null (expecting 'u')",
			noKey + `: no "mcpServers" object (want {"mcpServers": {"NAME": {...}}})`,
			missing + ": reading --mcp-config: no such file or directory",
		}
		if diff := cmp.Diff(want, msgs, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
			t.Errorf("problems (-want +got):\n%s", diff)
		}
	})

	t.Run("claude.json shapes", func(t *testing.T) {
		e := newEnv(t)
		write(t, e.claudeJSON(), `{"mcpServers":[],"projects":{"`+e.project+`":"x"}}`)
		write(t, e.path(ScopeUser, true), mcpFile(`"u":`+stdio("u")))
		got, problems := e.l.MCPServers(e.project, nil, nil, true)
		if len(got) != 1 || len(problems) != 2 {
			t.Errorf("%+v %v", got, problems)
		}
	})
}

func TestMCPApproval(t *testing.T) {
	tests := []struct {
		name     string
		settings string // .tackle/settings.local.json
		project  string // .tackle/settings.json (committed)
		claude   string // ~/.claude.json projects[root] extra keys
		trusted  bool
		want     string
	}{
		{"untrusted, nothing", "", "", "", false, MCPNeedsTrust},
		{"untrusted, enableAll", `{"enableAllProjectMcpServers":true}`, "", "", false, MCPNeedsTrust},
		{"untrusted, enabled", `{"enabledMcpjsonServers":["p"]}`, "", "", false, MCPNeedsTrust},
		{"untrusted, disabled", `{"disabledMcpjsonServers":["p"]}`, "", "", false, MCPDisabled},
		{"untrusted, enabled and disabled", `{"enabledMcpjsonServers":["p"],"disabledMcpjsonServers":["p"]}`, "", "", false, MCPDisabled},
		{"trusted, nothing", "", "", "", true, MCPNeedsApproval},
		{"trusted, enableAll", `{"enableAllProjectMcpServers":true}`, "", "", true, ""},
		{"trusted, enableAll false", `{"enableAllProjectMcpServers":false}`, "", "", true, MCPNeedsApproval},
		{"trusted, enabled", `{"enabledMcpjsonServers":["p"]}`, "", "", true, ""},
		{"trusted, another enabled", `{"enabledMcpjsonServers":["q"]}`, "", "", true, MCPNeedsApproval},
		{"trusted, disabled", `{"disabledMcpjsonServers":["p"]}`, "", "", true, MCPDisabled},
		{"trusted, enableAll but disabled", `{"enableAllProjectMcpServers":true,"disabledMcpjsonServers":["p"]}`, "", "", true, MCPDisabled},
		{"trusted, enabled locally, disabled in another file", `{"enabledMcpjsonServers":["p"]}`, `{"disabledMcpjsonServers":["p"]}`, "", true, MCPDisabled},
		{"trusted, enabled in claude.json", "", "", `"enabledMcpjsonServers":["p"]`, true, ""},
		{"trusted, enableAll in claude.json", "", "", `"enableAllProjectMcpServers":true`, true, ""},
		{"trusted, disabled in claude.json", `{"enableAllProjectMcpServers":true}`, "", `"disabledMcpjsonServers":["p"]`, true, MCPDisabled},
		{"untrusted, enabled in claude.json", "", "", `"enabledMcpjsonServers":["p"]`, false, MCPNeedsTrust},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			write(t, e.mcpJSON(), mcpFile(`"p":`+stdio("p")))
			if tt.settings != "" {
				write(t, e.path(ScopeLocal, true), tt.settings)
			}
			if tt.project != "" {
				write(t, e.path(ScopeProject, true), tt.project)
			}
			if tt.claude != "" {
				write(t, e.claudeJSON(), `{"projects":{"`+e.project+`":{`+tt.claude+`}}}`)
			}
			got, problems := e.l.MCPServers(e.project, nil, nil, tt.trusted)
			if problems != nil || len(got) != 1 {
				t.Fatalf("%+v %v", got, problems)
			}
			if got[0].State != tt.want {
				t.Errorf("state = %q, want %q", got[0].State, tt.want)
			}
		})
	}

	// Servers of the workspace's local file need trust; the user's own
	// files (and session files) do not; disabledMcpjsonServers only
	// concerns .mcp.json servers.
	e := newEnv(t)
	write(t, e.path(ScopeLocal, true), `{"disabledMcpjsonServers":["l","u","c","s"],"mcpServers":{"l":{"command":"l"}}}`)
	write(t, e.claudeJSON(), `{"projects":{"`+e.project+`":{"mcpServers":{"c":{"command":"c"}}}}}`)
	write(t, e.path(ScopeUser, true), mcpFile(`"u":`+stdio("u")))
	for _, trusted := range []bool{false, true} {
		got, problems := e.l.MCPServers(e.project, nil, []string{mcpFile(`"s":` + stdio("s"))}, trusted)
		if problems != nil {
			t.Fatal(problems)
		}
		states := map[string]string{}
		for _, s := range got {
			states[s.Name] = s.State
		}
		want := map[string]string{"l": "", "c": "", "u": "", "s": ""}
		if !trusted {
			want["l"] = MCPNeedsTrust
		}
		if diff := cmp.Diff(want, states); diff != "" {
			t.Errorf("trusted=%v states (-want +got):\n%s", trusted, diff)
		}
	}
}

func TestMCPDigest(t *testing.T) {
	base := MCPServer{Name: "n", Type: "stdio", Command: "c", Args: []string{"a", "b"}, Env: map[string]string{"K": "v", "L": "w"},
		URL: "u", Headers: map[string]string{"H": "h"}, Dir: "/d", Scope: ScopeLocal, Source: "/s", Timeout: time.Second}
	d := base.Digest()
	if len(d) != 64 {
		t.Fatalf("digest %q is not hex sha256", d)
	}
	same := base
	same.Env = map[string]string{"L": "w", "K": "v"}
	same.Scope, same.Source, same.Timeout, same.AlwaysLoad, same.State, same.Warnings = ScopeUser, "/other", 0, true, MCPDisabled, []string{"x"}
	if same.Digest() != d {
		t.Error("digest depends on map order or on fields outside the connection key")
	}
	if a, b := (&MCPServer{Name: "n"}), (&MCPServer{Name: "n", Args: []string{}, Env: map[string]string{}, Headers: map[string]string{}}); a.Digest() != b.Digest() {
		t.Error("nil and empty digest differently")
	}
	changes := map[string]func(s *MCPServer){
		"name":        func(s *MCPServer) { s.Name = "m" },
		"type":        func(s *MCPServer) { s.Type = "http" },
		"command":     func(s *MCPServer) { s.Command = "c2" },
		"args":        func(s *MCPServer) { s.Args = []string{"a", "b", "c"} },
		"args order":  func(s *MCPServer) { s.Args = []string{"b", "a"} },
		"args split":  func(s *MCPServer) { s.Args = []string{"ab"} },
		"env value":   func(s *MCPServer) { s.Env = map[string]string{"K": "v2", "L": "w"} },
		"env key":     func(s *MCPServer) { s.Env = map[string]string{"K2": "v", "L": "w"} },
		"url":         func(s *MCPServer) { s.URL = "u2" },
		"header":      func(s *MCPServer) { s.Headers = map[string]string{"H": "h2"} },
		"dir":         func(s *MCPServer) { s.Dir = "/d2" },
		"cmd vs args": func(s *MCPServer) { s.Command, s.Args = "c a", []string{"b"} },
	}
	seen := map[string]string{d: "base"}
	for name, change := range changes {
		s := base
		s.Args = append([]string{}, base.Args...)
		change(&s)
		got := s.Digest()
		if prev, dup := seen[got]; dup {
			t.Errorf("%s: digest equals that of %s", name, prev)
		}
		seen[got] = name
	}
	if base.Digest() != d {
		t.Error("digest is not stable")
	}
}

func TestMCPSettings(t *testing.T) {
	tests := []struct {
		name    string
		user    string
		local   string
		environ []string
		want    MCPSettings
	}{
		{"defaults", "", "", nil, MCPSettings{StartupTimeout: 30 * time.Second, MaxOutputTokens: 25000}},
		{"settings", `{"mcp":{"startupTimeoutSeconds":5,"maxOutputTokens":1000,"toolTimeoutMs":2500}}`, "", nil,
			MCPSettings{StartupTimeout: 5 * time.Second, MaxOutputTokens: 1000, ToolTimeout: 2500 * time.Millisecond}},
		{"per field, higher file wins", `{"mcp":{"startupTimeoutSeconds":5,"maxOutputTokens":1000}}`, `{"mcp":{"maxOutputTokens":2000}}`, nil,
			MCPSettings{StartupTimeout: 5 * time.Second, MaxOutputTokens: 2000}},
		{"environment wins", `{"mcp":{"startupTimeoutSeconds":5,"maxOutputTokens":1000,"toolTimeoutMs":2500}}`, "",
			[]string{"MAX_MCP_OUTPUT_TOKENS=50000", "MCP_TIMEOUT=1500", "MCP_TOOL_TIMEOUT=60000"},
			MCPSettings{StartupTimeout: 1500 * time.Millisecond, MaxOutputTokens: 50000, ToolTimeout: time.Minute}},
		{"invalid values ignored", `{"mcp":{"startupTimeoutSeconds":-1,"maxOutputTokens":"many"}}`, `{"mcp":[]}`,
			[]string{"MAX_MCP_OUTPUT_TOKENS=lots", "MCP_TIMEOUT=0"},
			MCPSettings{StartupTimeout: 30 * time.Second, MaxOutputTokens: 25000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			if tt.user != "" {
				write(t, e.path(ScopeUser, true), tt.user)
			}
			if tt.local != "" {
				write(t, e.path(ScopeLocal, true), tt.local)
			}
			s, _ := e.l.Load(e.project)
			if diff := cmp.Diff(tt.want, s.MCP(tt.environ)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	var nilSettings *Settings
	if got := nilSettings.MCP([]string{"MCP_TOOL_TIMEOUT=10"}); got.ToolTimeout != 10*time.Millisecond || got.MaxOutputTokens != 25000 {
		t.Errorf("nil settings: %+v", got)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestMCPWrites(t *testing.T) {
	e := newEnv(t)
	local := e.path(ScopeLocal, true)
	user := e.path(ScopeUser, true)

	// Add to each scope; the files are created with the right modes.
	for _, c := range []struct {
		scope, path string
		mode        os.FileMode
	}{{"", local, 0o600}, {ScopeProject, e.mcpJSON(), 0o644}, {ScopeUser, user, 0o600}} {
		p, err := e.l.AddMCPServer(e.project, c.scope, "srv-"+c.scope, json.RawMessage(`{"command": "x", "args": ["${A:-1}"]}`), false)
		if err != nil || p != c.path {
			t.Fatalf("add %q: %q, %v", c.scope, p, err)
		}
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != c.mode {
			t.Errorf("%s: mode %v, %v; want %v", p, fi.Mode().Perm(), err, c.mode)
		}
	}
	got, problems := e.l.MCPServers(e.project, nil, nil, true)
	if problems != nil || len(got) != 3 {
		t.Fatalf("%+v %v", got, problems)
	}

	// Other keys are kept, in order; a duplicate needs replace.
	write(t, local, `{"z": 1, "permissions": {"allow": ["Read"]}, "mcpServers": {"keep": {"command": "k"}}, "a": [1, 2]}`)
	if _, err := e.l.AddMCPServer(e.project, ScopeLocal, "keep", json.RawMessage(`{"command":"k2"}`), false); err == nil || !strings.Contains(err.Error(), "already has a server named") {
		t.Errorf("duplicate add: %v", err)
	}
	if _, err := e.l.AddMCPServer(e.project, ScopeLocal, "keep", json.RawMessage(`{"command":"k2"}`), true); err != nil {
		t.Fatal(err)
	}
	if _, err := e.l.AddMCPServer(e.project, ScopeLocal, "new", json.RawMessage(`{"type":"http","url":"https://n/mcp"}`), false); err != nil {
		t.Fatal(err)
	}
	want := `{
  "z": 1,
  "permissions": {
    "allow": [
      "Read"
    ]
  },
  "mcpServers": {
    "keep": {
      "command": "k2"
    },
    "new": {
      "type": "http",
      "url": "https://n/mcp"
    }
  },
  "a": [
    1,
    2
  ]
}
`
	if diff := cmp.Diff(want, readFile(t, local)); diff != "" {
		t.Errorf("local file (-want +got):\n%s", diff)
	}
	// The loader sees the change at once.
	got, _ = e.l.MCPServers(e.project, nil, nil, true)
	if s := byName(got)["keep"]; s.Command != "k2" {
		t.Errorf("keep = %+v", s)
	}

	// Invalid adds write nothing.
	before := readFile(t, local)
	for _, c := range []struct{ name, entry, msg string }{
		{"bad name", `{"command":"x"}`, "a name may contain only"},
		{"ok", `{"url":"http://x"}`, `"url" without "type"`},
		{"ok", `{"type":"ws","url":"wss://x"}`, "not supported"},
		{"ok", `[`, "must be a JSON object"},
	} {
		name := c.name
		if name == "bad name" {
			name = "a b"
		}
		if _, err := e.l.AddMCPServer(e.project, ScopeLocal, name, json.RawMessage(c.entry), false); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("add %s %s: %v, want %q", name, c.entry, err, c.msg)
		}
	}
	if _, err := e.l.AddMCPServer(e.project, "managed", "m", json.RawMessage(`{"command":"x"}`), false); err == nil {
		t.Error("add to managed scope succeeded")
	}
	if readFile(t, local) != before {
		t.Error("a refused add changed the file")
	}

	// A broken target file is an error and is left as it is.
	brokenContent := "{\n  \"mcpServers\": {,\n}"
	write(t, user, brokenContent)
	_, err := e.l.AddMCPServer(e.project, ScopeUser, "x", json.RawMessage(`{"command":"x"}`), false)
	if err == nil || !strings.Contains(err.Error(), user+":2:18:") || !strings.Contains(err.Error(), "left unchanged") {
		t.Errorf("add to a broken file: %v", err)
	}
	if _, err := e.l.RemoveMCPServer(e.project, ScopeUser, "srv-user"); err == nil {
		t.Error("remove from a broken file succeeded")
	}
	if readFile(t, user) != brokenContent {
		t.Error("the broken file was rewritten")
	}
	write(t, user, `{"mcpServers": []}`)
	if _, err := e.l.AddMCPServer(e.project, ScopeUser, "x", json.RawMessage(`{"command":"x"}`), false); err == nil || !strings.Contains(err.Error(), `"mcpServers" is not a JSON object`) {
		t.Errorf("add to mcpServers array: %v", err)
	}
	write(t, user, `{"mcpServers": {"srv-user": {"command": "x"}}, "other": true}`)

	// Remove: the first file that has it, or the named scope's.
	write(t, e.mcpJSON(), `{"mcpServers": {"dup": {"command": "p"}, "srv-project": {"command": "x"}}}`)
	if _, err := e.l.AddMCPServer(e.project, ScopeLocal, "dup", json.RawMessage(`{"command":"l"}`), false); err != nil {
		t.Fatal(err)
	}
	if p, err := e.l.RemoveMCPServer(e.project, "", "dup"); err != nil || p != local {
		t.Errorf("remove dup: %q %v", p, err)
	}
	if p, err := e.l.RemoveMCPServer(e.project, "", "dup"); err != nil || p != e.mcpJSON() {
		t.Errorf("remove dup again: %q %v", p, err)
	}
	if p, err := e.l.RemoveMCPServer(e.project, "", "srv-user"); err != nil || p != user {
		t.Errorf("remove srv-user: %q %v", p, err)
	}
	if diff := cmp.Diff("{\n  \"mcpServers\": {},\n  \"other\": true\n}\n", readFile(t, user)); diff != "" {
		t.Errorf("user file after remove (-want +got):\n%s", diff)
	}
	if _, err := e.l.RemoveMCPServer(e.project, ScopeLocal, "srv-project"); err == nil || !strings.Contains(err.Error(), "no such server in "+local) {
		t.Errorf("remove from the wrong scope: %v", err)
	}
	if _, err := e.l.RemoveMCPServer(e.project, "", "nothing"); err == nil || !strings.Contains(err.Error(), "no such server") {
		t.Errorf("remove unknown: %v", err)
	}

	// Claude Code's file is never written: the error says where the server is.
	claude := `{"mcpServers": {"ccu": {"command": "u"}}, "projects": {"` + e.project + `": {"mcpServers": {"ccl": {"command": "l"}}}}}`
	write(t, e.claudeJSON(), claude)
	for _, c := range []struct{ scope, name, msg string }{
		{"", "ccl", "local scope"},
		{ScopeLocal, "ccl", "local scope"},
		{"", "ccu", "user scope"},
		{ScopeUser, "ccu", "user scope"},
	} {
		_, err := e.l.RemoveMCPServer(e.project, c.scope, c.name)
		if err == nil || !strings.Contains(err.Error(), e.claudeJSON()) || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), "does not write") {
			t.Errorf("remove %s (scope %q): %v", c.name, c.scope, err)
		}
	}
	if readFile(t, e.claudeJSON()) != claude {
		t.Error("~/.claude.json was changed")
	}
	// Not even through a symlink.
	os.Remove(user)
	if err := os.Symlink(e.claudeJSON(), user); err != nil {
		t.Fatal(err)
	}
	if _, err := e.l.AddMCPServer(e.project, ScopeUser, "x", json.RawMessage(`{"command":"x"}`), false); err == nil || !strings.Contains(err.Error(), "does not write") {
		t.Errorf("add through a symlink to ~/.claude.json: %v", err)
	}
	if readFile(t, e.claudeJSON()) != claude {
		t.Error("~/.claude.json was changed through a symlink")
	}
}

func TestMCPApprove(t *testing.T) {
	e := newEnv(t)
	local := e.path(ScopeLocal, true)
	write(t, e.mcpJSON(), mcpFile(`"a":`+stdio("a"), `"b":`+stdio("b"), `"c":`+stdio("c")))
	write(t, local, `{"disabledMcpjsonServers": ["b", "c"], "keep": "me"}`)
	states := func() map[string]string {
		got, problems := e.l.MCPServers(e.project, nil, nil, true)
		if problems != nil {
			t.Fatal(problems)
		}
		m := map[string]string{}
		for _, s := range got {
			m[s.Name] = s.State
		}
		return m
	}
	if diff := cmp.Diff(map[string]string{"a": MCPNeedsApproval, "b": MCPDisabled, "c": MCPDisabled}, states()); diff != "" {
		t.Errorf("before (-want +got):\n%s", diff)
	}
	if p, err := e.l.ApproveMCPServers(e.project, []string{"a", "b"}, false); err != nil || p != local {
		t.Fatalf("approve: %q %v", p, err)
	}
	if diff := cmp.Diff(map[string]string{"a": "", "b": "", "c": MCPDisabled}, states()); diff != "" {
		t.Errorf("after approve (-want +got):\n%s", diff)
	}
	// Approving again changes nothing.
	before := readFile(t, local)
	if _, err := e.l.ApproveMCPServers(e.project, []string{"a"}, false); err != nil {
		t.Fatal(err)
	}
	if readFile(t, local) != before {
		t.Error("a repeated approval rewrote the file")
	}
	if _, err := e.l.ApproveMCPServers(e.project, nil, true); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"a": "", "b": "", "c": MCPDisabled}, states()); diff != "" {
		t.Errorf("after --all: a disable still wins (-want +got):\n%s", diff)
	}
	want := `{
  "disabledMcpjsonServers": [
    "c"
  ],
  "keep": "me",
  "enabledMcpjsonServers": [
    "a",
    "b"
  ],
  "enableAllProjectMcpServers": true
}
`
	if diff := cmp.Diff(want, readFile(t, local)); diff != "" {
		t.Errorf("file (-want +got):\n%s", diff)
	}
	if _, err := e.l.ApproveMCPServers(e.project, nil, false); err == nil {
		t.Error("approving nothing succeeded")
	}
	write(t, local, `{"enabledMcpjsonServers": "a"}`)
	if _, err := e.l.ApproveMCPServers(e.project, []string{"b"}, false); err == nil || !strings.Contains(err.Error(), "not a list of strings") {
		t.Errorf("approve into a wrong-shaped file: %v", err)
	}
	write(t, local, `{"enabledMcpjsonServers": [}`)
	if _, err := e.l.ApproveMCPServers(e.project, []string{"b"}, false); err == nil || !strings.Contains(err.Error(), "left unchanged") {
		t.Errorf("approve into a broken file: %v", err)
	}
	if readFile(t, local) != `{"enabledMcpjsonServers": [}` {
		t.Error("the broken file was rewritten")
	}
}

// TestMCPWritesConcurrent: concurrent adds lose nothing (flock + atomic write).
func TestMCPWritesConcurrent(t *testing.T) {
	e := newEnv(t)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := "s" + string(rune('a'+i))
			if _, err := e.l.AddMCPServer(e.project, ScopeLocal, name, json.RawMessage(`{"command":"x"}`), false); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, problems := e.l.MCPServers(e.project, nil, nil, true)
	if len(got) != 8 || problems != nil {
		t.Errorf("%d servers, %v", len(got), problems)
	}
}

// TestMCPWatch: Run sees .mcp.json and ~/.claude.json change after
// MCPServers read them, and the next MCPServers reflects the change.
func TestMCPWatch(t *testing.T) {
	e := newEnv(t)
	write(t, e.mcpJSON(), mcpFile(`"p":`+stdio("p1")))

	runLoader(t, e.l)
	// MCPServers after Run started: its directories are added to the watch
	// before it returns.
	if got, _ := e.l.MCPServers(e.project, nil, nil, true); len(got) != 1 || got[0].Command != "p1" {
		t.Fatalf("%+v", got)
	}

	waitPath := func(path string) {
		t.Helper()
		timeout := time.After(20 * time.Second)
		for {
			select {
			case p, open := <-e.l.Changes():
				if !open {
					t.Fatal("Changes closed")
				}
				if p == path {
					return
				}
			case <-timeout:
				t.Fatalf("no change of %s seen", path)
			}
		}
	}
	write(t, e.mcpJSON(), mcpFile(`"p":`+stdio("p2")))
	waitPath(e.mcpJSON())
	if got, _ := e.l.MCPServers(e.project, nil, nil, true); len(got) != 1 || got[0].Command != "p2" {
		t.Errorf("after change: %+v", got)
	}

	write(t, e.claudeJSON(), mcpFile(`"c":`+stdio("c")))
	waitPath(e.claudeJSON())
	if got, _ := e.l.MCPServers(e.project, nil, nil, true); len(got) != 2 {
		t.Errorf("after ~/.claude.json: %+v", got)
	}

	os.Remove(e.mcpJSON())
	waitPath(e.mcpJSON())
	if got, _ := e.l.MCPServers(e.project, nil, nil, true); len(got) != 1 || got[0].Name != "c" {
		t.Errorf("after removal: %+v", got)
	}

	// A write by tackle itself is seen too.
	if _, err := e.l.AddMCPServer(e.project, ScopeProject, "added", json.RawMessage(`{"command":"a"}`), false); err != nil {
		t.Fatal(err)
	}
	waitPath(e.mcpJSON())
}

// TestMCPClaudeProjectKey: ~/.claude.json keys projects by the real path;
// a session rooted at a symlink to the project still finds its entry.
func TestMCPClaudeProjectKey(t *testing.T) {
	e := newEnv(t)
	link := filepath.Join(filepath.Dir(e.project), "link")
	if err := os.Symlink(e.project, link); err != nil {
		t.Fatal(err)
	}
	write(t, e.claudeJSON(), `{"projects":{"`+e.project+`":{"mcpServers":{"c":{"command":"c"}}}}}`)
	got, problems := e.l.MCPServers(link, nil, nil, true)
	if problems != nil || len(got) != 1 || got[0].Scope != ScopeLocal || got[0].Source != e.claudeJSON()+" [projects."+e.project+"]" || got[0].Dir != link {
		t.Errorf("%+v %v", got, problems)
	}
	// Another project does not see it.
	other := filepath.Join(filepath.Dir(e.project), "other")
	if got, _ := e.l.MCPServers(other, nil, nil, true); len(got) != 0 {
		t.Errorf("other project: %+v", got)
	}
}
