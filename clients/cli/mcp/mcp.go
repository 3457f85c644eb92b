// Package mcp is `tackle mcp`: the MCP servers the daemon connects to (list,
// add, remove, approve, login, logs, prompts) and `tackle mcp serve`.
package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
	"github.com/tackle-agent/tackle/clients/cli/internal/render"
	"github.com/tackle-agent/tackle/clients/client"
	"github.com/tackle-agent/tackle/clients/mcpserve"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"github.com/tackle-agent/tackle/internal/procs"
)

// Command is `tackle mcp`: the MCP servers the daemon connects to.
func Command(a *cmdutil.App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Manage the MCP servers the daemon connects to (one process per server, shared by every session)",
	}
	cmd.AddCommand(mcpListCommand(a), mcpGetCommand(a), mcpAddCommand(a), mcpAddJSONCommand(a),
		mcpRemoveCommand(a), mcpReconnectCommand(a), mcpApproveCommand(a), mcpLogsCommand(a),
		mcpPromptsCommand(a), mcpPromptCommand(a), mcpServeCommand(a))
	cmd.AddCommand(mcpLoginCommand(a), mcpLogoutCommand(a))
	return cmd
}

func mcpServeCommand(a *cmdutil.App) *cobra.Command {
	var (
		sf      cmdutil.SessionFlags
		tools   []string
		name    string
		mode    string
		timeout uint32
		// cpuProfile, hidden: where a CPU profile of the serving goes.
		cpuProfile string
		// memProfile, hidden: where a heap profile goes when serving ends.
		memProfile string
	)
	cmd := &cobra.Command{
		Use:   "serve [--cwd DIR | --session ID] [--tools mcp|all|PATTERN...] [--name NAME]",
		Short: "Serve the session's tools as an MCP server on stdio, for any MCP client (Claude Code, Codex, editors)",
		Long: `Run an MCP server on stdin and stdout that offers a tackle session's tools (the
default session of the current directory, or --cwd's, or --session's) to an
MCP client. Every call runs through tackle's pipeline (rules, hooks, permission
prompts, the audit), and the underlying MCP servers are the daemon's shared
connections: any number of clients use one process per server.

--tools picks what is served: mcp (the MCP servers' tools, mcp__srv__tool served
as srv__tool; the default), all (those and tackle's built-ins: Read, Grep,
Bash, ...), or glob patterns (github__*, Read); several add up. A permission
prompt is asked with MCP elicitation when the client supports it, and is open
to every attached tackle client too. stdout carries protocol messages only.`,
		Example: `  # .mcp.json, ~/.claude.json, Codex, an editor:
  #   {"mcpServers": {"tackle": {"command": "tackle", "args": ["mcp", "serve"]}}}
  tackle mcp serve --tools all --cwd ~/src/app`,
		Args: cobra.NoArgs,
		RunE: cmdutil.Run(func(cmd *cobra.Command, _ []string) error {
			if err := cmdutil.CheckMode(mode); err != nil {
				return err
			}
			if sf.Session != "" && sf.Cwd != "" {
				// A session has its own directory: one of the two would be
				// ignored without a word.
				return cmdutil.UsageError("give --session or --cwd, not both (a session keeps the directory it was created in)")
			}
			dir, err := cmdutil.AbsDir(sf.Cwd)
			if err != nil {
				return err
			}
			sid := sf.Session
			if sid == "" {
				sid = a.Getenv("TACKLE_SESSION")
			}
			if sid != "" {
				// A mistyped id is a usage error naming the nearest
				// sessions, as for every other command, before serving.
				err := a.WithClient(cmd, func(ctx context.Context, c *client.Client) error {
					if _, err := c.GetSession(ctx, sid); err != nil {
						return a.SessionNotFound(ctx, c, "opening session", sid, err)
					}
					return nil
				})
				if err != nil {
					return err
				}
			}
			srv, err := mcpserve.New(&mcpserve.Options{
				Dial: func(ctx context.Context, clientName string) (*client.Client, error) {
					return client.Dial(ctx, &client.Options{Socket: a.SocketPath(), NoAutostart: a.NoAutostart, Env: a.Environ, ClientName: clientName})
				},
				SessionID: sid, Cwd: dir, Environ: a.Environ, Tools: tools, Name: name, Version: a.Version,
				PermissionMode: mode, PermissionTimeout: time.Duration(timeout) * time.Second, Log: a.Stderr,
			})
			if err != nil {
				return cmdutil.UsageError("%v", err)
			}
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			if memProfile != "" {
				defer writeHeapProfile(memProfile, a.Stderr)
			}
			// One P while one call is in flight, all of them while
			// several are (internal/procs): a call is a chain of
			// goroutines handing over to each other.
			defer procs.Govern()()
			in, out, restore := a.ProtocolStdio()
			defer restore()
			return srv.Serve(cmd.Context(), in, out)
		}),
	}
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile to this file until serving ends (for measuring)")
	cmd.Flags().MarkHidden("cpuprofile") //nolint:errcheck // the flag exists
	cmd.Flags().StringVar(&memProfile, "memprofile", "", "write a heap profile (after a GC) to this file when serving ends (for measuring)")
	cmd.Flags().MarkHidden("memprofile") //nolint:errcheck // the flag exists
	sf.Register(cmd)
	cmd.Flags().StringSliceVar(&tools, "tools", nil, "what to serve: mcp (default), all, or glob patterns such as github__* (repeatable, comma-separated)")
	cmd.Flags().StringVar(&name, "name", "tackle", "the server's name in its serverInfo")
	cmd.Flags().StringVar(&mode, "permission-mode", "", "permission mode for the calls: default, acceptEdits, plan, dontAsk, bypassPermissions")
	cmd.Flags().Uint32Var(&timeout, "permission-timeout", 0, "seconds a permission request waits for an answer before it is denied (0: the daemon's default)")
	return cmd
}

