package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/internal/driver"
)

const claimCols = `key, owner, fence, state, lease_until, result, error, claimed_at, settled_at`

func scanClaim(row pgx.Row) (*reconcile.Claim, error) {
	var (
		c            reconcile.Claim
		state        string
		until, settl *time.Time
		errText      *string
		result       []byte
	)
	if err := row.Scan(&c.Key, &c.Owner, &c.Fence, &state, &until, &result, &errText, &c.ClaimedAt, &settl); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, reconcile.ErrNotFound
		}
		return nil, err
	}
	c.State = reconcile.ClaimState(state)
	if until != nil {
		c.LeaseUntil = until.UTC()
	}
	if settl != nil {
		c.SettledAt = settl.UTC()
	}
	if errText != nil {
		c.Error = *errText
	}
	c.Result = result
	c.ClaimedAt = c.ClaimedAt.UTC()
	return &c, nil
}

// leaseUntil is the deadline of a lease of length ttl taken at now, or NULL
// for a lease with no deadline.
func leaseUntil(now time.Time, ttl time.Duration) *time.Time {
	if ttl <= 0 {
		return nil
	}
	t := now.Add(ttl)
	return &t
}

// ClaimAcquire implements ledgerdb.Store. The decision is one conditional upsert:
// insert the first claim, or take over a failed claim or an expired lease
// with fence + 1. When it changes nothing the row is read to say why; if the
// row became claimable in between (its holder failed it), the upsert runs
// again.
func (s *Store) ClaimAcquire(ctx context.Context, p *ledgerdb.ClaimParams) (*reconcile.ClaimResult, error) {
	for range 10 {
		var res *reconcile.ClaimResult
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			now := s.now()
			c, err := scanClaim(tx.QueryRow(ctx, `
				INSERT INTO claim (key, owner, fence, state, lease_until, claimed_at)
				VALUES ($1, $2, 1, 'held', $3, $4)
				ON CONFLICT (key) DO UPDATE
				SET owner = EXCLUDED.owner, fence = claim.fence + 1, state = 'held',
				    lease_until = EXCLUDED.lease_until, claimed_at = EXCLUDED.claimed_at,
				    result = NULL, error = NULL, settled_at = NULL
				WHERE claim.state = 'failed'
				   OR (claim.state = 'held' AND claim.lease_until IS NOT NULL AND claim.lease_until <= EXCLUDED.claimed_at)
				RETURNING `+claimCols, p.Key, p.Owner, leaseUntil(now, p.TTL), now))
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
			cur, err := scanClaim(tx.QueryRow(ctx, `SELECT `+claimCols+` FROM claim WHERE key = $1`, p.Key))
			if err != nil {
				return err
			}
			res = driver.Unclaimable(cur, now)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("claim %s: %w", p.Key, err)
		}
		if res != nil {
			return res, nil
		}
	}
	return nil, fmt.Errorf("claim %s: the claim kept changing under us; try again", p.Key)
}

// ClaimRenew implements ledgerdb.Store.
func (s *Store) ClaimRenew(ctx context.Context, p *ledgerdb.RenewParams) (*reconcile.WriteResult, error) {
	c, err := scanClaim(s.pool.QueryRow(ctx, `
		UPDATE claim SET lease_until = $3
		WHERE key = $1 AND fence = $2 AND state = 'held'
		RETURNING `+claimCols, p.Key, p.Fence, leaseUntil(s.now(), p.TTL)))
	if err == nil {
		return &reconcile.WriteResult{Outcome: reconcile.WriteOutcomeWritten, Claim: *c}, nil
	}
	if !errors.Is(err, reconcile.ErrNotFound) {
		return nil, fmt.Errorf("renew %s: %w", p.Key, err)
	}
	cur, err := s.ClaimGet(ctx, p.Key)
	if err != nil {
		return nil, fmt.Errorf("renew %s: %w", p.Key, err)
	}
	return driver.Unwritten(cur, p.Fence)
}

// ClaimSettle implements ledgerdb.Store. The write is conditional on the fence
// and on the claim being held; when it changes nothing, the same
// transaction reads the row under lock to say why and, for a superseded
// success, records the orphan.
func (s *Store) ClaimSettle(ctx context.Context, p *ledgerdb.SettleParams) (*reconcile.WriteResult, error) {
	state, result, errText := driver.SettleValues(p)
	var res *reconcile.WriteResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		now := s.now()
		c, err := scanClaim(tx.QueryRow(ctx, `
			UPDATE claim SET state = $3, result = $4, error = $5, settled_at = $6, lease_until = NULL
			WHERE key = $1 AND fence = $2 AND state = 'held'
			RETURNING `+claimCols, p.Key, p.Fence, state, result, errText, now))
		if err == nil {
			res = &reconcile.WriteResult{Outcome: reconcile.WriteOutcomeWritten, Claim: *c}
			if p.Success && p.Confirm != nil {
				_, err = tx.Exec(ctx, `UPDATE effect SET status = 'confirmed', external_id = $2, response = $3, confirmed_at = $4
					WHERE key = $1 AND status = 'attempted'`, p.Confirm.Key, p.Confirm.ExternalID, nullJSON(p.Confirm.Response), now)
			}
			return err
		}
		if !errors.Is(err, reconcile.ErrNotFound) {
			return err
		}
		cur, err := scanClaim(tx.QueryRow(ctx, `SELECT `+claimCols+` FROM claim WHERE key = $1 FOR UPDATE`, p.Key))
		if err != nil {
			return err
		}
		if res, err = driver.Unwritten(cur, p.Fence); err != nil {
			return err
		}
		if !p.Success {
			return nil
		}
		o := driver.NewOrphan(cur, p, now)
		if err := tx.QueryRow(ctx, `
			INSERT INTO orphan (key, stale_fence, stale_owner, stale_result, current_fence, current_owner, current_state, current_result, recorded_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`,
			o.Key, o.StaleFence, o.StaleOwner, nullJSON(o.StaleResult), o.CurrentFence, o.CurrentOwner, string(o.CurrentState),
			nullJSON(o.CurrentResult), o.RecordedAt).Scan(&o.ID); err != nil {
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
	return scanClaim(s.pool.QueryRow(ctx, `SELECT `+claimCols+` FROM claim WHERE key = $1`, key))
}

// ClaimGetMany implements ledgerdb.Store.
func (s *Store) ClaimGetMany(ctx context.Context, keys []string) (map[string]*reconcile.Claim, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+claimCols+` FROM claim WHERE key = ANY($1)`, nonNil(keys))
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
	rows, err := s.pool.Query(ctx, `
		SELECT id, key, stale_fence, stale_owner, stale_result, current_fence, current_owner, current_state, current_result, recorded_at
		FROM orphan ORDER BY id`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (reconcile.Orphan, error) {
		var (
			o     reconcile.Orphan
			state string
		)
		err := r.Scan(&o.ID, &o.Key, &o.StaleFence, &o.StaleOwner, &o.StaleResult, &o.CurrentFence, &o.CurrentOwner,
			&state, &o.CurrentResult, &o.RecordedAt)
		o.CurrentState = reconcile.ClaimState(state)
		o.RecordedAt = o.RecordedAt.UTC()
		return o, err
	})
}

// nullJSON passes a JSON document as text, and an empty one as NULL.
func nullJSON(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}
