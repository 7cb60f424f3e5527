package postgres

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"reconcile/ledgerdb/internal/driver"
)

// IndexesDefer implements ledgerdb.Store: every index of evidence but
// those that enforce something (unique, or a constraint's) and BRIN ones,
// which cost next to nothing to keep up (a row added to pages not yet
// summarized changes nothing) and a scan of the table to build (0.47 s
// for a first night's 1.38M records). It takes the table's lock
// without waiting: beside a reader, or another ingest, the indexes are
// kept up as before. Hand-written: DDL from the catalog.
func (s *Store) IndexesDefer(ctx context.Context, bytes int64) (bool, error) {
	if bytes <= 0 {
		return false, nil
	}
	deferred := false
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var (
			rows         int64
			owner, ahead bool
		)
		if err := tx.QueryRow(ctx, `SELECT (SELECT coalesce(sum(evidence_count), 0) FROM source),
  pg_has_role((SELECT relowner FROM pg_class WHERE oid = 'evidence'::regclass), 'USAGE'),
  EXISTS (SELECT 1 FROM deferred_index)`).Scan(&rows, &owner, &ahead); err != nil {
			return err
		}
		if !owner || ahead || !driver.BuildIndexesAfter(rows, bytes) {
			return nil
		}
		if _, err := tx.Exec(ctx, `LOCK TABLE evidence IN ACCESS EXCLUSIVE MODE NOWAIT`); err != nil {
			return err
		}
		var names []string
		if err := tx.QueryRow(ctx, `WITH d AS (
  INSERT INTO deferred_index (name, definition, deferred_at)
  SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid), $1 FROM pg_index i WHERE indrelid = 'evidence'::regclass AND NOT indisunique
    AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
    AND (SELECT a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.oid = i.indexrelid) <> 'brin'
  RETURNING name)
SELECT coalesce(array_agg(name ORDER BY name), '{}') FROM d`, s.now()).Scan(&names); err != nil {
			return err
		}
		if len(names) == 0 {
			return nil
		}
		_, err := tx.Exec(ctx, `DROP INDEX `+strings.Join(names, ", "))
		deferred = err == nil
		return err
	})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "55P03" { // lock_not_available: the table is in use
		return false, nil
	}
	return deferred, err
}

// IndexesBuild implements ledgerdb.Store. The deferred rows are locked
// while their indexes are built: a second process that builds at the
// same time waits, and then finds none.
func (s *Store) IndexesBuild(ctx context.Context) ([]string, error) {
	var (
		pending []string
		built   bool
	)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var owner bool
		if err := tx.QueryRow(ctx, `SELECT pg_has_role((SELECT relowner FROM pg_class WHERE oid = 'evidence'::regclass), 'USAGE')`).Scan(&owner); err != nil {
			return err
		}
		if !owner { // another role may read them, and not lock them
			return tx.QueryRow(ctx, `SELECT coalesce(array_agg(name ORDER BY name), '{}') FROM deferred_index`).Scan(&pending)
		}
		var names, defs []string
		if err := tx.QueryRow(ctx, `SELECT coalesce(array_agg(name ORDER BY name), '{}'), coalesce(array_agg(definition ORDER BY name), '{}')
FROM (SELECT name, definition FROM deferred_index FOR UPDATE) d`).Scan(&names, &defs); err != nil {
			return err
		}
		if len(names) == 0 {
			return nil
		}
		// One process a build: a run builds them beside its partitions, whose
		// matching and writes need both processors. A first night of 1M,
		// three runs each: 18.6 to 19.9 s against 20.1 to 22.1 s, the
		// partitions 8.2 to 9.0 s against 10.0 to 10.3 s, the builds taking
		// as long (6.3 to 6.9 s against 6.1 to 6.5 s); alone, the five
		// builds of that night take 4.6 to 5.0 s against 4.0 to 4.1 s.
		if _, err := tx.Exec(ctx, `SET LOCAL maintenance_work_mem = '256MB'; SET LOCAL max_parallel_maintenance_workers = 0`); err != nil {
			return err
		}
		for _, def := range defs {
			if _, err := tx.Exec(ctx, def); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `DELETE FROM deferred_index WHERE name = ANY($1)`, names)
		built = err == nil
		return err
	})
	if built {
		// The pages of the large ingest are summarized now, beside its run,
		// not by the next run before it reads (0.22 s after a 1M night).
		_, err = s.pool.Exec(ctx, matchSummarize)
	}
	return pending, err
}