// writeHeapProfile writes the heap profile (its alloc_space sample is what
// the serving allocated) to path, after a GC; a failure is only reported.
func writeHeapProfile(path string, stderr io.Writer) {
	runtime.GC()
	f, err := os.Create(path)
	if err == nil {
		err = pprof.WriteHeapProfile(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "tackle mcp serve: heap profile: %v\n", err)
	}
}

// mcpServerJSON is the --json shape of a server.
type mcpServerJSON struct {
	Name       string   `json:"name"`
	Scope      string   `json:"scope"`
	Source     string   `json:"source"`
	Transport  string   `json:"transport"`
	Target     string   `json:"target,omitempty"`
	State      string   `json:"state"`
	Error      string   `json:"error,omitempty"`
	PID        int32    `json:"pid,omitempty"`
	Tools      int32    `json:"tools"`
	Resources  int32    `json:"resources"`
	Prompts    int32    `json:"prompts"`
	Sessions   []string `json:"sessions"`
	Since      string   `json:"since,omitempty"`
	Restarts   int32    `json:"restarts,omitempty"`
	LogPath    string   `json:"log_path,omitempty"`
	ServerInfo string   `json:"server_info,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`
	ToolNames  []string `json:"tool_names,omitempty"`
	AuthURL    string   `json:"auth_url,omitempty"`
	Authorized bool     `json:"authorized,omitempty"`
	RetryAt    string   `json:"retry_at,omitempty"`
	Attempts   int32    `json:"attempts,omitempty"`
}

func mcpServerToJSON(s *tacklev1.McpServer) mcpServerJSON {
	out := mcpServerJSON{
		Name: s.GetName(), Scope: s.GetScope(), Source: s.GetSource(), Transport: s.GetTransport(),
		Target: s.GetTarget(), State: s.GetState(), Error: s.GetError(), PID: s.GetPid(),
		Tools: s.GetTools(), Resources: s.GetResources(), Prompts: s.GetPrompts(),
		Sessions: s.GetSessions(), Restarts: s.GetRestarts(), LogPath: s.GetLogPath(),
		ServerInfo: s.GetServerInfo(), Warnings: s.GetWarnings(), ToolNames: s.GetToolNames(),
		AuthURL: s.GetAuthUrl(), Authorized: s.GetAuthorized(), RetryAt: render.TimeJSON(s.GetRetryAt()), Attempts: s.GetAttempts(),
	}
	if out.Sessions == nil {
		out.Sessions = []string{}
	}
	if s.GetSince() != nil {
		out.Since = render.TimeJSON(s.GetSince())
	}
	return out
}

