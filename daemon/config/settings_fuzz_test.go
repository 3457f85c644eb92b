package config

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fuzzBound is how long one input may take: a parser that takes longer on
// a small file is a bug (quadratic work, a loop), even if it ends.
const fuzzBound = 5 * time.Second

// fuzzTimed fails t when f takes longer than fuzzBound.
func fuzzTimed(t *testing.T, what string, f func()) {
	t.Helper()
	start := time.Now()
	f()
	if d := time.Since(start); d > fuzzBound {
		t.Fatalf("%s took %v (bound %v)", what, d, fuzzBound)
	}
}

// fuzzSettingsSeeds are real settings files: the shapes of this package's
// and daemon/permission's tests, Claude Code's documented keys, and files
// that do not parse.
var fuzzSettingsSeeds = []string{
	`{"permissions":{"allow":["Bash(npm run lint)","Bash(npm run test:*)"],"deny":["Read(./.env)"],"ask":["Bash(git push *)"]}}`,
	`{"permissions":{"defaultMode":"bypassPermissions","allow":["Bash"],"additionalDirectories":["../lib","/abs","~/x"]}}`,
	`{"permissions":{"defaultMode":"plan","askTimeoutSeconds":30,"disableBypassPermissionsMode":"disable"}}`,
	`{"$schema":"https://json.schemastore.org/claude-code-settings.json","model":"x","env":{"A":"1","B":2},"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"true"}]}]}}`,
	`{"sandbox":{"enabled":true,"network":{"allowedDomains":["x.com"],"deniedDomains":["y.com"]},"filesystem":{"denyRead":["~/.ssh"],"allowWrite":["/"]}}}`,
	`{"mcpServers":{"s":{"command":"srv"}},"enableAllProjectMcpServers":true,"enabledMcpjsonServers":["p"],"disabledMcpjsonServers":["q"]}`,
	`{"trust":{"importClaude":false},"skipDangerousModePermissionPrompt":true}`,
	"{\n  \"model\": \"x\",\n  \"permissions\": {\n    \"deny\": [\n      \"Bash(rm *)\"\n    ],\n    \"allow\": [\"Bash(broken\"]\n  }\n}\n",
	`null`, `{}`, ``, `   `, `[]`, `"x"`, `{"permissions":null}`, `{"permissions":[]}`, `{"permissions":{"allow":"Bash"}}`,
	`{"permissions":{"askTimeoutSeconds":1.5}}`, `{"permissions":{"askTimeoutSeconds":1e40}}`, `{"permissions":{"allow":[null,1]}}`,
	"{\"model\":\n  \"x\",,}", `{"a":1}{"b":2}`, "\xef\xbb\xbf{}", `{"permissions":{"defaultMode":"plan"},"permissions":{"defaultMode":"acceptEdits"}}`,
}

// FuzzParseSettings: a settings file either gives a Problem that points
// into the file (1-based line and column, a message) or a value that
// round-trips: its top-level keys are the file's, every value is valid
// JSON, and the permissions block read is the one the "permissions" key
// holds. Raw (.mcp.json, ~/.claude.json) reading accepts exactly the JSON
// objects.
func FuzzParseSettings(f *testing.F) {
	for _, s := range fuzzSettingsSeeds {
		f.Add([]byte(s))
	}
	for _, name := range []string{"claude.json", "mcp-without-wrapper.json", "settings-env-dirs.json", "settings-with-mcpservers.json"} {
		if b, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const path = "/p/.claude/settings.json"
		for _, rawOnly := range []bool{true, false} {
			var (
				p    *parsed
				prob *Problem
			)
			fuzzTimed(t, "parseFile", func() { p, prob = parseFile(path, data, rawOnly) })
			if (p == nil) == (prob == nil) {
				t.Fatalf("rawOnly=%v: parsed %v, problem %v: want exactly one", rawOnly, p, prob)
			}
			valid := json.Valid(data)
			if prob != nil {
				checkProblem(t, data, prob, path)
				if rawOnly && valid && isObjectOrNull(data) {
					t.Fatalf("rawOnly: a JSON object is a problem: %v", prob)
				}
				continue
			}
			if !valid || !isObjectOrNull(data) {
				t.Fatalf("rawOnly=%v: %q is not a JSON object but parses", rawOnly, data)
			}
			if p.raw == nil {
				t.Fatal("raw is nil")
			}
			for k, v := range p.raw {
				if !json.Valid(v) {
					t.Fatalf("raw[%q] = %q is not JSON", k, v)
				}
			}
			if rawOnly {
				continue
			}
			checkPermsMatchRaw(t, p)
			// Round trip: the file rebuilt from what was read reads the same.
			b, err := json.Marshal(p.raw)
			if err != nil {
				t.Fatalf("raw does not marshal: %v", err)
			}
			p2, prob2 := parse(path, b)
			if prob2 != nil {
				t.Fatalf("the re-encoded file %s does not parse: %v", b, prob2)
			}
			if !reflect.DeepEqual(compactAll(p.raw), compactAll(p2.raw)) || !reflect.DeepEqual(p.perms, p2.perms) {
				t.Fatalf("round trip differs:\n%s\n%+v\n%+v", b, p.perms, p2.perms)
			}
		}
	})
}

