package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/tackle-agent/tackle/daemon/proc"
)

// DefaultTimeout is a handler's timeout when it sets none.
const DefaultTimeout = 600 * time.Second

// maxCapture bounds what is kept of a handler's stdout and stderr each.
const maxCapture = 4 << 20

// output is a handler's JSON output (reference.md section 3).
type output struct {
	Continue           *bool  `json:"continue"`
	StopReason         string `json:"stopReason"`
	SuppressOutput     bool   `json:"suppressOutput"`
	SystemMessage      string `json:"systemMessage"`
	Decision           string `json:"decision"`
	Reason             string `json:"reason"`
	HookSpecificOutput *struct {
		HookEventName            string          `json:"hookEventName"`
		PermissionDecision       string          `json:"permissionDecision"`
		PermissionDecisionReason string          `json:"permissionDecisionReason"`
		UpdatedInput             json.RawMessage `json:"updatedInput"`
		AdditionalContext        string          `json:"additionalContext"`
		UpdatedToolOutput        json.RawMessage `json:"updatedToolOutput"`
		Decision                 *struct {
			Behavior     string          `json:"behavior"`
			UpdatedInput json.RawMessage `json:"updatedInput"`
			Message      string          `json:"message"`
			Interrupt    bool            `json:"interrupt"`
		} `json:"decision"`
	} `json:"hookSpecificOutput"`
}

// runResult is what one handler run produced.
type runResult struct {
	h        *Handler
	exitCode int    // -1 when it did not exit normally (or http)
	block    bool   // exit 2
	stderr   string // trimmed
	out      *output
	plain    string // stdout that is not JSON (trimmed)
	err      string // a non-blocking error, for the event
	timeout  bool
	duration time.Duration
}

// run runs one handler with the JSON input and the environment.
func run(ctx context.Context, h *Handler, input []byte, dir string, environ []string, ask askFunc) runResult {
	start := time.Now()
	timeout := DefaultTimeout
	if h.Timeout > 0 {
		timeout = time.Duration(h.Timeout * float64(time.Second))
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errHookTimeout)
	defer cancel()
	var r runResult
	switch h.Type {
	case "http":
		r = runHTTP(ctx, h, input, environ)
	case "prompt":
		r = runPrompt(ctx, h, input, ask)
	default:
		r = runCommand(ctx, h, input, dir, environ)
	}
	r.h = h
	if errors.Is(context.Cause(ctx), errHookTimeout) {
		r = runResult{h: h, timeout: true, exitCode: -1,
			err: fmt.Sprintf("timed out after %s and was killed; no decision", timeout)}
	}
	r.duration = time.Since(start)
	return r
}

var errHookTimeout = errors.New("hook timed out")

// pluginCommand is a plugin's command hook as Claude Code runs it: with
// CLAUDE_PLUGIN_ROOT and CLAUDE_PLUGIN_DATA in its environment (the shell
// expands "${CLAUDE_PLUGIN_ROOT}" in a shell-form command from it), and in
// exec form (args) with both placeholders replaced in the command and
// each argument. The data directory is made first (the script may use
// it without naming it in the command), as Claude Code makes it for the
// processes it gives it to. environ is not modified.
func pluginCommand(h *Handler, environ []string) (string, []string, []string) {
	p := h.Plugin
	env := make([]string, 0, len(environ)+2)
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "CLAUDE_PLUGIN_ROOT=") && !strings.HasPrefix(kv, "CLAUDE_PLUGIN_DATA=") {
			env = append(env, kv)
		}
	}
	env = append(env, "CLAUDE_PLUGIN_ROOT="+p.Root)
	if p.DataDir != "" {
		env = append(env, "CLAUDE_PLUGIN_DATA="+p.DataDir)
		_ = os.MkdirAll(p.DataDir, 0o755) // a failure shows when the hook uses it
	}
	if len(h.Args) == 0 {
		return h.Command, nil, env
	}
	r := strings.NewReplacer("${CLAUDE_PLUGIN_ROOT}", p.Root, "${CLAUDE_PLUGIN_DATA}", p.DataDir)
	args := make([]string, len(h.Args))
	for i, a := range h.Args {
		args[i] = r.Replace(a)
	}
	return r.Replace(h.Command), args, env
}

