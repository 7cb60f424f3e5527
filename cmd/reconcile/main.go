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

func main() { os.Exit(runMain()) }

// runMain runs the command line of this process; SIGINT and SIGTERM cancel
// it, so that a run finishes or rolls back its current step and exits.
func runMain() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
}
