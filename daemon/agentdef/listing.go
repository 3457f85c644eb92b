package agentdef

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// DefaultListingBudget is the listing's budget in characters when the
// caller gives none: some fifty agents with descriptions of real length.
const DefaultListingBudget = 16000

// AgentListing is the part of the Agent tool's description that lists
// the agent types, one line "- name: description (Tools: A, B)" each, in
// the order given (Set.Agents is sorted by name). The tools read "*" when the agent has every tool, "All tools except A,
// B" when it has every tool but its disallowedTools, and "none" for an
// empty list. The description is put on one line. When the lines would
// exceed budgetChars characters (DefaultListingBudget when 0 or less),
// the listing stops at the last line that fits and ends with a line
// saying how many agent types were left out; that line always fits, so a
// budget too small for any agent yields only it.
func AgentListing(agents []*Definition, budgetChars int) string {
	if budgetChars <= 0 {
		budgetChars = DefaultListingBudget
	}
	var b strings.Builder
	used := 0
	for i, d := range agents {
		line := listingLine(d) + "\n"
		n := utf8.RuneCountInString(line)
		left := len(agents) - i - 1
		reserve := 0
		if left > 0 {
			reserve = utf8.RuneCountInString(omitted(left))
		}
		if used+n+reserve > budgetChars {
			b.WriteString(omitted(len(agents) - i))
			return b.String()
		}
		b.WriteString(line)
		used += n
	}
	return b.String()
}

// omitted is the line that ends a cut listing.
func omitted(n int) string {
	if n == 1 {
		return "(1 more agent type is not listed: the list was cut to fit its budget)\n"
	}
	return fmt.Sprintf("(%d more agent types are not listed: the list was cut to fit its budget)\n", n)
}

// listingLine is "- name: description (Tools: …)".
func listingLine(d *Definition) string {
	return "- " + d.Name + ": " + oneLine(d.Description) + " (Tools: " + toolsLabel(d) + ")"
}

// toolsLabel says which tools d has, before the filters of Resolve.
func toolsLabel(d *Definition) string {
	var deny []string
	for _, spec := range d.DisallowedTools {
		if name, _, ok := SplitSpec(spec); ok && !contains(deny, name) {
			deny = append(deny, name)
		}
	}
	if d.AllTools() {
		if len(deny) == 0 {
			return "*"
		}
		return "All tools except " + strings.Join(deny, ", ")
	}
	var names []string
	for _, spec := range d.Tools {
		if name, _, ok := SplitSpec(spec); ok && !contains(names, name) && !contains(deny, name) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
