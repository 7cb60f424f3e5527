package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"reconcile/stripeapi/sandbox"
)

func (a *app) sandboxCommand() *cobra.Command {
	var (
		addr   string
		keyTTL time.Duration
	)
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Serve the Stripe-subset sandbox: payments, refunds, search, idempotency and faults",
		Long: `sandbox serves a stateful stand-in for the part of Stripe's API that reconcile and a
payment application use: POST /v1/payment_intents, GET /v1/payment_intents/{id} and /search,
POST and GET /v1/refunds, with Stripe's idempotency semantics (a stored answer replayed with
Idempotent-Replayed: true, 400 idempotency_error for a key reused with other parameters, 409
while a key is in flight, keys forgotten after --key-ttl). Any bearer key is accepted.

Faults are armed with POST /_sandbox/faults and a JSON body such as
  {"op": "refund", "kind": "error_500", "times": 2}
(kinds: latency, error_500, rate_limit, drop_after, hang, unavailable; "delay": "3s" for latency
and hang) and cleared with DELETE /_sandbox/faults; POST /_sandbox/forget-keys forgets every key.
What the sandbox did is exported as a Stripe itemized report at GET /_sandbox/export/itemized and
as a webhook dump at GET /_sandbox/export/events, for a second round of reconciliation. The
sandbox is Stripe's test mode: its events say livemode false, so a run reads them with
--livemode=false.

Example:
  reconcile sandbox --addr 127.0.0.1:12111 &
  RECONCILE_STRIPE_URL=http://127.0.0.1:12111 STRIPE_API_KEY=sk_test_x reconcile run --apply report.csv`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if keyTTL <= 0 {
				return usageError("--key-ttl %s: want a positive duration such as 24h", keyTTL)
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return usageError("--addr %s: %v", addr, err)
			}
			srv := &http.Server{Handler: sandbox.New(sandbox.Options{KeyTTL: keyTTL}), ReadHeaderTimeout: 10 * time.Second}
			a.log.Info("sandbox listening", "addr", "http://"+ln.Addr().String())
			ctx := cmd.Context()
			go func() {
				<-ctx.Done()
				shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				srv.Shutdown(shut)
			}()
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:12111", "address to listen on")
	cmd.Flags().DurationVar(&keyTTL, "key-ttl", 24*time.Hour, "how long idempotency keys are remembered")
	return cmd
}
