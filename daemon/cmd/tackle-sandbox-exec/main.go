// Command tackle-sandbox-exec is the server tackled starts inside a Bash
// sandbox, once per session and policy, to start the sandboxed commands
// there (package sandboxexec). It is small on purpose (under 4 MB, none of
// tackled's libraries): it starts in a few milliseconds, once per session
// and policy, and holds little memory for as long as it lives.
package main

import (
	"os"

	"github.com/tackle-agent/tackle/daemon/sandbox/sandboxexec"
)

func main() { os.Exit(sandboxexec.Serve(os.Args[1:])) }
