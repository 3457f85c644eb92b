package fakemodel_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tackle-agent/tackle/internal/fakemodel"
)

// TestExampleToolLoop is the package's example: a two-turn tool
// conversation, the second answer computed from the tool result sent back.
func TestExampleToolLoop(t *testing.T) {
	s := fakemodel.Start(t, &fakemodel.Options{Script: func(r *fakemodel.Request) fakemodel.Turn {
		if res := r.ToolResults(); len(res) > 0 {
			return fakemodel.Say("The file says " + res[0].Content)
		}
		return fakemodel.Reply(fakemodel.Text("Reading."),
			fakemodel.Block{Type: "tool_use", ID: "toolu_01A", Name: "Read", Input: `{"file_path":"/a"}`})
	}})
	// (a real test points tackle at s.URL() with ANTHROPIC_BASE_URL)
	send := func(messages string) string {
		body := `{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":true,"messages":[` + messages + `]}`
		req, _ := http.NewRequest("POST", s.URL()+"/v1/messages", bytes.NewBufferString(body))
		req.Header.Set("anthropic-version", "2023-06-01")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	q := `{"role":"user","content":"read /a"}`
	if got := send(q); !strings.Contains(got, `"stop_reason":"tool_use"`) {
		t.Fatalf("first turn: %s", got)
	}
	// forgetting the tool_result is the real 400
	if got := send(q + `,{"role":"assistant","content":[{"type":"tool_use","id":"toolu_01A","name":"Read","input":{"file_path":"/a"}}]},{"role":"user","content":"and?"}`); !strings.Contains(got, "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_01A") {
		t.Fatalf("missing result: %s", got)
	}
	got := send(q + `,{"role":"assistant","content":[{"type":"tool_use","id":"toolu_01A","name":"Read","input":{"file_path":"/a"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01A","content":"hello"}]}`)
	if !strings.Contains(got, `"text":"The file s"`) || !strings.Contains(got, `"end_turn"`) {
		t.Fatalf("second turn: %s", got)
	}
	if n := len(s.Requests()); n != 3 {
		t.Errorf("%d requests captured", n)
	}
	http.DefaultClient.CloseIdleConnections()
}
