package cmdutil

import (
	"fmt"
	"strings"
	"testing"
)

func TestSuggest(t *testing.T) {
	many := make([]string, 0, 300)
	for i := 0; i < 300; i++ {
		many = append(many, fmt.Sprintf("tool%03d", i))
	}
	tests := []struct {
		name       string
		candidates []string
		want       string
	}{
		{"Reed", []string{"Read", "Write", "Edit", "ReplaceLines"}, "Read"},
		{"sesions", []string{"sessions", "status", "skills"}, "sessions"},
		{"lst", []string{"list", "ls", "show"}, "list,ls"},
		{"grep", []string{"Grep", "Glob"}, "Grep"},
		{"xyzzy", []string{"Read", "Write"}, ""},
		{"tool", many, "tool000,tool001,tool002"}, // never more than three
		{"s_1234", []string{"s_12345678", "s_99999999"}, "s_12345678"},
	}
	for _, tt := range tests {
		if got := strings.Join(Suggest(tt.name, tt.candidates), ","); got != tt.want {
			t.Errorf("suggest(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}
