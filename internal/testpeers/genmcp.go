package testpeers

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var genMCP struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// BuildGenMCP builds the generated-tools MCP server (internal/testpeers/genmcp,
// see its package doc for the flags) once per test binary and returns the
// path of the binary. Later calls, from any test, return the same path; a
// failed build fails every caller with the compiler output.
//
// The binary lives in a directory named tackle-genmcp-* under os.TempDir().
// It is shared by the tests of the binary, so no single test's t.Cleanup may
// remove it, and it is left behind when the test binary exits (a few MB; the
// OS's temp cleanup removes it). Safe for concurrent use.
func BuildGenMCP(t testing.TB) string {
	t.Helper()
	genMCP.once.Do(func() {
		dir, err := os.MkdirTemp("", "tackle-genmcp-*")
		if err != nil {
			genMCP.err = err
			return
		}
		goBin, err := exec.LookPath("go")
		if err != nil {
			goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
			if _, statErr := os.Stat(goBin); statErr != nil {
				genMCP.err = errors.Join(err, statErr)
				return
			}
		}
		_, file, _, _ := runtime.Caller(0)
		bin := filepath.Join(dir, "genmcp")
		cmd := exec.Command(goBin, "build", "-o", bin, "./genmcp")
		cmd.Dir = filepath.Dir(file)
		genMCP.out, genMCP.err = cmd.CombinedOutput()
		genMCP.path = bin
	})
	if genMCP.err != nil {
		t.Fatalf("building the genmcp test server: %v\n%s", genMCP.err, genMCP.out)
	}
	return genMCP.path
}

// GenMCPQuery is a natural-language tool search query and the generated tool
// that should rank first for it.
type GenMCPQuery struct {
	Query string // what a model might ask ToolSearch
	Want  string // the genmcp tool (snake style) that should rank first
}

// GenMCPQueries is a catalogue of queries for genmcp's tools with the default
// flags (seed 0, snake style, all families), valid for any -tools from 200 up
// to at least 5000: each Want is among the first 200 tools and ranks first
// under plain BM25 over name parts and description words (checked, with and
// without name boosting and plural stemming, by genmcp's tests).
var GenMCPQueries = []GenMCPQuery{
	{"create a new bug report in the issue tracker", "create_issue"},
	{"send a message to a chat channel", "send_message"},
	{"run a SQL query against the database", "run_query"},
	{"find a meeting time when all attendees are free", "find_meeting_time"},
	{"merge a pull request", "merge_pull_request"},
	{"rotate an API key secret", "rotate_secret"},
	{"scale a deployment to more replicas", "scale_deployment"},
	{"weather forecast for a location", "get_forecast"},
	{"acknowledge an alert", "acknowledge_alert"},
	{"refund a payment back to the customer", "refund_payment"},
	{"driving directions between two places", "get_directions"},
	{"search source code for a symbol", "search_code"},
	{"approve a vacation time off request", "approve_time_off_request"},
	{"geocode a street address to latitude and longitude", "geocode_address"},
	{"empty the trash", "empty_trash"},
}