// ListMcp lists the MCP servers of session sid (with all, every server of
// every session).
func ListMcp(ctx context.Context, c *client.Client, sid string, all bool) (*tacklev1.ListMcpServersResponse, error) {
	resp, err := c.Service().ListMcpServers(ctx, &tacklev1.ListMcpServersRequest{SessionId: sid, All: all})
	if err != nil {
		return nil, fmt.Errorf("listing MCP servers: %w", client.Err(err))
	}
	return resp, nil
}

func mcpListCommand(a *cmdutil.App) *cobra.Command {
	var (
		sf          cmdutil.SessionFlags
		all, asJSON bool
	)
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the MCP servers of a session (default: the current directory's) with their state",
		Args:    cobra.NoArgs,
		RunE: cmdutil.Run(func(cmd *cobra.Command, _ []string) error {
			return a.WithSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				resp, err := ListMcp(ctx, c, sid, all)
				if err != nil {
					return err
				}
				for _, p := range resp.GetProblems() {
					fmt.Fprintf(a.Stderr, "tackle: %s\n", problemLine(p))
				}
				if asJSON {
					out := make([]mcpServerJSON, 0, len(resp.GetServers()))
					for _, s := range resp.GetServers() {
						out = append(out, mcpServerToJSON(s))
					}
					return a.PrintJSON(out)
				}
				if len(resp.GetServers()) == 0 {
					fmt.Fprintln(a.Stdout, "No MCP servers configured (tackle mcp add NAME -- CMD ARGS…, or a .mcp.json in the project)")
					return nil
				}
				tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tSTATE\tSCOPE\tTRANSPORT\tTOOLS\tSESSIONS\tTARGET")
				for _, s := range resp.GetServers() {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", s.GetName(), s.GetState(), s.GetScope(), s.GetTransport(),
						s.GetTools(), len(s.GetSessions()), s.GetTarget())
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				for _, s := range resp.GetServers() {
					if s.GetError() != "" {
						fmt.Fprintf(a.Stdout, "  %s: %s%s\n", s.GetName(), s.GetError(), retryNote(s))
					}
					for _, w := range s.GetWarnings() {
						fmt.Fprintf(a.Stdout, "  %s: warning: %s\n", s.GetName(), w)
					}
				}
				return nil
			})
		}),
	}
	sf.Register(cmd)
	cmd.Flags().BoolVar(&all, "all", false, "every server the daemon holds, for every session")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

// retryNote says when an unreachable remote server is tried next.
func retryNote(s *tacklev1.McpServer) string {
	if s.GetRetryAt() == nil {
		return ""
	}
	d := time.Until(s.GetRetryAt().AsTime()).Round(time.Second)
	if d < time.Second {
		return "; retrying now"
	}
	return fmt.Sprintf("; retrying in %d s", int(d/time.Second))
}

func problemLine(p *tacklev1.McpProblem) string {
	if p.GetServer() != "" {
		return fmt.Sprintf("%s: MCP server %q: %s", p.GetPath(), p.GetServer(), p.GetMessage())
	}
	return fmt.Sprintf("%s: %s", p.GetPath(), p.GetMessage())
}

// findMcp returns the named server of the session, or an error listing the known ones.
func findMcp(ctx context.Context, c *client.Client, sid, name string) (*tacklev1.McpServer, error) {
	resp, err := ListMcp(ctx, c, sid, false)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, s := range resp.GetServers() {
		if s.GetName() == name {
			return s, nil
		}
		names = append(names, s.GetName())
	}
	for _, p := range resp.GetProblems() {
		if p.GetServer() == name {
			return nil, fmt.Errorf("MCP server %q is not usable: %s", name, problemLine(p))
		}
	}
	if len(names) == 0 {
		return nil, cmdutil.UsageError("no MCP server %q: this session has no MCP servers", name)
	}
	if dym := cmdutil.DidYouMean(name, names); dym != "" {
		return nil, cmdutil.UsageError("no MCP server %q%s", name, dym)
	}
	if len(names) <= 10 {
		return nil, cmdutil.UsageError("no MCP server %q (this session has: %s)", name, strings.Join(names, ", "))
	}
	return nil, cmdutil.UsageError("no MCP server %q (tackle mcp list lists the session's %d)", name, len(names))
}

