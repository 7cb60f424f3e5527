package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/internal/driver"
)

const claimCols = `key, owner, fence, state, lease_until, result, error, claimed_at, settled_at`

func scanClaim(row scanner) (*reconcile.Claim, error) {
	var (
		c                      reconcile.Claim
		state                  string
		until, result, errText sql.NullString
		claimed, settled       sql.NullString
	)
	if err := row.Scan(&c.Key, &c.Owner, &c.Fence, &state, &until, &result, &errText, &claimed, &settled); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, reconcile.ErrNotFound
		}
		return nil, err
	}
	c.State = reconcile.ClaimState(state)
	c.Result = rawJSON(result)
	c.Error = errText.String
	var err error
	if c.LeaseUntil, err = parseTS(until); err != nil {
		return nil, err
	}
	if c.ClaimedAt, err = parseTS(claimed); err != nil {
		return nil, err
	}
	if c.SettledAt, err = parseTS(settled); err != nil {
		return nil, err
	}
	return &c, nil
}

// leaseUntil is the deadline of a lease of length ttl taken at now, or NULL
// for a lease with no deadline.
func leaseUntil(now time.Time, ttl time.Duration) any {
	if ttl <= 0 {
		return nil
	}
	return ts(now.Add(ttl))
}

// ClaimAcquire implements ledgerdb.Store: one conditional upsert that inserts the
// first claim, or takes over a failed claim or an expired lease with
// fence + 1. The write transaction holds SQLite's write lock, so reading the
// row to say why nothing changed sees what the upsert saw.
func (s *Store) ClaimAcquire(ctx context.Context, p *ledgerdb.ClaimParams) (*reconcile.ClaimResult, error) {
	var res *reconcile.ClaimResult
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		now := s.now()
		c, err := scanClaim(tx.QueryRowContext(ctx, `
			INSERT INTO claim (key, owner, fence, state, lease_until, claimed_at)
			VALUES (?, ?, 1, 'held', ?, ?)
			ON CONFLICT (key) DO UPDATE
			SET owner = excluded.owner, fence = claim.fence + 1, state = 'held',
			    lease_until = excluded.lease_until, claimed_at = excluded.claimed_at,
			    result = NULL, error = NULL, settled_at = NULL
			WHERE claim.state = 'failed'
			   OR (claim.state = 'held' AND claim.lease_until IS NOT NULL AND claim.lease_until <= excluded.claimed_at)
			RETURNING `+claimCols, p.Key, p.Owner, leaseUntil(now, p.TTL), ts(now)))
		if err == nil {
			res = &reconcile.ClaimResult{Outcome: reconcile.ClaimOutcomeClaimed, Claim: *c}
			if p.Effect != nil {
				_, err = recordAttempt(ctx, tx, p.Effect, now)
			}
			return err
		}
		if !errors.Is(err, reconcile.ErrNotFound) {
			return err
		}
		if c, err = scanClaim(tx.QueryRowContext(ctx, `SELECT `+claimCols+` FROM claim WHERE key = ?`, p.Key)); err != nil {
			return err
		}
		if res = driver.Unclaimable(c, now); res == nil {
			return fmt.Errorf("claim %s is %s and was not taken: this is a bug", p.Key, c.State)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim %s: %w", p.Key, err)
	}
	return res, nil
}

