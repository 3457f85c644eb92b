package config

import (
	"encoding/json"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fuzzMCPEnv is the environment ${VAR} expands from in the MCP targets.
var fuzzMCPEnv = []string{"HOME=/home/u", "TOKEN=s3cret", "EMPTY=", "PORT=8080", "BASE_URL=https://api.example.com"}

// fuzzMCPEntries are server entries from this package's tests and real
// .mcp.json files.
var fuzzMCPEntries = []string{
	`{"command":"docker","args":["run","-i","--rm","-e","GITHUB_PERSONAL_ACCESS_TOKEN","ghcr.io/github/github-mcp-server"],"env":{"GITHUB_PERSONAL_ACCESS_TOKEN":"${GITHUB_TOKEN}"}}`,
	`{"type":"http","url":"https://example.com/mcp"}`,
	`{"command":"${HOME_DIR}/bin/srv","args":["--token=${TOKEN}","${MISSING:-dflt}","plain"],"env":{"A":"${TOKEN}","B":"x${EMPTY}y"}}`,
	`{"type":"http","url":"http://localhost:${PORT}/mcp","headers":{"Authorization":"Bearer ${TOKEN}","X":"${EMPTY:-fallback}"}}`,
	`{"type":"sse","url":"${BASE_URL}/sse","headers":{"K":"$NOT_A_REF ${"}}`,
	`{"command":"srv","args":["${X:-a b c}","${X:-}"],"timeout":1500,"alwaysLoad":true}`,
	`{"type":"streamable-http","url":"https://mcp.example.com/mcp","oauth":{"clientId":"abc","clientSecret":"${TOKEN}","callbackPort":8765,"scopes":"read write","clientMetadataUrl":"https://tackle.dev/client.json"}}`,
	`{"type":"http","url":"https://x/mcp","oauth":{"callbackPort":0}}`, `{"type":"http","url":"https://x/mcp","oauth":{"clientSecret":"s"}}`,
	`{"type":"http","url":"https://x/mcp","oauth":{"authServerMetadataUrl":"https://a","zzz":1}}`,
	`{"url":"https://x/mcp"}`, `{"type":"stdio","args":["x"]}`, `{"command":"  "}`, `{"type":"http"}`, `{"type":"ws","url":"wss://x"}`,
	`{"type":"grpc","url":"http://x"}`, `{"command":"srv","args":[1]}`, `{"command":"srv","env":{"K":1}}`, `{"command":["srv"]}`,
	`{"command":"srv","timeout":"5s"}`, `{"command":"srv","timeout":-1}`, `{"command":"srv","timeout":1e300}`, `{"command":"srv","alwaysLoad":"yes"}`,
	`{"type":"http","url":"localhost:3000"}`, `{"command":"srv","headersHelper":"x","url":"u","headers":{"a":"b"}}`, `null`, `[]`, `"srv"`,
}

// FuzzParseMCPEntry: a server entry either is an error with a message or a
// server whose documented properties hold (its name, a known type, a
// command for stdio and an http(s) URL for http and sse, a timeout that is
// not negative, OAuth only for remote servers, a stable digest), and that
// round-trips: written back as an entry, it reads as the same server.
func FuzzParseMCPEntry(f *testing.F) {
	for i, e := range fuzzMCPEntries {
		f.Add([]string{"github", "docs", "s", "x-y", ""}[i%5], []byte(e))
	}
	env := environMap(fuzzMCPEnv)
	f.Fuzz(func(t *testing.T, name string, entry []byte) {
		var (
			s   *MCPServer
			err error
		)
		fuzzTimed(t, "parseMCPEntry", func() { s, err = parseMCPEntry(name, entry, env) })
		if (s == nil) == (err == nil) {
			t.Fatalf("server %+v, error %v: want exactly one", s, err)
		}
		if err != nil {
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		checkMCPServer(t, s, name)
		again, err := parseMCPEntry(name, entry, env)
		if err != nil || again.Digest() != s.Digest() {
			t.Fatalf("parsing the same entry twice: %v, digests %s and %s", err, s.Digest(), again.Digest())
		}
		if strings.Contains(mcpStrings(s), "$") {
			return // expanding again would expand what the first expansion gave
		}
		back := entryOf(t, s)
		s2, err := parseMCPEntry(name, back, env)
		if err != nil {
			t.Fatalf("the entry written back %s does not parse: %v", back, err)
		}
		if s2.Digest() != s.Digest() || s2.Type != s.Type || s2.AlwaysLoad != s.AlwaysLoad || absDur(s2.Timeout-s.Timeout) > time.Microsecond {
			t.Fatalf("round trip differs:\n%s\n%+v\n%+v", back, s, s2)
		}
	})
}

// FuzzMCPConfig reads the input as a whole MCP file, as a --mcp-config file
// and as a trusted project's .mcp.json, through Loader.MCPServers. Every
// entry of "mcpServers" ends as exactly one server or one problem naming
// it; servers are sorted, named, unique, come from the file with the
// scope of their source, and are what ParseMCPEntry makes of their entry;
// every problem names a file and says what is wrong.
func FuzzMCPConfig(f *testing.F) {
	for _, e := range fuzzMCPEntries {
		f.Add([]byte(`{"mcpServers":{"s":` + e + `,"ok":{"command":"srv"}}}`))
	}
	for _, s := range []string{`{"mcpServers":{}}`, `{"mcpServers":null}`, `{"mcpServers":[]}`, `{"mcpServers":1}`, `{"servers":{}}`,
		`{"github":{"command":"docker"}}`, "{\n\"mcpServers\": nope}", `{"mcpServers":`, `null`, `[]`, ``,
		`{"mcpServers":{"a":{"command":"x"},"a":{"type":"http","url":"https://y"}}}`} {
		f.Add([]byte(s))
	}
	for _, name := range []string{"mcp-without-wrapper.json", "settings-with-mcpservers.json", "claude.json"} {
		if b, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(b)
		}
	}
	base := f.TempDir()
	home, cfg, root := filepath.Join(base, "home"), filepath.Join(base, "xdg"), filepath.Join(base, "proj")
	for _, d := range []string{home, cfg, root} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			f.Fatal(err)
		}
	}
	extra := filepath.Join(base, "session-mcp.json")
	project := filepath.Join(root, MCPProjectFile)
	f.Fuzz(func(t *testing.T, data []byte) {
		// The entries the file names, as the file reading sees them.
		var top, entries map[string]json.RawMessage
		if json.Unmarshal(data, &top) == nil {
			_ = json.Unmarshal(top["mcpServers"], &entries)
		}
		for _, tc := range []struct {
			scope, file string
			extra       []string
		}{{ScopeSession, extra, []string{extra}}, {ScopeProject, project, nil}} {
			_ = os.Remove(extra)
			_ = os.Remove(project)
			if err := os.WriteFile(tc.file, data, 0o600); err != nil {
				t.Fatal(err)
			}
			l := NewLoader(&Options{Home: home, ConfigHome: cfg, ManagedPath: filepath.Join(base, "managed.json")})
			var (
				servers  []MCPServer
				problems []MCPProblem
			)
			fuzzTimed(t, "MCPServers", func() { servers, problems = l.MCPServers(root, fuzzMCPEnv, tc.extra, true) })
			byServer := map[string]int{}
			for _, p := range problems {
				if p.Path == "" || strings.TrimSpace(p.Message) == "" {
					t.Fatalf("%s: problem %+v without a path or message", tc.scope, p)
				}
				if p.Line < 0 || p.Column < 0 {
					t.Fatalf("%s: problem %+v at a negative position", tc.scope, p)
				}
				if p.Server != "" {
					if _, ok := entries[p.Server]; !ok {
						t.Fatalf("%s: problem for server %q, which the file does not name: %+v", tc.scope, p.Server, p)
					}
					byServer[p.Server]++
				}
			}
			if !slices.IsSortedFunc(servers, func(a, b MCPServer) int { return strings.Compare(a.Name, b.Name) }) {
				t.Fatalf("%s: servers not sorted", tc.scope)
			}
			for i, s := range servers {
				if i > 0 && servers[i-1].Name == s.Name {
					t.Fatalf("%s: server %q twice", tc.scope, s.Name)
				}
				checkMCPServer(t, &s, s.Name)
				if s.Scope != tc.scope || s.Dir != root {
					t.Fatalf("%s: server %+v: want scope %s, dir %s", tc.scope, s, tc.scope, root)
				}
				if tc.scope == ScopeSession && s.Source != tc.file || tc.scope == ScopeProject && s.Source != tc.file {
					t.Fatalf("%s: server %q from %q, want %q", tc.scope, s.Name, s.Source, tc.file)
				}
				if s.State != "" && s.State != MCPNeedsApproval && s.State != MCPDisabled {
					t.Fatalf("%s: server %q in state %q", tc.scope, s.Name, s.State)
				}
				if tc.scope == ScopeProject && s.State != MCPNeedsApproval {
					t.Fatalf("a project server nobody approved is %q", s.State)
				}
				raw, ok := entries[s.Name]
				if !ok {
					t.Fatalf("%s: server %q is not in the file", tc.scope, s.Name)
				}
				if byServer[s.Name] > 0 {
					t.Fatalf("%s: server %q is both a server and a problem", tc.scope, s.Name)
				}
				want, err := ParseMCPEntry(s.Name, raw, fuzzMCPEnv, s.Source)
				if want != nil {
					want.Dir = s.Dir // the source's, which the digest covers
				}
				if err != nil || want.Digest() != s.Digest() {
					t.Fatalf("%s: server %q is not what ParseMCPEntry reads from its entry (%v)", tc.scope, s.Name, err)
				}
			}
			if len(entries) > 0 {
				for n := range entries {
					if n == "" {
						continue // its problem has Server "", as a whole file's has
					}
					found := slices.ContainsFunc(servers, func(s MCPServer) bool { return s.Name == n })
					if !found && byServer[n] != 1 {
						t.Fatalf("%s: entry %q is neither a server nor one problem (%d problems)", tc.scope, n, byServer[n])
					}
				}
			}
		}
	})
}

