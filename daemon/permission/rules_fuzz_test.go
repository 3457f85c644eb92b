package permission

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/daemon/config"
)

// FuzzLoadRules writes the input as the user's and as a project's settings
// file, loads them through config.Loader and builds the rules with
// LoadRules, trusted and untrusted. Whatever the files say: every rule in
// force parses again from its text to the same rule, sits in the list of
// its behavior and names its file, list index and a line of the file;
// every deny rule of every file applies, trusted or not; untrusted, the
// project gives no allow rule and no additional directory; no allow rule
// names every tool; every rule left out is a problem or, untrusted, an
// ignored allow rule.
func FuzzLoadRules(f *testing.F) {
	for _, s := range []string{
		`{"permissions":{"allow":["Bash(git status *)","Read(/notes/**)"],"additionalDirectories":["~/shared"]}}`,
		"{\n  \"model\": \"x\",\n  \"permissions\": {\n    \"defaultMode\": \"default\",\n    \"deny\": [\n      \"Bash(rm *)\",\n      \"Read(./secrets/**)\"\n    ],\n" +
			"    \"ask\": [\"Bash(git push *)\"],\n    \"allow\": [\n      \"Bash(npm test *)\",\n      \"Bash(broken\",\n      \"Edit(/src/**)\"\n    ],\n    \"additionalDirectories\": [\"../lib\", \"/abs/dir\"]\n  }\n}",
		`{"permissions": {"allow": ["WebFetch(domain:example.com)"], "deny": ["WebFetch(nope)"]}}`,
		`{"permissions": {"allow": ["Bash(npm test *)", "*"]}}`,
		`{"permissions": {"deny": ["Bash(curl *)", "mcp__srv", "mcp__srv__*", "*"], "ask": ["Skill(x *)"]}}`,
		`{"permissions": {"allow": ["mcp__*", "mcp__s__*", "Bash(ls:*)", "Bash(ls *)", " Bash(ls *) "]}}`,
		`{"permissions": {"allow": [1, null, {"a": 1}, ["x"]], "deny": "Bash"}}`,
		`{"permissions": {"additionalDirectories": ["", "relative", "~", "/"]}}`,
		`{"permissions": []}`, `{"permissions": null}`, `{}`, `[]`, `{"permissions":{"deny":["Bash(rm *)"]},"permissions":{"deny":["Read(x)"]}}`,
	} {
		f.Add([]byte(s))
	}
	base := f.TempDir()
	home, cfg, proj := filepath.Join(base, "home"), filepath.Join(base, "home", ".config"), filepath.Join(base, "proj")
	userFile := filepath.Join(cfg, "tackle", "settings.json")
	projFile := filepath.Join(proj, ".claude", "settings.json")
	for _, d := range []string{filepath.Dir(userFile), filepath.Dir(projFile)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			f.Fatal(err)
		}
	}
	trust := config.NewTrust(cfg)
	if _, _, err := trust.Trust(proj, false); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, p := range []string{userFile, projFile} {
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		l := config.NewLoader(&config.Options{Home: home, ConfigHome: cfg, ManagedPath: filepath.Join(base, "managed.json"), Trust: trust})
		s, _ := l.Load(proj)
		nLines := bytes.Count(data, []byte("\n")) + 1
		for _, trusted := range []bool{true, false} {
			var (
				rules    *Rules
				problems []RuleProblem
			)
			start := time.Now()
			rules, problems = LoadRules(s, trusted, nil)
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("LoadRules took %v", d)
			}
			lists := map[string][]Rule{BehaviorDeny: rules.Deny(), BehaviorAsk: rules.Ask(), BehaviorAllow: rules.Allow()}
			for behavior, list := range lists {
				for _, r := range list {
					if r.Tool == "" || r.Behavior != behavior {
						t.Fatalf("rule %+v in the %s list", r, behavior)
					}
					p, err := ParseRule(r.Text)
					if err != nil || p.Tool != r.Tool || p.Spec != r.Spec {
						t.Fatalf("rule %+v does not parse again from its text: %+v, %v", r, p, err)
					}
					if r.Source.Path != userFile && r.Source.Path != projFile {
						t.Fatalf("rule %+v names no file of the settings", r)
					}
					if r.Source.Index < 0 || r.Source.Line < 0 || r.Source.Line > nLines {
						t.Fatalf("rule %+v: index or line outside the %d-line file", r, nLines)
					}
					if behavior == BehaviorAllow && strings.HasSuffix(r.Tool, "*") && !isMCPServerGlob(r.Tool) {
						t.Fatalf("allow rule %q names every tool", r.Text)
					}
					if !trusted && behavior == BehaviorAllow && r.Source.Path == projFile {
						t.Fatalf("untrusted project gives allow rule %+v", r)
					}
				}
			}
			for _, pr := range problems {
				if strings.TrimSpace(pr.Message) == "" || pr.Source.Path == "" {
					t.Fatalf("problem %+v without a message or file", pr)
				}
			}
			for _, r := range rules.Ignored() {
				if trusted || r.Source.Path != projFile || r.Behavior != BehaviorAllow {
					t.Fatalf("ignored rule %+v (trusted=%v)", r, trusted)
				}
			}
			if !trusted {
				// The project's directories that the user file (the same
				// text, resolved from another place) does not also give.
				osHome, _ := os.UserHomeDir()
				fromUser := map[string]bool{}
				var fromProject []string
				for _, ly := range s.Layers {
					var fp filePerms
					if json.Unmarshal(ly.Raw["permissions"], &fp) != nil {
						continue
					}
					for _, d := range fp.AdditionalDirectories {
						abs := config.AdditionalDirectory(d, ly.Source, s.ProjectDir(), osHome)
						if ly.Source.Path == projFile {
							fromProject = append(fromProject, abs)
						} else {
							fromUser[abs] = true
						}
					}
				}
				for _, d := range rules.AdditionalDirs() {
					for _, p := range fromProject {
						if d == p && !fromUser[d] {
							t.Fatalf("untrusted project adds directory %q", d)
						}
					}
				}
			}
			// Every item of every layer's lists is a rule in force, a
			// problem, an ignored allow rule or a duplicate of a rule in force.
			for _, ly := range s.Layers {
				var fp filePerms
				if json.Unmarshal(ly.Raw["permissions"], &fp) != nil {
					continue
				}
				untrusted := !trusted && ly.Source.Path == projFile
				for behavior, items := range map[string][]string{BehaviorDeny: fp.Deny, BehaviorAsk: fp.Ask, BehaviorAllow: fp.Allow} {
					for i, text := range items {
						if untrusted && behavior == BehaviorAllow {
							continue // ignored, checked above
						}
						pr, err := ParseRule(text)
						if err != nil {
							if !hasProblem(problems, ly.Source.Path, i, text) {
								t.Fatalf("%s rule %q (item %d of %s) does not parse and is no problem", behavior, text, i, ly.Source.Path)
							}
							continue
						}
						pr.Behavior = behavior
						if !inForce(lists[behavior], pr) && !hasProblem(problems, ly.Source.Path, i, text) {
							t.Fatalf("%s rule %q (item %d of %s) is neither in force nor a problem", behavior, text, i, ly.Source.Path)
						}
					}
				}
			}
		}
	})
}

// hasProblem reports whether problems has the item i of path.
func hasProblem(problems []RuleProblem, path string, i int, text string) bool {
	for _, p := range problems {
		if p.Source.Path == path && p.Source.Index == i && p.Text == text {
			return true
		}
	}
	return false
}

// inForce reports whether list has a rule that is r (the same compiled key).
func inForce(list []Rule, r Rule) bool {
	key := compile(r).key
	for _, x := range list {
		if compile(x).key == key {
			return true
		}
	}
	return false
}
