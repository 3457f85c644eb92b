// Command fakemodelcmd serves internal/fakemodel's fake Anthropic API as a
// process, for tests outside Go (the Neovim plugin's): it answers from a
// script of turns and prints its base URL (ANTHROPIC_BASE_URL) on stdout.
//
//	fakemodelcmd -script turns.json [-api-key KEY]
//
// turns.json is a JSON array of fakemodel.Turn, e.g.
// [{"Blocks":[{"Type":"text","Text":"Hi."}],"Chunk":3,"Delay":20000000}].
// It serves until stdin closes or it gets SIGTERM/SIGINT, then exits 0;
// requests the script did not plan for are reported on stderr (exit 1).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/tackle-agent/tackle/internal/fakemodel"
)

func main() {
	script := flag.String("script", "", "JSON file of the turns to answer with, in order")
	apiKey := flag.String("api-key", "", "the key requests must carry (empty: any)")
	flag.Parse()
	b, err := os.ReadFile(*script)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakemodelcmd: reading the script:", err)
		os.Exit(2)
	}
	var turns []fakemodel.Turn
	if err := json.Unmarshal(b, &turns); err != nil {
		fmt.Fprintln(os.Stderr, "fakemodelcmd: decoding the script:", err)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakemodelcmd:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() { io.Copy(io.Discard, os.Stdin); stop() }()
	s := fakemodel.New(&fakemodel.Options{APIKey: *apiKey, Script: fakemodel.Turns(turns...)})
	fmt.Println("http://" + ln.Addr().String())
	if err := s.Run(ctx, ln); err != nil {
		fmt.Fprintln(os.Stderr, "fakemodelcmd:", err)
		os.Exit(1)
	}
	if u := s.Unplanned(); len(u) > 0 {
		for _, m := range u {
			fmt.Fprintln(os.Stderr, "fakemodelcmd:", m)
		}
		os.Exit(1)
	}
}