func mcpGetCommand(a *cmdutil.App) *cobra.Command {
	var (
		sf     cmdutil.SessionFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "get NAME",
		Short: "Show one MCP server: where it is configured, its state, process and tools",
		Args:  cobra.ExactArgs(1),
		RunE: cmdutil.Run(func(cmd *cobra.Command, args []string) error {
			return a.WithSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				s, err := findMcp(ctx, c, sid, args[0])
				if err != nil {
					return err
				}
				if asJSON {
					return a.PrintJSON(mcpServerToJSON(s))
				}
				j := mcpServerToJSON(s)
				tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
				row := func(k, v string) {
					if v != "" {
						fmt.Fprintf(tw, "%s:\t%s\n", k, v)
					}
				}
				row("Name", j.Name)
				row("State", j.State)
				row("Error", j.Error+retryNote(s))
				row("Scope", j.Scope)
				row("Source", j.Source)
				row("Transport", j.Transport)
				row("Target", j.Target)
				row("Server", j.ServerInfo)
				switch {
				case j.AuthURL != "":
					row("OAuth", "waiting for the browser: "+j.AuthURL)
				case j.Authorized:
					row("OAuth", "authorised (tackle mcp logout "+j.Name+" forgets the token)")
				}
				if j.PID > 0 {
					row("PID", fmt.Sprint(j.PID))
				}
				row("Since", j.Since)
				if j.Restarts > 0 {
					row("Restarts", fmt.Sprint(j.Restarts))
				}
				row("Log", j.LogPath)
				row("Sessions", strings.Join(j.Sessions, ", "))
				row("Counts", fmt.Sprintf("%d tools, %d resources, %d prompts", j.Tools, j.Resources, j.Prompts))
				for _, w := range j.Warnings {
					row("Warning", w)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				for _, t := range j.ToolNames {
					fmt.Fprintf(a.Stdout, "  %s\n", t)
				}
				return nil
			})
		}),
	}
	sf.Register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON object")
	return cmd
}

// mcpAddFlags are add's options.
type mcpAddFlags struct {
	transport string
	scope     string
	env       []string
	headers   []string
	timeoutMS int
	replace   bool
	cwd       string
}

func (f *mcpAddFlags) register(cmd *cobra.Command, entryFlags bool) {
	if entryFlags {
		cmd.Flags().StringVarP(&f.transport, "transport", "t", "", "stdio (default with a command), http or sse (needed with a URL)")
		cmd.Flags().StringArrayVarP(&f.env, "env", "e", nil, "an environment variable for a stdio server, K=V (repeatable)")
		cmd.Flags().StringArrayVarP(&f.headers, "header", "H", nil, "an HTTP header, 'K: V' (repeatable)")
		cmd.Flags().IntVar(&f.timeoutMS, "timeout", 0, "per-call timeout in milliseconds (0: the default)")
	}
	cmd.Flags().StringVarP(&f.scope, "scope", "s", "local", "local (.tackle/settings.local.json), project (.mcp.json) or user (tackle's user settings)")
	cmd.Flags().BoolVar(&f.replace, "replace", false, "replace an existing entry of that name")
	cmd.Flags().StringVar(&f.cwd, "cwd", "", "the project (default: the current directory)")
}

func checkScope(scope string) error {
	switch scope {
	case "local", "project", "user":
		return nil
	}
	return cmdutil.UsageError("invalid --scope %q: use local, project or user", scope)
}

