package server_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tackle-agent/tackle/daemon/daemontest"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

type todoItem struct {
	Content    string `json:"content"`
	Status     string `json:"status"`
	ActiveForm string `json:"activeForm"`
}

func decodeTodos(t testing.TB, raw string) []todoItem {
	t.Helper()
	var out []todoItem
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		t.Fatalf("todos %q: %v", raw, err)
	}
	return out
}

func TestTodosReachTwoClients(t *testing.T) {
	d := daemontest.Start(t)
	id, _ := newSession(t, d)
	ctl := attach(t, d.Client(), "ctl", tacklev1.Role_ROLE_CONTROLLER)
	obs := attach(t, d.Client(), "obs", tacklev1.Role_ROLE_OBSERVER)
	ctl.subscribe(id, 0)
	obs.subscribe(id, 0)

	input := `{"todos":[{"content":"Write tests","status":"in_progress","activeForm":"Writing tests"},` +
		`{"content":"Ship","status":"pending","activeForm":"Shipping"}]}`
	want := []todoItem{{"Write tests", "in_progress", "Writing tests"}, {"Ship", "pending", "Shipping"}}
	turn := ctl.runBatch(id, "r1", &tacklev1.ToolCall{Id: "t1", Name: "TodoWrite", InputJson: input})

	for _, c := range []*client{ctl, obs} {
		evs := c.eventsUntil(turnEnded(turn))
		if r := resultOf(t, evs, "t1"); r.GetIsError() || r.GetStatus() != "completed" {
			t.Fatalf("TodoWrite result %v: %s", r, text(r))
		}
		var got []*tacklev1.Event
		for _, e := range evs {
			if e.GetType() == "todos_updated" {
				got = append(got, e)
			}
		}
		if len(got) != 1 {
			t.Fatalf("%d todos_updated events, want 1 (types %v)", len(got), seqTypes(evs))
		}
		if diff := cmp.Diff(want, decodeTodos(t, got[0].GetSession().GetTodosJson())); diff != "" {
			t.Errorf("todos_updated (-want +got):\n%s", diff)
		}
	}

	// The session has them, and a client that subscribes later gets them in the snapshot.
	resp, err := d.Client().GetSession(context.Background(), &tacklev1.GetSessionRequest{Id: id})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, decodeTodos(t, resp.GetSession().GetTodosJson())); diff != "" {
		t.Errorf("GetSession todos (-want +got):\n%s", diff)
	}
	late := attach(t, d.Client(), "late", tacklev1.Role_ROLE_OBSERVER)
	snap := late.subscribe(id, 0)
	if diff := cmp.Diff(want, decodeTodos(t, snap.GetSession().GetTodosJson())); diff != "" {
		t.Errorf("snapshot todos (-want +got):\n%s", diff)
	}

	// An invalid status is refused by the schema and changes nothing.
	turn = ctl.runBatch(id, "r2", &tacklev1.ToolCall{Id: "t2", Name: "TodoWrite",
		InputJson: `{"todos":[{"content":"x","status":"done","activeForm":"x-ing"}]}`})
	evs := ctl.eventsUntil(turnEnded(turn))
	if r := resultOf(t, evs, "t2"); !r.GetIsError() || r.GetStatus() != "invalid" {
		t.Errorf("invalid status: result %v", r)
	}
	for _, e := range evs {
		if e.GetType() == "todos_updated" {
			t.Errorf("a refused TodoWrite sent todos_updated")
		}
	}
}
