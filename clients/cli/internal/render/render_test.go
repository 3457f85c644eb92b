package render

import (
	"testing"
)

func TestForPeople(t *testing.T) {
	for in, want := range map[string]string{
		"<tool_use_error>InputValidationError: x</tool_use_error>": "InputValidationError: x",
		userRejected + stopAndWait:                                 "denied by the user",
		userRejected + userSaid + "use the other file":             "denied by the user: use the other file",
		todoReminder: "todos updated",
		interrupted:  "",
		"file text\n<system-reminder>\nYou are being watched.\n</system-reminder>\nmore": "file text\nmore",
		"plain output\n": "plain output\n",
	} {
		if got := forPeople(in); got != want {
			t.Errorf("forPeople(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTodoMarks(t *testing.T) {
	for _, c := range []struct {
		status       string
		plain, fancy string
	}{
		{"pending", "[ ]", "☐"}, {"in_progress", "[~]", "◐"}, {"completed", "[x]", "☑"}, {"odd", "[?]", "?"},
	} {
		if got := todoMark(c.status, false); got != c.plain {
			t.Errorf("todoMark(%s, plain) = %q, want %q", c.status, got, c.plain)
		}
		if got := todoMark(c.status, true); got != c.fancy {
			t.Errorf("todoMark(%s, fancy) = %q, want %q", c.status, got, c.fancy)
		}
	}
}
