package notebook

import (
	"fmt"
	"strings"
)

// displayContext is the number of unchanged source lines shown around a
// replaced cell's change.
const displayContext = 3

// display renders the edit for clients as a unified diff of the cell's
// source: one hunk whose line numbers count within the cell, the cell named
// after the second "@@". A replace shows only the changed lines, with up to
// displayContext unchanged lines either side; an insert or a delete shows
// the whole cell. It is cut at limit bytes.
func (e *edit) display(limit int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s\n+++ %s\n", e.file.path, e.file.path)
	oldL, newL := splitLines(e.oldSrc), splitLines(e.newSrc)
	switch e.mode {
	case modeInsert:
		fmt.Fprintf(&b, "@@ -0,0 %s @@ new %s cell %s at index %d\n", rangeOf("+", 0, len(newL)), e.newType, e.cellID, e.index)
		writeLines(&b, "+", newL)
	case modeDelete:
		fmt.Fprintf(&b, "@@ %s +0,0 @@ deleted %s cell %s\n", rangeOf("-", 0, len(oldL)), e.oldType, e.cellID)
		writeLines(&b, "-", oldL)
	default:
		what := fmt.Sprintf("%s cell %s", e.oldType, e.cellID)
		if e.newType != e.oldType {
			what += fmt.Sprintf(" (now %s)", e.newType)
		}
		if e.cleared {
			what += ", outputs cleared"
		}
		pre := 0
		for pre < len(oldL) && pre < len(newL) && oldL[pre] == newL[pre] {
			pre++
		}
		suf := 0
		for suf < len(oldL)-pre && suf < len(newL)-pre && oldL[len(oldL)-1-suf] == newL[len(newL)-1-suf] {
			suf++
		}
		if pre == len(oldL) && pre == len(newL) {
			fmt.Fprintf(&b, "@@ -%d,0 +%d,0 @@ %s, source unchanged\n", len(oldL), len(newL), what)
			break
		}
		start := max(pre-displayContext, 0)
		endOld, endNew := min(len(oldL), len(oldL)-suf+displayContext), min(len(newL), len(newL)-suf+displayContext)
		fmt.Fprintf(&b, "@@ %s %s @@ %s\n", rangeOf("-", start, endOld-start), rangeOf("+", start, endNew-start), what)
		writeLines(&b, " ", oldL[start:pre])
		writeLines(&b, "-", oldL[pre:len(oldL)-suf])
		writeLines(&b, "+", newL[pre:len(newL)-suf])
		writeLines(&b, " ", oldL[len(oldL)-suf:endOld])
	}
	return capDisplay(b.String(), limit)
}

// rangeOf is a unified diff range: the 1-based first line and the count;
// an empty range names the line before it.
func rangeOf(sign string, start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%s%d,0", sign, start)
	}
	return fmt.Sprintf("%s%d,%d", sign, start+1, n)
}

func writeLines(b *strings.Builder, prefix string, lines []string) {
	for _, l := range lines {
		b.WriteString(prefix)
		b.WriteString(l)
		b.WriteByte('\n')
	}
}

// splitLines splits a source into lines without their "\n"; a final "\n"
// ends the last line rather than starting an empty one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// capDisplay cuts d over max bytes at a line boundary, with a note.
func capDisplay(d string, max int) string {
	if len(d) <= max {
		return d
	}
	cut := strings.LastIndexByte(d[:max], '\n') + 1
	return d[:cut] + fmt.Sprintf("... (diff truncated: %d more bytes)\n", len(d)-cut)
}
