// Command picasso trains click-through-rate models whose embedding tables do
// not fit in accelerator memory, keeping popular rows on the device.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/picasso-ctr/picasso/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
