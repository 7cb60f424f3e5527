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
	"reconcile/ledgerdb/sqlite/internal/dbsqlc"
)

// claimFromRow converts a claim row.
func claimFromRow(r dbsqlc.Claim) (*reconcile.Claim, error) {
	c := reconcile.Claim{
		Key:    r.Key,
		Owner:  r.Owner,
		Fence:  r.Fence,
		State:  reconcile.ClaimState(r.State),
		Result: rawJSON(r.Result),
		Error:  text(r.Error),
	}
	var err error
	if c.LeaseUntil, err = parseNullTS(r.LeaseUntil); err != nil {
		return nil, err
	}
	if c.ClaimedAt, err = parseTime(r.ClaimedAt); err != nil {
		return nil, err
	}
	if c.SettledAt, err = parseNullTS(r.SettledAt); err != nil {
		return nil, err
	}
	return &c, nil
}

// readClaim is the claim that a :one query read, or its error through
// interpretError.
func readClaim(r dbsqlc.Claim, err error) (*reconcile.Claim, error) {
	if err != nil {
		return nil, interpretError(err)
	}
	return claimFromRow(r)
}

// leaseUntil is the deadline of a lease of length ttl taken at now, or NULL
// for a lease with no deadline.
func leaseUntil(now time.Time, ttl time.Duration) *string {
	if ttl <= 0 {
		return nil
	}
	until := ts(now.Add(ttl))
	return &until
}

// ClaimAcquire implements ledgerdb.Store: one conditional upsert that inserts the
// first claim, or takes over a failed claim or an expired lease with
// fence + 1. The write transaction holds SQLite's write lock, so reading the
// row to say why nothing changed sees what the upsert saw.
func (s *Store) ClaimAcquire(ctx context.Context, p *ledgerdb.ClaimParams) (*reconcile.ClaimResult, error) {
	var res *reconcile.ClaimResult
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		if res, err = driver.Acquire(statements{ctx, dbsqlc.New(tx)}, p, s.now()); err == nil && res == nil {
			return fmt.Errorf("claim %s was not taken and is claimable: this is a bug", p.Key)
		}
		return err
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
		q := dbsqlc.New(tx)
		c, err := readClaim(q.ClaimRenewHeld(ctx, dbsqlc.ClaimRenewHeldParams{
			LeaseUntil: leaseUntil(s.now(), p.TTL),
			Key:        p.Key,
			Fence:      p.Fence,
		}))
		if err == nil {
			res = &reconcile.WriteResult{Outcome: reconcile.WriteOutcomeWritten, Claim: *c}
			return nil
		}
		if !errors.Is(err, reconcile.ErrNotFound) {
			return err
		}
		if c, err = readClaim(q.ClaimGet(ctx, p.Key)); err != nil {
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
	var res *reconcile.WriteResult
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		res, err = driver.Settle(statements{ctx, dbsqlc.New(tx)}, p, s.now())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("settle %s: %w", p.Key, err)
	}
	return res, nil
}

// ClaimGet implements ledgerdb.Store.
func (s *Store) ClaimGet(ctx context.Context, key string) (*reconcile.Claim, error) {
	return readClaim(s.q.ClaimGet(ctx, key))
}

// ClaimGetMany implements ledgerdb.Store.
func (s *Store) ClaimGetMany(ctx context.Context, keys []string) (map[string]*reconcile.Claim, error) {
	rows, err := s.q.ClaimGetMany(ctx, jsonList(keys))
	if err != nil {
		return nil, err
	}
	out := map[string]*reconcile.Claim{}
	for _, r := range rows {
		c, err := claimFromRow(r)
		if err != nil {
			return nil, err
		}
		out[c.Key] = c
	}
	return out, nil
}

// orphanFromRow converts an orphan row.
func orphanFromRow(r dbsqlc.Orphan) (reconcile.Orphan, error) {
	o := reconcile.Orphan{
		ID:            r.ID,
		Key:           r.Key,
		StaleFence:    r.StaleFence,
		StaleOwner:    r.StaleOwner,
		StaleResult:   rawJSON(r.StaleResult),
		CurrentFence:  r.CurrentFence,
		CurrentOwner:  r.CurrentOwner,
		CurrentState:  reconcile.ClaimState(r.CurrentState),
		CurrentResult: rawJSON(r.CurrentResult),
	}
	var err error
	o.RecordedAt, err = parseTime(r.RecordedAt)
	return o, err
}

// OrphanList implements ledgerdb.Store.
func (s *Store) OrphanList(ctx context.Context) ([]reconcile.Orphan, error) {
	rows, err := s.q.OrphanList(ctx)
	if err != nil {
		return nil, err
	}
	var out []reconcile.Orphan
	for _, r := range rows {
		o, err := orphanFromRow(r)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}
