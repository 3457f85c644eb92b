// Command tackle is the command-line client of tackled. See package cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/tackle-agent/tackle/clients/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first interrupt, a second one kills tackle at once.
		<-ctx.Done()
		stop()
	}()
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Environ())
	stop()
	os.Exit(code)
}
