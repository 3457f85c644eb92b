package dispatch

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestSchemaCacheVersions: a tool name with a changed schema compiles the
// new one, the old one stays for a session that still has it, and past
// maxSchemasPerName versions the oldest goes.
func TestSchemaCacheVersions(t *testing.T) {
	var c schemaCache
	schema := func(i int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"v%d":{"type":"string"}}}`, i))
	}
	a := c.get("mcp__s__t", schema(0))
	if a.err != nil || a.sch == nil {
		t.Fatalf("compile: %v", a.err)
	}
	b := c.get("mcp__s__t", schema(1))
	if b == a || c.get("mcp__s__t", schema(0)) != a || c.get("mcp__s__t", schema(1)) != b {
		t.Fatal("two versions of one tool's schema are not both kept")
	}
	if c.get("other", schema(0)) == a {
		t.Fatal("another tool with the same schema shares its entry")
	}
	for i := 2; i <= maxSchemasPerName; i++ {
		c.get("mcp__s__t", schema(i))
	}
	if c.n != maxSchemasPerName+1 {
		t.Fatalf("%d schemas held, want %d", c.n, maxSchemasPerName+1)
	}
	if c.get("mcp__s__t", schema(0)) == a {
		t.Fatal("the oldest version was kept past the bound")
	}
}
