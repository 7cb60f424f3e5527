package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"reconcile"
	"reconcile/fixtures"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/sqlite"
)

func (a *app) demoCommand() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Show the ledger's guarantees on an embedded SQLite ledger, in a folder of its own",
		Long: `demo creates a fresh SQLite ledger in --dir and walks through what the ledger guarantees:
an effect recorded before its call and confirmed after it, a retry under the same key, a key
reused with a moved price (refused), and an action whose owner overran its lease (fenced off,
its late refund reported as an orphan). A simulated clock moves the leases; nothing sleeps.

It then loads a generated day of 500 charges into the ledger, writes the provider's settlement
report about them (with duplicates, missing and mismatched charges, unexpected money and
refunds), and runs the reconciliation on it, which prints what it found and the repairs it plans.

Example:
  reconcile demo --dir /tmp/reconcile-demo`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return a.demo(cmd, dir) },
	}
	cmd.Flags().StringVar(&dir, "dir", "reconcile-demo", "folder for the demo's files (its ledger is replaced)")
	return cmd
}

func (a *app) demo(cmd *cobra.Command, dir string) error {
	ctx := cmd.Context()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, "ledger.db")
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	now := time.Date(2026, 11, 2, 3, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	store, err := sqlite.Open(ctx, path, ledgerdb.Config{Now: clock})
	if err != nil {
		return err
	}
	defer store.Close()
	applied, err := store.Migrate(ctx)
	if err != nil {
		return err
	}
	out := a.stdout
	step := func(format string, args ...any) { fmt.Fprintf(out, "  "+format+"\n", args...) }
	fmt.Fprintf(out, "ledger sqlite:%s created (%d migrations applied)\n\n", path, len(applied))

	fmt.Fprintln(out, "1. The application records its intent before calling the provider, and confirms after.")
	key := reconcile.EffectKey("run_8f3c1a", "charge", 0)
	req := json.RawMessage(`{"amount": 1420000, "currency": "eur", "customer": "acct_5512", "metadata": {"effect_key": "run_8f3c1a:charge:0"}}`)
	rec, err := store.RecordAttempt(ctx, &ledgerdb.RecordParams{Key: key, RunID: "run_8f3c1a", Step: "charge", Provider: "stripe", Request: req})
	if err != nil {
		return err
	}
	step("%-22s %s (%s)", key, rec.Effect.Status, "written before the call")
	eff, err := store.Confirm(ctx, &ledgerdb.ConfirmParams{Key: key, ExternalID: "pi_3PqRdemo", Response: json.RawMessage(`{"id":"pi_3PqRdemo","status":"succeeded"}`)})
	if err != nil {
		return err
	}
	step("%-22s %s as %s", key, eff.Status, eff.ExternalID)

	fmt.Fprintln(out, "\n2. A resumed run retries under the same key.")
	reordered := json.RawMessage(`{"metadata": {"effect_key": "run_8f3c1a:charge:0"}, "customer": "acct_5512", "currency": "eur", "amount": 1420000}`)
	rec, err = store.RecordAttempt(ctx, &ledgerdb.RecordParams{Key: key, RunID: "run_8f3c1a", Step: "charge", Provider: "stripe", Request: reordered})
	if err != nil {
		return err
	}
	step("same request, fields in another order: existing row returned (created: %v, status %s)", rec.Created, rec.Effect.Status)
	moved := json.RawMessage(`{"amount": 1450000, "currency": "eur", "customer": "acct_5512", "metadata": {"effect_key": "run_8f3c1a:charge:0"}}`)
	_, err = store.RecordAttempt(ctx, &ledgerdb.RecordParams{Key: key, RunID: "run_8f3c1a", Step: "charge", Provider: "stripe", Request: moved})
	if !errors.Is(err, reconcile.ErrKeyReused) {
		return fmt.Errorf("a moved price was not refused: %v", err)
	}
	step("the price moved overnight (14,500.00 instead of 14,200.00): refused, a person reads it")

	fmt.Fprintln(out, "\n3. Two workers and one refund: a lease is not a fence.")
	action := key + ":compensate:ch_3PqRextra"
	lease := 2 * time.Minute
	claimA, err := store.Claim(ctx, &ledgerdb.ClaimParams{Key: action, Owner: "worker-a", TTL: lease})
	if err != nil {
		return err
	}
	step("worker-a claims the refund: %s, fence %d; its provider call hangs", claimA.Outcome, claimA.Claim.Fence)
	now = now.Add(lease)
	claimB, err := store.Claim(ctx, &ledgerdb.ClaimParams{Key: action, Owner: "worker-b", TTL: lease})
	if err != nil {
		return err
	}
	step("two minutes later worker-b claims it: %s, fence %d", claimB.Outcome, claimB.Claim.Fence)
	wb, err := store.Settle(ctx, &ledgerdb.SettleParams{Key: action, Fence: claimB.Claim.Fence, Owner: "worker-b", Success: true, Result: json.RawMessage(`{"refund":"re_B"}`)})
	if err != nil {
		return err
	}
	step("worker-b refunds re_B and settles with fence %d: %s", claimB.Claim.Fence, wb.Outcome)
	now = now.Add(40 * time.Second)
	late, err := store.Settle(ctx, &ledgerdb.SettleParams{Key: action, Fence: claimA.Claim.Fence, Owner: "worker-a", Success: false, Error: "provider timeout"})
	if err != nil {
		return err
	}
	step("worker-a's call times out; its failure with fence %d: %s (re_B survives)", claimA.Claim.Fence, late.Outcome)
	again, err := store.Claim(ctx, &ledgerdb.ClaimParams{Key: action, Owner: "worker-c", TTL: lease})
	if err != nil {
		return err
	}
	step("the next retry's claim: %s, so there is no second refund", again.Outcome)
	orphan, err := store.Settle(ctx, &ledgerdb.SettleParams{Key: action, Fence: claimA.Claim.Fence, Owner: "worker-a", Success: true, Result: json.RawMessage(`{"refund":"re_A"}`)})
	if err != nil {
		return err
	}
	if orphan.Orphan != nil {
		step("had worker-a's refund landed after all (re_A), it is %s and reported as orphan #%d beside %s",
			orphan.Outcome, orphan.Orphan.ID, orphan.Orphan.CurrentResult)
	}

	fmt.Fprintln(out, "\n4. A day of charges reconciled against the provider's settlement report.")
	world := fixtures.NewWorld(500, fixtures.DefaultRates, 1)
	if err := store.LoadEffects(ctx, world.Effects); err != nil {
		return err
	}
	report := filepath.Join(dir, "stripe-2026-11-01.itemized.csv")
	f, err := os.Create(report)
	if err != nil {
		return err
	}
	if err := world.WriteItemized(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	step("the application recorded %d effects; the provider's report has %d lines: %s", len(world.Effects), world.Lines(), report)
	fmt.Fprintf(out, "  reconcile run --ledger sqlite:%s --lag 3h %s\n\n", path, report)
	run := &app{stdout: out, stderr: a.stderr, log: a.log, ledgerURL: "sqlite:" + path}
	rf := &runFlags{lag: 3 * time.Hour}
	rf.in.stripeTZ = "UTC"
	err = run.run(ctx, rf, []string{report})
	if err != nil && !needsPersonOnly(err) {
		return err
	}
	fmt.Fprintf(out, "\nThe demo's files are in %s. The run above only planned its repairs: making them (--apply),\n", dir)
	fmt.Fprintln(out, "paging a person and the finance spreadsheet come in the next releases.")
	return nil
}