func mcpAddCommand(a *cmdutil.App) *cobra.Command {
	var f mcpAddFlags
	cmd := &cobra.Command{
		Use:   "add [flags] NAME URL | NAME -- COMMAND [ARGS...]",
		Short: "Add an MCP server: a URL (--transport http|sse) or a command after --",
		Example: `  tackle mcp add --transport http docs https://example.com/mcp -H 'Authorization: Bearer ${TOKEN}'
  tackle mcp add -e ROOT=/srv everything -- npx -y @modelcontextprotocol/server-everything`,
		Args: cobra.MinimumNArgs(1),
		RunE: cmdutil.Run(func(cmd *cobra.Command, args []string) error {
			if err := checkScope(f.scope); err != nil {
				return err
			}
			name := args[0]
			entry := map[string]any{}
			dash := cmd.ArgsLenAtDash()
			switch {
			case dash >= 0:
				if dash != 1 {
					return cmdutil.UsageError("give exactly one NAME before --")
				}
				if len(args) < 2 {
					return cmdutil.UsageError("no command after --")
				}
				if f.transport != "" && f.transport != "stdio" {
					return cmdutil.UsageError("a command needs --transport stdio (or none), not %q", f.transport)
				}
				if len(f.headers) > 0 {
					return cmdutil.UsageError("--header is for http and sse servers")
				}
				entry["type"] = "stdio"
				entry["command"] = args[1]
				entry["args"] = args[2:]
				if len(f.env) > 0 {
					env := map[string]string{}
					for _, kv := range f.env {
						k, v, ok := strings.Cut(kv, "=")
						if !ok || k == "" {
							return cmdutil.UsageError("invalid --env %q: use K=V", kv)
						}
						env[k] = v
					}
					entry["env"] = env
				}
			case len(args) == 2:
				t := f.transport
				switch t {
				case "http", "streamable-http", "sse":
				case "", "stdio":
					return cmdutil.UsageError("a URL needs --transport http or sse (a command goes after --)")
				default:
					return cmdutil.UsageError("invalid --transport %q: use stdio, http or sse", t)
				}
				if len(f.env) > 0 {
					return cmdutil.UsageError("--env is for stdio servers")
				}
				entry["type"] = t
				entry["url"] = args[1]
				if len(f.headers) > 0 {
					h := map[string]string{}
					for _, kv := range f.headers {
						k, v, ok := strings.Cut(kv, ":")
						if !ok || strings.TrimSpace(k) == "" {
							return cmdutil.UsageError("invalid --header %q: use 'K: V'", kv)
						}
						h[strings.TrimSpace(k)] = strings.TrimSpace(v)
					}
					entry["headers"] = h
				}
			default:
				return cmdutil.UsageError("give NAME URL, or NAME -- COMMAND [ARGS...]")
			}
			if f.timeoutMS > 0 {
				entry["timeout"] = f.timeoutMS
			}
			raw, _ := json.Marshal(entry) // maps of strings: cannot fail
			return addMcp(a, cmd, &f, name, string(raw))
		}),
	}
	f.register(cmd, true)
	return cmd
}

func addMcp(a *cmdutil.App, cmd *cobra.Command, f *mcpAddFlags, name, entry string) error {
	dir, err := cmdutil.AbsDir(f.cwd)
	if err != nil {
		return err
	}
	return a.WithClient(cmd, func(ctx context.Context, c *client.Client) error {
		resp, err := c.Service().AddMcpServer(ctx, &tacklev1.AddMcpServerRequest{
			Cwd: dir, Scope: f.scope, Name: name, EntryJson: entry, Replace: f.replace,
		})
		if err != nil {
			return client.Err(err)
		}
		fmt.Fprintf(a.Stdout, "Added MCP server %q (%s scope) to %s\n", name, f.scope, resp.GetPath())
		for _, w := range resp.GetWarnings() {
			fmt.Fprintf(a.Stdout, "  warning: %s\n", w)
		}
		if f.scope == "project" {
			fmt.Fprintf(a.Stdout, "Project servers start once the project is trusted and the server approved: tackle mcp approve %s\n", name)
		}
		return nil
	})
}

func mcpAddJSONCommand(a *cmdutil.App) *cobra.Command {
	var f mcpAddFlags
	cmd := &cobra.Command{
		Use:     "add-json NAME JSON",
		Short:   "Add an MCP server from its JSON entry (as in .mcp.json)",
		Example: `  tackle mcp add-json fs '{"command":"npx","args":["-y","@modelcontextprotocol/server-filesystem","."]}'`,
		Args:    cobra.ExactArgs(2),
		RunE: cmdutil.Run(func(cmd *cobra.Command, args []string) error {
			if err := checkScope(f.scope); err != nil {
				return err
			}
			var obj map[string]any
			if err := json.Unmarshal([]byte(args[1]), &obj); err != nil {
				return cmdutil.UsageError("the entry is not a JSON object: %v", err)
			}
			return addMcp(a, cmd, &f, args[0], args[1])
		}),
	}
	f.register(cmd, false)
	return cmd
}

