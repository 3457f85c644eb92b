package shell

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// BenchmarkBashTrue is one Bash call of `true` in process (no pipeline),
// next to `bash -c true` run directly: the tool's own overhead per call.
func BenchmarkBashTrue(b *testing.B) {
	h := newHarness(b, nil)
	env := newEnv(b)
	bash := h.tools["Bash"]
	in := json.RawMessage(`{"command":"true"}`)
	c := &tool.Call{ID: "toolu_bench", Name: "Bash", Input: in, Env: env}
	b.Run("tool", func(b *testing.B) {
		for b.Loop() {
			_ = bash.Attributes(in)
			res, err := bash.Run(context.Background(), c, func(string) {})
			if err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("/bin/bash", "-c", "true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkBashGigabyte prints 1 GB through Bash: throughput to the output
// file (MB/s) and the growth of the peak RSS (MB).
func BenchmarkBashGigabyte(b *testing.B) {
	h := newHarness(b, nil)
	env := newEnv(b)
	bash := h.tools["Bash"]
	in := json.RawMessage(`{"command":"head -c 1G /dev/zero | tr '\\0' a"}`)
	c := &tool.Call{ID: "toolu_bench", Name: "Bash", Input: in, Env: env}
	var growth int64
	var elapsed time.Duration
	b.SetBytes(1 << 30)
	for b.Loop() {
		base := resetPeakRSS(b)
		start := time.Now()
		res, err := bash.Run(context.Background(), c, func(string) {})
		elapsed += time.Since(start)
		if err != nil || res.IsError || !strings.Contains(res.Content[0].Text, "1073741824 bytes") {
			b.Fatal(err, res)
		}
		growth = max(growth, peakRSS(b)-base)
		os.RemoveAll(env.Out)
	}
	b.ReportMetric(float64(b.N)*1024/elapsed.Seconds(), "MB/s")
	b.ReportMetric(float64(growth)/(1<<20), "peak-RSS-growth-MB")
}

// BenchmarkCheckPermission is the permission view of a 5-part compound
// command: parsing, normalising and resolving its paths.
func BenchmarkCheckPermission(b *testing.B) {
	env := newEnv(b)
	bash := &Bash{}
	in, _ := json.Marshal(map[string]any{"command": "cd src && FOO=1 timeout 5 npm test 2>&1 | tee test.log; cat README.md | grep -n x > out.txt || echo failed"})
	c := &tool.Call{ID: "toolu_bench", Name: "Bash", Input: in, Env: env}
	for b.Loop() {
		if _, err := bash.CheckPermission(context.Background(), c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheckPermissionTrue(b *testing.B) {
	env := newEnv(b)
	bash := &Bash{}
	c := &tool.Call{ID: "toolu_bench", Name: "Bash", Input: json.RawMessage(`{"command":"true"}`), Env: env}
	for b.Loop() {
		if _, err := bash.CheckPermission(context.Background(), c); err != nil {
			b.Fatal(err)
		}
	}
}