// FuzzLoadSettings writes the input as a project's .claude/settings.json
// and loads it twice, untrusted and trusted, through a real Loader. The
// trust rules (trustkeys.go) must hold whatever the file says: untrusted,
// the merged settings allow nothing more than default (no allow rules, no
// additional directories, defaultMode default or plan, only keys that do
// not widen); trusted but without the person's consent, never
// bypassPermissions. Every problem names the file and a place in it.
func FuzzLoadSettings(f *testing.F) {
	for _, s := range fuzzSettingsSeeds {
		f.Add([]byte(s))
	}
	base := f.TempDir()
	home, cfg := filepath.Join(base, "home"), filepath.Join(base, "xdg")
	trusted, untrusted := filepath.Join(base, "trusted"), filepath.Join(base, "untrusted")
	for _, d := range []string{home, cfg, trusted, untrusted} {
		if err := os.MkdirAll(filepath.Join(d, ".claude"), 0o700); err != nil {
			f.Fatal(err)
		}
	}
	trust := NewTrust(cfg)
	if _, _, err := trust.Trust(trusted, false); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, proj := range []string{untrusted, trusted} {
			file := filepath.Join(proj, ".claude", "settings.json")
			if err := os.WriteFile(file, data, 0o600); err != nil {
				t.Fatal(err)
			}
			l := NewLoader(&Options{Home: home, ConfigHome: cfg, ManagedPath: filepath.Join(base, "managed.json"), Trust: trust})
			var (
				s        *Settings
				problems []Problem
			)
			fuzzTimed(t, "Load", func() { s, problems = l.Load(proj) })
			if s == nil {
				t.Fatal("Load returned nil settings")
			}
			if len(problems) > 1 {
				t.Fatalf("%d problems for one file: %v", len(problems), problems)
			}
			for i := range problems {
				checkProblem(t, data, &problems[i], file)
				if len(s.Layers) > 0 {
					t.Fatalf("a file that does not parse contributes a layer: %+v", s.Layers)
				}
			}
			p := s.Permissions
			if p.DefaultMode == "bypassPermissions" {
				t.Fatalf("%s: a project file set bypassPermissions without consent (trusted=%v)", data, s.Trusted)
			}
			if proj == trusted {
				continue
			}
			if s.Trusted {
				t.Fatal("the untrusted project is trusted")
			}
			if p.DefaultMode != "" && p.DefaultMode != "default" && p.DefaultMode != "plan" {
				t.Fatalf("untrusted project sets defaultMode %q", p.DefaultMode)
			}
			if len(p.Allow) > 0 || len(p.AdditionalDirectories) > 0 {
				t.Fatalf("untrusted project widens: allow %q, additionalDirectories %q", p.Allow, p.AdditionalDirectories)
			}
			for k, v := range s.Raw {
				e, known := projectKeys[k]
				switch {
				case k == "permissions":
					var m map[string]json.RawMessage
					if err := json.Unmarshal(v, &m); err != nil {
						t.Fatalf("untrusted permissions block %s: %v", v, err)
					}
					for pk := range m {
						if pe, ok := permissionKeys[pk]; (!ok || pe == widens) && pk != "defaultMode" {
							t.Fatalf("untrusted permissions keeps %q: %s", pk, v)
						}
					}
				case k == "sandbox":
				case !known || e == widens:
					t.Fatalf("untrusted project keeps key %q (%s)", k, v)
				}
			}
		}
	})
}