func mcpRemoveCommand(a *cmdutil.App) *cobra.Command {
	var scope, cwd string
	cmd := &cobra.Command{
		Use:     "remove NAME",
		Aliases: []string{"rm"},
		Short:   "Remove an MCP server from tackle's configuration files",
		Args:    cobra.ExactArgs(1),
		RunE: cmdutil.Run(func(cmd *cobra.Command, args []string) error {
			if scope != "" {
				if err := checkScope(scope); err != nil {
					return err
				}
			}
			dir, err := cmdutil.AbsDir(cwd)
			if err != nil {
				return err
			}
			return a.WithClient(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.Service().RemoveMcpServer(ctx, &tacklev1.RemoveMcpServerRequest{Cwd: dir, Scope: scope, Name: args[0]})
				if err != nil {
					return client.Err(err)
				}
				fmt.Fprintf(a.Stdout, "Removed MCP server %q from %s\n", args[0], resp.GetPath())
				return nil
			})
		}),
	}
	cmd.Flags().StringVarP(&scope, "scope", "s", "", "only this scope: local, project or user (default: the first that has it)")
	cmd.Flags().StringVar(&cwd, "cwd", "", "the project (default: the current directory)")
	return cmd
}

func mcpReconnectCommand(a *cmdutil.App) *cobra.Command {
	var sf cmdutil.SessionFlags
	cmd := &cobra.Command{
		Use:   "reconnect NAME",
		Short: "Reconnect an MCP server (also one that failed and stopped restarting)",
		Args:  cobra.ExactArgs(1),
		RunE: cmdutil.Run(func(cmd *cobra.Command, args []string) error {
			return a.WithSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				resp, err := c.Service().ReconnectMcpServer(ctx, &tacklev1.ReconnectMcpServerRequest{SessionId: sid, Name: args[0]})
				if err != nil {
					return fmt.Errorf("reconnecting MCP server %q: %w", args[0], client.Err(err))
				}
				s := resp.GetServer()
				fmt.Fprintf(a.Stdout, "%s: %s\n", s.GetName(), s.GetState())
				if s.GetError() != "" {
					fmt.Fprintf(a.Stdout, "  %s\n", s.GetError())
				}
				if s.GetState() != "connected" {
					return &cmdutil.ExitCodeError{Code: cmdutil.ExitError}
				}
				return nil
			})
		}),
	}
	sf.Register(cmd)
	return cmd
}

func mcpApproveCommand(a *cmdutil.App) *cobra.Command {
	var (
		all bool
		cwd string
	)
	cmd := &cobra.Command{
		Use:   "approve NAME...|--all",
		Short: "Approve servers of the project's .mcp.json (recorded in .tackle/settings.local.json)",
		Long: `Approve servers of the project's .mcp.json, so that they start. The approval is
recorded in .tackle/settings.local.json (enabledMcpjsonServers, or
enableAllProjectMcpServers with --all). Project servers also need the project to
be trusted (tackle trust).`,
		RunE: cmdutil.Run(func(cmd *cobra.Command, args []string) error {
			if all == (len(args) > 0) {
				return cmdutil.UsageError("give server names or --all")
			}
			dir, err := cmdutil.AbsDir(cwd)
			if err != nil {
				return err
			}
			return a.WithClient(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.Service().ApproveMcpServers(ctx, &tacklev1.ApproveMcpServersRequest{Cwd: dir, Names: args, All: all})
				if err != nil {
					return client.Err(err)
				}
				what := strings.Join(args, ", ")
				if all {
					what = "every server of .mcp.json"
				}
				fmt.Fprintf(a.Stdout, "Approved %s in %s\n", what, resp.GetPath())
				if t := resp.GetTrust(); t != nil && !t.GetTrusted() {
					fmt.Fprintf(a.Stdout, "The project %s is not trusted, so its servers stay needs-trust and do not start: trust it with `%s`.\n", t.GetDir(), t.GetHint())
				}
				return nil
			})
		}),
	}
	cmd.Flags().BoolVar(&all, "all", false, "approve every server of the project's .mcp.json")
	cmd.Flags().StringVar(&cwd, "cwd", "", "the project (default: the current directory)")
	return cmd
}

func mcpLogsCommand(a *cmdutil.App) *cobra.Command {
	var (
		sf   cmdutil.SessionFlags
		tail int64
	)
	cmd := &cobra.Command{
		Use:   "logs NAME",
		Short: "Print the end of an MCP server's stderr log",
		Args:  cobra.ExactArgs(1),
		RunE: cmdutil.Run(func(cmd *cobra.Command, args []string) error {
			return a.WithSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				resp, err := c.Service().ReadMcpLogs(ctx, &tacklev1.ReadMcpLogsRequest{SessionId: sid, Name: args[0], TailBytes: tail})
				if err != nil {
					return fmt.Errorf("reading the log of MCP server %q: %w", args[0], client.Err(err))
				}
				if resp.GetTruncated() {
					fmt.Fprintf(a.Stderr, "tackle: showing the last %d bytes of %s\n", len(resp.GetData()), resp.GetPath())
				}
				_, err = a.Stdout.Write(resp.GetData())
				return err
			})
		}),
	}
	sf.Register(cmd)
	cmd.Flags().Int64Var(&tail, "tail", 64<<10, "at most this many bytes from the end")
	return cmd
}

