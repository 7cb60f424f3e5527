package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"reconcile/ledgerdb/internal/driver"
)

// IndexesDefer implements ledgerdb.Store: the indexes a CREATE INDEX made
// that enforce nothing (not the primary key's, nor a unique one), their
// definitions as the schema keeps them. Hand-written: DDL from the schema.
func (s *Store) IndexesDefer(ctx context.Context, bytes int64) (bool, error) {
	if bytes <= 0 {
		return false, nil
	}
	deferred := false
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var (
			rows  int64
			ahead bool
		)
		if err := tx.QueryRowContext(ctx, `SELECT (SELECT coalesce(sum(evidence_count), 0) FROM source), EXISTS (SELECT 1 FROM deferred_index)`).
			Scan(&rows, &ahead); err != nil {
			return err
		}
		if ahead || !driver.BuildIndexesAfter(rows, bytes) {
			return nil
		}
		names, err := texts(ctx, tx, `INSERT INTO deferred_index (name, definition, deferred_at)
SELECT name, sql, ? FROM sqlite_schema s WHERE type = 'index' AND tbl_name = 'evidence' AND sql IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM pragma_index_list('evidence') l WHERE l.name = s.name AND l."unique") RETURNING name`, ts(s.now()))
		if err != nil {
			return err
		}
		for _, name := range names {
			if _, err := tx.ExecContext(ctx, `DROP INDEX `+quote(name)); err != nil {
				return err
			}
		}
		deferred = len(names) > 0
		return nil
	})
	return deferred, err
}

// IndexesBuild implements ledgerdb.Store, on a connection of its own
// (builds), so that a run reads and matches on db meanwhile, and one index
// a transaction, so that the run's writes wait for one index at a time
// (buildTx). It takes the write lock only when there is something to
// build: every run asks.
func (s *Store) IndexesBuild(ctx context.Context) ([]string, error) {
	for {
		var pending bool
		if err := s.builds.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM deferred_index)`).Scan(&pending); err != nil || !pending {
			return nil, err
		}
		if err := s.buildTx(ctx, func(tx *sql.Tx) error {
			var name, def string
			err := tx.QueryRowContext(ctx, `SELECT name, definition FROM deferred_index ORDER BY name LIMIT 1`).Scan(&name, &def)
			if errors.Is(err, sql.ErrNoRows) { // another process built the last one meanwhile
				return nil
			}
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, def); err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `DELETE FROM deferred_index WHERE name = ?`, name)
			return err
		}); err != nil {
			return nil, err
		}
	}
}

// buildTx runs fn in a write transaction on builds, during which this
// process's other writers wait for it however long it takes (begin): the
// write wait is for other processes.
func (s *Store) buildTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.inTxOn(ctx, s.builds, func(tx *sql.Tx) error {
		s.building.Lock()
		defer s.building.Unlock()
		return fn(tx)
	})
}

// texts runs a query of one text column and returns its values.
func texts(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// quote quotes an identifier.
func quote(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }
