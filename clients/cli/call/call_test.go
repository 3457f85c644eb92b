package call

import (
	"testing"
)

func TestJSONProblem(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a": 1}`, ""},
		{`{"file_path": `, "line 1, column 14: unexpected end of JSON input, near `{\"file_path\":`"},
		{"{\"a\": 1,\n \"b\": 2,}", "line 2, column 9: invalid character '}' looking for beginning of object key string, near `\"b\": 2,}`"},
	}
	for _, tt := range tests {
		if got := jsonProblem(tt.in); got != tt.want {
			t.Errorf("jsonProblem(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