// promptJSON is the --json shape of a prompt.
type promptJSON struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Command     string           `json:"command"`
	Arguments   []promptArgument `json:"arguments"`
}

type promptArgument struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required"`
}

func mcpPromptsCommand(a *cmdutil.App) *cobra.Command {
	var (
		sf     cmdutil.SessionFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "prompts NAME",
		Short: "List an MCP server's prompts",
		Args:  cobra.ExactArgs(1),
		RunE: cmdutil.Run(func(cmd *cobra.Command, args []string) error {
			return a.WithSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				resp, err := c.Service().ListMcpPrompts(ctx, &tacklev1.ListMcpPromptsRequest{SessionId: sid, Server: args[0]})
				if err != nil {
					return fmt.Errorf("listing the prompts of MCP server %q: %w", args[0], client.Err(err))
				}
				out := make([]promptJSON, 0, len(resp.GetPrompts()))
				for _, p := range resp.GetPrompts() {
					pj := promptJSON{Name: p.GetName(), Title: p.GetTitle(), Description: p.GetDescription(), Command: p.GetCommand(), Arguments: []promptArgument{}}
					for _, arg := range p.GetArguments() {
						pj.Arguments = append(pj.Arguments, promptArgument{Name: arg.GetName(), Description: arg.GetDescription(), Required: arg.GetRequired()})
					}
					out = append(out, pj)
				}
				if asJSON {
					return a.PrintJSON(out)
				}
				tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "COMMAND\tARGUMENTS\tDESCRIPTION")
				for _, p := range out {
					var as []string
					for _, arg := range p.Arguments {
						if arg.Required {
							as = append(as, arg.Name)
						} else {
							as = append(as, "["+arg.Name+"]")
						}
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Command, strings.Join(as, " "), render.FirstLine(p.Description))
				}
				return tw.Flush()
			})
		}),
	}
	sf.Register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

func mcpPromptCommand(a *cmdutil.App) *cobra.Command {
	var (
		sf     cmdutil.SessionFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "prompt SERVER PROMPT [ARG=VALUE...]",
		Short: "Render an MCP server's prompt with arguments",
		Args:  cobra.MinimumNArgs(2),
		RunE: cmdutil.Run(func(cmd *cobra.Command, args []string) error {
			req := &tacklev1.GetPromptRequest{Server: args[0], Name: args[1], Arguments: map[string]string{}}
			for _, kv := range args[2:] {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return cmdutil.UsageError("invalid argument %q: use NAME=VALUE", kv)
				}
				req.Arguments[k] = v
			}
			return a.WithSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				req.SessionId = sid
				ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
				defer cancel()
				resp, err := c.Service().GetPrompt(ctx, req)
				if err != nil {
					return fmt.Errorf("rendering prompt %q of MCP server %q: %w", args[1], args[0], client.Err(err))
				}
				if asJSON {
					type msg struct {
						Role    string             `json:"role"`
						Content render.ContentJSON `json:"content"`
					}
					out := struct {
						Description string `json:"description,omitempty"`
						Messages    []msg  `json:"messages"`
					}{Description: resp.GetDescription(), Messages: []msg{}}
					for _, m := range resp.GetMessages() {
						r := render.ResultToJSON(&tacklev1.ToolResult{Content: []*tacklev1.ContentBlock{m.GetContent()}})
						out.Messages = append(out.Messages, msg{Role: m.GetRole(), Content: r.Content[0]})
					}
					return a.PrintJSON(out)
				}
				for _, m := range resp.GetMessages() {
					fmt.Fprintf(a.Stdout, "[%s]\n", m.GetRole())
					render.PrintResult(a, &tacklev1.ToolResult{Content: []*tacklev1.ContentBlock{m.GetContent()}})
				}
				return nil
			})
		}),
	}
	sf.Register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON object")
	return cmd
}