// checkMCPServer asserts what MCPServer documents.
func checkMCPServer(t *testing.T, s *MCPServer, name string) {
	t.Helper()
	if s.Name == "" || s.Name != name {
		t.Fatalf("server named %q, want %q", s.Name, name)
	}
	if s.Timeout < 0 {
		t.Fatalf("server %q: negative timeout %v", name, s.Timeout)
	}
	switch s.Type {
	case "stdio":
		if strings.TrimSpace(s.Command) == "" {
			t.Fatalf("stdio server %q without a command: %+v", name, s)
		}
		if s.URL != "" || s.OAuth != nil {
			t.Fatalf("stdio server %q with a URL or OAuth: %+v", name, s)
		}
	case "http", "sse":
		if s.Command != "" {
			t.Fatalf("%s server %q with a command: %+v", s.Type, name, s)
		}
		if strings.TrimSpace(s.URL) == "" {
			t.Fatalf("%s server %q without a URL", s.Type, name)
		}
		if !strings.Contains(s.URL, "${") {
			u, err := url.Parse(s.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				t.Fatalf("%s server %q: URL %q is not http(s)", s.Type, name, s.URL)
			}
		}
		if o := s.OAuth; o != nil && (o.CallbackPort < 0 || o.CallbackPort > 65535) {
			t.Fatalf("server %q: callback port %d", name, o.CallbackPort)
		}
	default:
		t.Fatalf("server %q of type %q", name, s.Type)
	}
	if d := s.Digest(); len(d) != 64 || strings.Trim(d, "0123456789abcdef") != "" {
		t.Fatalf("digest %q", d)
	}
}

