package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// maxSuggestions bounds every "did you mean" list.
const maxSuggestions = 3

// suggest returns the names of candidates nearest to name: at most three,
// nearest first, only those close enough to be a typo of it (a small edit
// distance, or one name a prefix of the other).
func suggest(name string, candidates []string) []string {
	type scored struct {
		name string
		d    int
	}
	lname := strings.ToLower(name)
	limit := max(2, len([]rune(name))/3)
	var hits []scored
	seen := map[string]bool{}
	for _, c := range candidates {
		if c == "" || c == name || seen[c] {
			continue
		}
		seen[c] = true
		lc := strings.ToLower(c)
		d := editDistance(lname, lc)
		switch {
		case lname == lc:
			d = 0
		case len(lname) >= 3 && (strings.HasPrefix(lc, lname) || strings.HasPrefix(lname, lc)):
			d = min(d, 1)
		case len(lname) >= 4 && strings.Contains(lc, lname):
			d = min(d, 2)
		}
		if d <= limit {
			hits = append(hits, scored{c, d})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].d != hits[j].d {
			return hits[i].d < hits[j].d
		}
		return hits[i].name < hits[j].name
	})
	var out []string
	for i := 0; i < len(hits) && i < maxSuggestions; i++ {
		out = append(out, hits[i].name)
	}
	return out
}

// editDistance is the Levenshtein distance of a and b (in runes), with a
// transposition of neighbours counted as one edit.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// didYouMean is " (did you mean A, B or C?)" for the suggestions of name
// among candidates, or "" when none is close.
func didYouMean(name string, candidates []string) string {
	return phraseSuggestions(suggest(name, candidates))
}

// phraseSuggestions is "; did you mean A, B or C?", or "" for none.
func phraseSuggestions(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("; did you mean %s?", s[0])
	}
	return fmt.Sprintf("; did you mean %s or %s?", strings.Join(s[:len(s)-1], ", "), s[len(s)-1])
}

// unknownSubcommands makes every command group (a command with
// subcommands and nothing to run itself) answer an unknown subcommand with
// the nearest names and exit 2, and print its help when given none.
func unknownSubcommands(cmd *cobra.Command) {
	for _, sub := range cmd.Commands() {
		unknownSubcommands(sub)
	}
	if !cmd.HasSubCommands() || cmd.Run != nil || cmd.RunE != nil {
		return
	}
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		// Aliases are matched too, but the command is named by its name.
		var names []string
		nameOf := map[string]string{}
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				for _, n := range append([]string{sub.Name()}, sub.Aliases...) {
					names = append(names, n)
					nameOf[n] = sub.Name()
				}
			}
		}
		var near []string
		for _, n := range suggest(args[0], names) {
			if !contains(near, nameOf[n]) {
				near = append(near, nameOf[n])
			}
		}
		return usageError("unknown command %q for %q%s\nRun '%s --help' for its commands.",
			args[0], cmd.CommandPath(), phraseSuggestions(near), cmd.CommandPath())
	}
}

// noSuchTool reports whether r is the pipeline's answer to a call of a
// tool the session does not have (not, for one, an MCP tool whose server
// is not connected: its result says why).
func noSuchTool(r *tacklev1.ToolResult) bool {
	for _, b := range r.GetContent() {
		if strings.Contains(b.GetText(), "No such tool available") {
			return true
		}
	}
	return false
}

// unknownTool returns a usage error when name is none of the session's
// tools (loaded or deferred, MCP tools included), naming the nearest; nil
// when it is one, or when the tools cannot be listed.
func unknownTool(ctx context.Context, c *client.Client, sid, name string) error {
	tools, err := c.ListTools(ctx, &tacklev1.ListToolsRequest{SessionId: sid, All: true})
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		if t.GetName() == name {
			return nil
		}
		names = append(names, t.GetName())
	}
	return usageError("unknown tool %q%s (tackle tools --all lists them)", name, didYouMean(name, names))
}