// exactPerms reads raw["permissions"] key by key, spelled exactly; ok is
// false when the block has a value of the wrong type.
func exactPerms(raw map[string]json.RawMessage) (fp filePermissions, ok bool) {
	var block map[string]json.RawMessage
	if err := json.Unmarshal(raw["permissions"], &block); raw["permissions"] != nil && err != nil {
		return fp, false
	}
	for k, dst := range map[string]any{
		"defaultMode": &fp.DefaultMode, "additionalDirectories": &fp.AdditionalDirectories, "allow": &fp.Allow, "ask": &fp.Ask,
		"deny": &fp.Deny, "askTimeoutSeconds": &fp.AskTimeoutSeconds, "disableBypassPermissionsMode": &fp.DisableBypassPermissionsMode,
	} {
		if v, has := block[k]; has {
			if json.Unmarshal(v, dst) != nil {
				return fp, false
			}
		}
	}
	if fp.AskTimeoutSeconds != nil && *fp.AskTimeoutSeconds < 0 {
		return fp, false
	}
	return fp, true
}

// checkPermsMatchRaw: each field of p.perms is set exactly when the
// "permissions" key of p.raw has that key, spelled as the field is.
func checkPermsMatchRaw(t *testing.T, p *parsed) {
	t.Helper()
	var block map[string]json.RawMessage
	if raw, ok := p.raw["permissions"]; ok {
		_ = json.Unmarshal(raw, &block)
	}
	set := func(key string) bool {
		v, ok := block[key]
		return ok && string(bytes.TrimSpace(v)) != "null"
	}
	for _, c := range []struct {
		key string
		got bool
	}{
		{"defaultMode", p.perms.DefaultMode != nil},
		{"askTimeoutSeconds", p.perms.AskTimeoutSeconds != nil},
		{"disableBypassPermissionsMode", p.perms.DisableBypassPermissionsMode != nil},
		{"allow", len(p.perms.Allow) > 0},
		{"ask", len(p.perms.Ask) > 0},
		{"deny", len(p.perms.Deny) > 0},
		{"additionalDirectories", len(p.perms.AdditionalDirectories) > 0},
	} {
		if c.got && !set(c.key) {
			t.Fatalf("permissions.%s is read, but the file's permissions block %s does not set it", c.key, p.raw["permissions"])
		}
	}
}

// checkProblem: a problem names path, says something, and its position
// (when it has one) is inside data or just after its end.
func checkProblem(t *testing.T, data []byte, p *Problem, path string) {
	t.Helper()
	if p.Path != path || strings.TrimSpace(p.Message) == "" {
		t.Fatalf("problem %+v: want path %q and a message", p, path)
	}
	if p.Line == 0 && p.Column == 0 {
		return
	}
	lines := bytes.Split(data, []byte("\n"))
	if p.Line < 1 || p.Line > len(lines) || p.Column < 1 || p.Column > len(lines[p.Line-1])+1 {
		t.Fatalf("problem %v: position outside the %d-line file %q", p, len(lines), data)
	}
}

func isObjectOrNull(data []byte) bool {
	t := bytes.TrimSpace(data)
	return len(t) > 0 && (t[0] == '{' || string(t) == "null")
}

// compactAll decodes every value, so equal JSON compares equal whatever
// its spacing and escapes.
func compactAll(m map[string]json.RawMessage) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.UseNumber()
		var x any
		if err := dec.Decode(&x); err != nil {
			out[k] = "!" + string(v)
			continue
		}
		out[k] = x
	}
	return out
}
