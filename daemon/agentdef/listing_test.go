package agentdef_test

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/tackle-agent/tackle/daemon/agentdef"
)

func listingAgents() []*agentdef.Definition {
	return []*agentdef.Definition{
		{Name: "everything", Description: "Has it all."},
		{Name: "no-writes", Description: "Reads,\n  never\twrites.", DisallowedTools: list("Write", "Edit", "Write")},
		{Name: "reviewer", Description: "Reviews code.", Tools: list("Read", "Grep", "Bash(git diff *)", "Task", "Bash(git log *)")},
		{Name: "star", Description: "Wildcard.", Tools: list("*"), DisallowedTools: list("Bash")},
		{Name: "narrowed", Description: "Listed, then denied.", Tools: list("Read", "Write"), DisallowedTools: list("Write")},
		{Name: "none", Description: "Denied all it lists.", Tools: list("Write"), DisallowedTools: list("Write")},
	}
}

func TestAgentListing(t *testing.T) {
	want := `- everything: Has it all. (Tools: *)
- no-writes: Reads, never writes. (Tools: All tools except Write, Edit)
- reviewer: Reviews code. (Tools: Read, Grep, Bash, Agent)
- star: Wildcard. (Tools: All tools except Bash)
- narrowed: Listed, then denied. (Tools: Read)
- none: Denied all it lists. (Tools: none)
`
	if diff := cmp.Diff(want, agentdef.AgentListing(listingAgents(), 0)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestAgentListingBudget(t *testing.T) {
	agents := listingAgents()
	full := agentdef.AgentListing(agents, 0)
	lines := strings.SplitAfter(full, "\n")
	for budget := 1; budget <= utf8.RuneCountInString(full)+1; budget++ {
		got := agentdef.AgentListing(agents, budget)
		if got == full {
			if utf8.RuneCountInString(got) > budget {
				t.Errorf("budget %d: the full listing is %d characters", budget, utf8.RuneCountInString(got))
			}
			continue
		}
		// Whole lines from the start, then the count of the rest.
		kept := strings.Count(got, "\n") - 1
		if !strings.HasPrefix(got, strings.Join(lines[:kept], "")) {
			t.Fatalf("budget %d: not a prefix of the listing:\n%s", budget, got)
		}
		last := got[len(strings.Join(lines[:kept], "")):]
		left := len(agents) - kept
		wantLast := "(" + map[bool]string{true: "1 more agent type is", false: strconv.Itoa(left) + " more agent types are"}[left == 1] +
			" not listed: the list was cut to fit its budget)\n"
		if last != wantLast {
			t.Fatalf("budget %d: last line %q, want %q", budget, last, wantLast)
		}
		if kept > 0 && utf8.RuneCountInString(got) > budget {
			t.Errorf("budget %d: %d characters", budget, utf8.RuneCountInString(got))
		}
	}
	// The real corpus and the built-ins, cut to a tenth of their size.
	set := agentdef.NewCatalog(nil).Load(agentdef.Sources{ManagedDir: "testdata/voltagent"})
	all := agentdef.AgentListing(set.Agents, 1<<20)
	if strings.Count(all, "\n") != 15 || !strings.Contains(all, "- Explore: A fast, read-only agent") ||
		!strings.Contains(all, "(Tools: Read, Glob, Grep, Bash, WebFetch, WebSearch, ToolSearch)\n") ||
		!strings.Contains(all, "- golang-pro: Use when building Go applications") || !strings.Contains(all, "(Tools: Read, Write, Edit, Bash, Glob, Grep)\n") ||
		!strings.Contains(all, "- general-purpose: An all-round agent") || !strings.Contains(all, "(Tools: *)\n") {
		t.Errorf("listing:\n%s", all)
	}
	cut := agentdef.AgentListing(set.Agents, len(all)/10)
	if n := utf8.RuneCountInString(cut); n > len(all)/10 || !strings.HasSuffix(cut, " more agent types are not listed: the list was cut to fit its budget)\n") {
		t.Errorf("%d characters:\n%s", n, cut)
	}
}