// sessionNotFound turns err, an error of doing something with session id,
// into "no session ID; did you mean …" (exit 2) when the session does not
// exist; other errors are wrapped with doing.
func (a *app) sessionNotFound(ctx context.Context, c *client.Client, doing, id string, err error) error {
	if !errors.Is(err, client.ErrNotFound) {
		return fmt.Errorf("%s %s: %w", doing, id, err)
	}
	var ids []string
	if list, lerr := c.ListSessions(ctx); lerr == nil {
		for _, s := range list {
			ids = append(ids, s.GetId())
		}
	}
	return usageError("no session %q%s (tackle sessions list lists them)", id, didYouMean(id, ids))
}

// checkSession is a usage error naming the nearest sessions when id is
// not a session of the daemon.
func (a *app) checkSession(ctx context.Context, c *client.Client, id string) error {
	if _, err := c.GetSession(ctx, id); err != nil {
		if errors.Is(err, client.ErrNotFound) {
			return a.sessionNotFound(ctx, c, "", id, err)
		}
	}
	return nil
}

// skillNotFound turns the daemon's "no skill" error into one naming the
// nearest skills (at most three) and exit 2; other errors pass through.
func skillNotFound(ctx context.Context, c *client.Client, sid, name string, err error) error {
	if !strings.Contains(err.Error(), "no skill") {
		return err
	}
	var names []string
	if resp, lerr := listSkills(ctx, c, sid, false); lerr == nil {
		for _, k := range resp.GetSkills() {
			names = append(names, k.GetName())
		}
	}
	return usageError("no skill %q%s (tackle skills list lists them)", name, didYouMean(name, names))
}

// tidyError is the message of err without a repeated kind: the client's
// "not found: session not found: x" reads "session not found: x".
func tidyError(msg string) string {
	for _, kind := range []string{client.ErrNotFound.Error(), client.ErrInvalidArgument.Error(), client.ErrPermissionDenied.Error()} {
		prefix := kind + ": "
		for i := strings.Index(msg, prefix); i >= 0; {
			rest := msg[i+len(prefix):]
			if strings.Contains(rest, kind) || startsWithProse(rest) {
				msg = msg[:i] + rest
				i = strings.Index(msg, prefix)
				continue
			}
			next := strings.Index(rest, prefix)
			if next < 0 {
				break
			}
			i += len(prefix) + next
		}
	}
	return msg
}

// startsWithProse reports whether s reads as a sentence of its own, so a
// kind in front of it only repeats it ("no skill …", "unknown …").
func startsWithProse(s string) bool {
	for _, p := range []string{"no ", "unknown ", "invalid ", "missing "} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// jsonProblem locates the syntax error of input, which is not valid JSON:
// "line L, column C: MESSAGE near `TEXT`", or "" when it parses.
func jsonProblem(input string) string {
	var v any
	err := json.Unmarshal([]byte(input), &v)
	if err == nil {
		return ""
	}
	offset := len(input)
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		offset = int(se.Offset)
	case errors.As(err, &te):
		offset = int(te.Offset)
	}
	if offset > len(input) {
		offset = len(input)
	}
	line, col := 1, 1
	for _, r := range input[:offset] {
		if r == '\n' {
			line, col = line+1, 1
			continue
		}
		col++
	}
	// The offending text: the line up to the error, at most 40 characters.
	start := strings.LastIndexByte(input[:offset], '\n') + 1
	if offset-start > 40 {
		start = offset - 40
	}
	end := offset
	if nl := strings.IndexByte(input[offset:], '\n'); nl >= 0 {
		end = offset + nl
	} else {
		end = len(input)
	}
	if end-offset > 20 {
		end = offset + 20
	}
	near := strings.TrimSpace(input[start:end])
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if col > 1 {
		col-- // the column of the character the decoder stopped at
	}
	if near == "" {
		return fmt.Sprintf("line %d, column %d: %s", line, col, msg)
	}
	return fmt.Sprintf("line %d, column %d: %s, near `%s`", line, col, msg, near)
}