// limitedBuffer keeps the first max bytes written and discards the rest.
type limitedBuffer struct {
	buf bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func runCommand(ctx context.Context, h *Handler, input []byte, dir string, environ []string) runResult {
	command, args := h.Command, h.Args
	if h.Plugin != nil {
		command, args, environ = pluginCommand(h, environ)
	}
	var cmd *exec.Cmd
	if len(args) > 0 {
		cmd = exec.CommandContext(ctx, command, args...)
	} else {
		cmd = exec.CommandContext(ctx, "/bin/sh", "-c", command)
	}
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		cmd.Dir = dir
	}
	cmd.Env = environ
	cmd.Stdin = bytes.NewReader(input)
	stdout := &limitedBuffer{max: maxCapture}
	stderr := &limitedBuffer{max: maxCapture}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Its own process group, so a timeout kills everything it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A grandchild that left the group may hold the pipes open: stop reading then.
	cmd.WaitDelay = 2 * time.Second
	// Pdeathsig and the record for the next daemon; orphans it leaves
	// (`sleep 30 &`) are reaped by proc's reaper.
	err := proc.Run(cmd, "hook")
	r := runResult{exitCode: -1, stderr: strings.TrimSpace(stderr.buf.String())}
	var ee *exec.ExitError
	switch {
	case err == nil:
		r.exitCode = 0
	case errors.As(err, &ee) && ee.Exited():
		r.exitCode = ee.ExitCode()
	case ctx.Err() != nil:
		r.err = "cancelled"
		return r
	default:
		r.err = fmt.Sprintf("running the hook: %v", err)
		return r
	}
	switch r.exitCode {
	case 0:
		r.parseStdout(stdout.buf.Bytes())
	case 2:
		r.block = true // JSON is ignored with exit 2
	default:
		line := r.stderr
		if i := strings.IndexByte(line, '\n'); i >= 0 {
			line = line[:i]
		}
		r.err = fmt.Sprintf("Failed with non-blocking status code %d: %s", r.exitCode, line)
		if line == "" {
			r.err = fmt.Sprintf("Failed with non-blocking status code %d", r.exitCode)
		}
		// Valid JSON still decides the outcome.
		r.parseStdout(stdout.buf.Bytes())
	}
	return r
}

// parseStdout reads stdout that starts with { as JSON output.
func (r *runResult) parseStdout(b []byte) {
	t := bytes.TrimSpace(b)
	if len(t) == 0 {
		return
	}
	if t[0] != '{' {
		r.plain = string(t)
		return
	}
	var o output
	if err := json.Unmarshal(t, &o); err != nil {
		msg := fmt.Sprintf("the hook printed invalid JSON (%v); its output is ignored", err)
		if r.err != "" {
			msg = r.err + "; " + msg
		}
		r.err = msg
		return
	}
	r.out = &o
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// expandHeader replaces $NAME and ${NAME} with the session's variable when
// NAME is in allowed, and with "" otherwise.
func expandHeader(v string, allowed []string, environ []string) string {
	if !strings.Contains(v, "$") {
		return v
	}
	return envRef.ReplaceAllStringFunc(v, func(m string) string {
		name := strings.Trim(m, "${}")
		ok := false
		for _, a := range allowed {
			if a == name {
				ok = true
			}
		}
		if !ok {
			return ""
		}
		for _, kv := range environ {
			if strings.HasPrefix(kv, name+"=") {
				return kv[len(name)+1:]
			}
		}
		return ""
	})
}

var httpClient = &http.Client{
	// Hooks talk to local services; never follow a redirect elsewhere.
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

func runHTTP(ctx context.Context, h *Handler, input []byte, environ []string) runResult {
	r := runResult{exitCode: -1}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(input))
	if err != nil {
		r.err = fmt.Sprintf("building the request: %v", err)
		return r
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h.Headers {
		req.Header.Set(k, expandHeader(v, h.AllowedEnvVars, environ))
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			r.err = "cancelled"
		} else {
			r.err = fmt.Sprintf("posting to the hook: %v", err)
		}
		return r
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxCapture))
	if err != nil {
		r.err = fmt.Sprintf("reading the hook's response: %v", err)
		return r
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := strings.TrimSpace(string(body))
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		r.err = fmt.Sprintf("the hook answered HTTP %d: %s", resp.StatusCode, msg)
		return r
	}
	r.exitCode = 0
	r.parseStdout(body)
	return r
}