// ClaimRenew implements ledgerdb.Store.
func (s *Store) ClaimRenew(ctx context.Context, p *ledgerdb.RenewParams) (*reconcile.WriteResult, error) {
	var res *reconcile.WriteResult
	err := s.inTxOn(ctx, s.renewals, func(tx *sql.Tx) error {
		c, err := scanClaim(tx.QueryRowContext(ctx, `
			UPDATE claim SET lease_until = ?
			WHERE key = ? AND fence = ? AND state = 'held'
			RETURNING `+claimCols, leaseUntil(s.now(), p.TTL), p.Key, p.Fence))
		if err == nil {
			res = &reconcile.WriteResult{Outcome: reconcile.WriteOutcomeWritten, Claim: *c}
			return nil
		}
		if !errors.Is(err, reconcile.ErrNotFound) {
			return err
		}
		if c, err = scanClaim(tx.QueryRowContext(ctx, `SELECT `+claimCols+` FROM claim WHERE key = ?`, p.Key)); err != nil {
			return err
		}
		res, err = driver.Unwritten(c, p.Fence)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("renew %s: %w", p.Key, err)
	}
	return res, nil
}

// ClaimSettle implements ledgerdb.Store: a write conditional on the fence and on
// the claim being held; when it changes nothing, the same transaction says
// why and, for a superseded success, records the orphan.
func (s *Store) ClaimSettle(ctx context.Context, p *ledgerdb.SettleParams) (*reconcile.WriteResult, error) {
	state, result, errText := driver.SettleValues(p)
	var res *reconcile.WriteResult
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		now := s.now()
		c, err := scanClaim(tx.QueryRowContext(ctx, `
			UPDATE claim SET state = ?, result = ?, error = ?, settled_at = ?, lease_until = NULL
			WHERE key = ? AND fence = ? AND state = 'held'
			RETURNING `+claimCols, state, result, errText, ts(now), p.Key, p.Fence))
		if err == nil {
			res = &reconcile.WriteResult{Outcome: reconcile.WriteOutcomeWritten, Claim: *c}
			if p.Success && p.Confirm != nil {
				_, err = tx.ExecContext(ctx, `UPDATE effect SET status = 'confirmed', external_id = ?, response = ?, confirmed_at = ?
					WHERE key = ? AND status = 'attempted'`, p.Confirm.ExternalID, nullJSON(p.Confirm.Response), ts(now), p.Confirm.Key)
			}
			return err
		}
		if !errors.Is(err, reconcile.ErrNotFound) {
			return err
		}
		if c, err = scanClaim(tx.QueryRowContext(ctx, `SELECT `+claimCols+` FROM claim WHERE key = ?`, p.Key)); err != nil {
			return err
		}
		if res, err = driver.Unwritten(c, p.Fence); err != nil || !p.Success {
			return err
		}
		o := driver.NewOrphan(c, p, now)
		if err := tx.QueryRowContext(ctx, `
			INSERT INTO orphan (key, stale_fence, stale_owner, stale_result, current_fence, current_owner, current_state, current_result, recorded_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			o.Key, o.StaleFence, o.StaleOwner, nullJSON(o.StaleResult), o.CurrentFence, o.CurrentOwner, string(o.CurrentState),
			nullJSON(o.CurrentResult), ts(o.RecordedAt)).Scan(&o.ID); err != nil {
			return err
		}
		res.Orphan = o
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("settle %s: %w", p.Key, err)
	}
	return res, nil
}

// ClaimGet implements ledgerdb.Store.
func (s *Store) ClaimGet(ctx context.Context, key string) (*reconcile.Claim, error) {
	return scanClaim(s.db.QueryRowContext(ctx, `SELECT `+claimCols+` FROM claim WHERE key = ?`, key))
}

// ClaimGetMany implements ledgerdb.Store.
func (s *Store) ClaimGetMany(ctx context.Context, keys []string) (map[string]*reconcile.Claim, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+claimCols+` FROM claim WHERE key IN (SELECT value FROM json_each(?))`, jsonList(keys))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]*reconcile.Claim{}
	for rows.Next() {
		c, err := scanClaim(rows)
		if err != nil {
			return nil, err
		}
		out[c.Key] = c
	}
	return out, rows.Err()
}

// OrphanList implements ledgerdb.Store.
func (s *Store) OrphanList(ctx context.Context) ([]reconcile.Orphan, error) {
	rows, err := s.db.QueryContext(ctx, `
		SELECT id, key, stale_fence, stale_owner, stale_result, current_fence, current_owner, current_state, current_result, recorded_at
		FROM orphan ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []reconcile.Orphan
	for rows.Next() {
		var (
			o              reconcile.Orphan
			state          string
			stale, cur, at sql.NullString
		)
		if err := rows.Scan(&o.ID, &o.Key, &o.StaleFence, &o.StaleOwner, &stale, &o.CurrentFence, &o.CurrentOwner, &state, &cur, &at); err != nil {
			return nil, err
		}
		o.CurrentState = reconcile.ClaimState(state)
		o.StaleResult, o.CurrentResult = rawJSON(stale), rawJSON(cur)
		if o.RecordedAt, err = parseTS(at); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}
