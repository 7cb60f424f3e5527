// Command reconcile proves that every external side effect recorded in the
// effect ledger happened exactly once at the provider, and repairs it when it
// did not. Run `reconcile help` for the commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
