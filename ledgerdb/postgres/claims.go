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
	"reconcile/ledgerdb/postgres/internal/dbsqlc"
)

// claimOf converts a claim row, its times in UTC.
func claimOf(r dbsqlc.Claim) reconcile.Claim {
	return reconcile.Claim{Key: r.Key, Owner: r.Owner, Fence: r.Fence, State: reconcile.ClaimState(r.State),
		LeaseUntil: utcOf(r.LeaseUntil), Result: r.Result, Error: textOf(r.Error), ClaimedAt: r.ClaimedAt.UTC(),
		SettledAt: utcOf(r.SettledAt)}
}

// claimsOf converts claim rows.
func claimsOf(rows []dbsqlc.Claim) []reconcile.Claim {
	out := make([]reconcile.Claim, len(rows))
	for i, r := range rows {
		out[i] = claimOf(r)
	}
	return out
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
			var err error
			res, err = driver.Acquire(statements{ctx, dbsqlc.New(tx)}, p, s.now())
			return err
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
	c, err := dbsqlc.New(s.pool).ClaimRenewUpdate(ctx, dbsqlc.ClaimRenewUpdateParams{Key: p.Key, Fence: p.Fence,
		LeaseUntil: leaseUntil(s.now(), p.TTL)})
	if err == nil {
		return &reconcile.WriteResult{Outcome: reconcile.WriteOutcomeWritten, Claim: claimOf(c)}, nil
	}
	if err = interpretError(err); !errors.Is(err, reconcile.ErrNotFound) {
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
	var res *reconcile.WriteResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
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
	r, err := dbsqlc.New(s.pool).ClaimGet(ctx, key)
	if err != nil {
		return nil, interpretError(err)
	}
	c := claimOf(r)
	return &c, nil
}

// ClaimGetMany implements ledgerdb.Store.
func (s *Store) ClaimGetMany(ctx context.Context, keys []string) (map[string]*reconcile.Claim, error) {
	rows, err := dbsqlc.New(s.pool).ClaimGetMany(ctx, nonNil(keys))
	if err != nil {
		return nil, err
	}
	out := map[string]*reconcile.Claim{}
	for _, r := range rows {
		c := claimOf(r)
		out[c.Key] = &c
	}
	return out, nil
}

// OrphanList implements ledgerdb.Store.
func (s *Store) OrphanList(ctx context.Context) ([]reconcile.Orphan, error) {
	rows, err := dbsqlc.New(s.pool).OrphanList(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]reconcile.Orphan, len(rows))
	for i, r := range rows {
		out[i] = reconcile.Orphan{ID: r.ID, Key: r.Key, StaleFence: r.StaleFence, StaleOwner: r.StaleOwner, StaleResult: r.StaleResult,
			CurrentFence: r.CurrentFence, CurrentOwner: r.CurrentOwner, CurrentState: reconcile.ClaimState(r.CurrentState),
			CurrentResult: r.CurrentResult, RecordedAt: r.RecordedAt.UTC()}
	}
	return out, nil
}

// jsonText passes a JSON document to a query as text, and an empty one
// as NULL. The queries take JSON as text (x::text::jsonb): pgx sends a
// string as it is in every query exec mode, but []byte as bytea in the
// exec and simple_protocol modes.
func jsonText(b []byte) *string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	return &s
}

// nullJSON passes a JSON document as text, and an empty one as NULL.
func nullJSON(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}
