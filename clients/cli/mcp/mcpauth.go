package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

func mcpLoginCommand(a *cmdutil.App) *cobra.Command {
	var (
		sf              cmdutil.SessionFlags
		noBrowser, wait bool
		force, asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "login NAME",
		Short: "Authorise tackle with a remote MCP server by OAuth (opens the authorisation page)",
		Long: `Run the OAuth authorisation of an http MCP server, or join the one that waits
already: the authorisation URL is printed (and opened in a browser, with $BROWSER
or xdg-open, unless --no-browser), and the command waits until the browser comes
back to tackle and the server is connected. The daemon runs one flow per server
for every session; any client's login, or the URL shown to any session, completes
it. Tokens are kept per server under the state directory (mode 0600), refreshed
before they expire and reused after a restart; tackle mcp logout forgets them.`,
		Example: `  tackle mcp login github
  tackle mcp login linear --no-browser   # print the URL only (a remote machine)`,
		Args: cobra.ExactArgs(1),
		RunE: cmdutil.Run(func(cmd *cobra.Command, args []string) error {
			return a.WithSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				stream, err := c.McpAuth().McpLogin(ctx, &tacklev1.McpLoginRequest{SessionId: sid, Name: args[0], Force: force})
				if err != nil {
					return loginError(ctx, args[0], err)
				}
				for {
					resp, err := stream.Recv()
					if errors.Is(err, io.EOF) {
						return nil
					}
					if err != nil {
						return loginError(ctx, args[0], err)
					}
					if asJSON {
						out := map[string]any{"state": resp.GetState()}
						if resp.GetUrl() != "" {
							out["url"] = resp.GetUrl()
						}
						if resp.GetServer() != nil {
							out["server"] = mcpServerToJSON(resp.GetServer())
						}
						if err := a.PrintJSONLine(out); err != nil {
							return err
						}
					}
					switch resp.GetState() {
					case "required":
						if !asJSON {
							fmt.Fprintf(a.Stdout, "Open this URL to authorise tackle with MCP server %q:\n  %s\n", args[0], resp.GetUrl())
						}
						if !noBrowser {
							openBrowser(a, resp.GetUrl(), asJSON)
						}
						if !wait {
							return nil
						}
						if !asJSON {
							fmt.Fprintln(a.Stderr, "waiting for the browser to come back to tackle (Ctrl-C stops waiting; the flow stays open in the daemon)")
						}
					default:
						if !asJSON {
							s := resp.GetServer()
							switch resp.GetState() {
							case "already-authorized":
								fmt.Fprintf(a.Stdout, "%s: already authorised (%s, %d tools); --force authorises again\n", args[0], s.GetState(), s.GetTools())
							case "not-required":
								fmt.Fprintf(a.Stdout, "%s: connected without authorisation (the server did not ask for it)\n", args[0])
							default:
								fmt.Fprintf(a.Stdout, "%s: authorised (%s, %d tools)\n", args[0], s.GetState(), s.GetTools())
							}
						}
					}
				}
			})
		}),
	}
	sf.Register(cmd)
	cmd.Flags().BoolVar(&noBrowser, "no-browser", false, "print the URL, do not open a browser")
	cmd.Flags().BoolVar(&wait, "wait", true, "wait until the authorisation completes (--wait=false: print the URL and return)")
	cmd.Flags().BoolVar(&force, "force", false, "forget the server's token and authorise again")
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per step: {state, url} then {state, server}")
	return cmd
}

// loginError is the error of authorising server name. Once ctx has ended
// (Ctrl-C, a signal) it says the login was interrupted, once: gRPC's own
// words for it are "context canceled: context canceled".
func loginError(ctx context.Context, name string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("login of MCP server %q interrupted (an authorisation waiting for the browser stays open in the daemon: `tackle mcp login %s` waits for it again)", name, name)
	}
	return fmt.Errorf("authorising MCP server %q: %w", name, client.Err(err))
}

func mcpLogoutCommand(a *cmdutil.App) *cobra.Command {
	var sf cmdutil.SessionFlags
	cmd := &cobra.Command{
		Use:   "logout NAME",
		Short: "Forget a remote MCP server's OAuth tokens (the server asks for authorisation again)",
		Args:  cobra.ExactArgs(1),
		RunE: cmdutil.Run(func(cmd *cobra.Command, args []string) error {
			return a.WithSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				resp, err := c.McpAuth().McpLogout(ctx, &tacklev1.McpLogoutRequest{SessionId: sid, Name: args[0]})
				if err != nil {
					return fmt.Errorf("logging out of MCP server %q: %w", args[0], client.Err(err))
				}
				if resp.GetRemoved() == "" {
					fmt.Fprintf(a.Stdout, "%s: tackle held no token\n", args[0])
				} else {
					fmt.Fprintf(a.Stdout, "%s: token removed (%s)\n", args[0], resp.GetRemoved())
				}
				if s := resp.GetServer(); s != nil {
					fmt.Fprintf(a.Stdout, "%s: %s\n", s.GetName(), s.GetState())
				}
				return nil
			})
		}),
	}
	sf.Register(cmd)
	return cmd
}

// openBrowser opens url with $BROWSER, else xdg-open where a display is;
// it says so on stderr, or why not (the URL is printed either way).
func openBrowser(a *cmdutil.App, url string, quiet bool) {
	name := a.Getenv("BROWSER")
	if name == "" {
		if a.Getenv("DISPLAY") == "" && a.Getenv("WAYLAND_DISPLAY") == "" {
			if !quiet {
				fmt.Fprintln(a.Stderr, "(no display: open the URL on a machine with a browser)")
			}
			return
		}
		name = "xdg-open"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		if !quiet {
			fmt.Fprintf(a.Stderr, "(could not open a browser: %v)\n", err)
		}
		return
	}
	cmd := exec.Command(path, url)
	cmd.Env = a.Environ
	if err := cmd.Start(); err != nil {
		if !quiet {
			fmt.Fprintf(a.Stderr, "(could not open a browser: %v)\n", err)
		}
		return
	}
	go func() { _ = cmd.Wait() }()
	if !quiet {
		fmt.Fprintln(a.Stderr, "(opened in your browser)")
	}
}
