package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func (a *app) migrateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Create or upgrade the ledger's schema",
		Long: `migrate applies the embedded, numbered migrations that the ledger has not had yet, in one
transaction, and records them. Running it again changes nothing. Two processes migrating at
once take turns (an advisory lock on PostgreSQL, the write lock on SQLite).

Example:
  reconcile migrate --ledger postgres://reconcile@db.internal:5432/payments`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			store, loc, err := openForMigrate(ctx, a.ledgerURL)
			if err != nil {
				return err
			}
			defer store.Close()
			applied, err := store.SchemaMigrate(ctx)
			if err != nil {
				return err
			}
			if len(applied) == 0 {
				fmt.Fprintf(a.stdout, "ledger %s is up to date\n", where(loc))
				return nil
			}
			for _, m := range applied {
				fmt.Fprintf(a.stdout, "applied %03d_%s\n", m.Version, m.Name)
			}
			fmt.Fprintf(a.stdout, "ledger %s is ready\n", where(loc))
			return nil
		},
	}
	a.addLedgerFlag(cmd)
	return cmd
}