// mcpStrings joins every string of s, to look for what expansion reads.
func mcpStrings(s *MCPServer) string {
	parts := []string{s.Command, s.URL}
	parts = append(parts, s.Args...)
	for k, v := range s.Env {
		parts = append(parts, k, v)
	}
	for k, v := range s.Headers {
		parts = append(parts, k, v)
	}
	if o := s.OAuth; o != nil {
		parts = append(parts, o.ClientID, o.ClientSecret, o.Scopes, o.ClientMetadataURL)
	}
	return strings.Join(parts, "\x00")
}

// entryOf writes s back as a .mcp.json entry.
func entryOf(t *testing.T, s *MCPServer) []byte {
	t.Helper()
	m := map[string]any{"type": s.Type}
	if s.Command != "" {
		m["command"] = s.Command
	}
	if s.Args != nil {
		m["args"] = s.Args
	}
	if s.Env != nil {
		m["env"] = s.Env
	}
	if s.URL != "" {
		m["url"] = s.URL
	}
	if s.Headers != nil {
		m["headers"] = s.Headers
	}
	if s.Timeout != 0 {
		m["timeout"] = json.Number(strconv.FormatFloat(float64(s.Timeout)/float64(time.Millisecond), 'g', -1, 64))
	}
	if s.AlwaysLoad {
		m["alwaysLoad"] = true
	}
	if s.OAuth != nil {
		m["oauth"] = s.OAuth
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("encoding %+v: %v", s, err)
	}
	return b
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		if d == math.MinInt64 {
			return math.MaxInt64
		}
		return -d
	}
	return d
}
