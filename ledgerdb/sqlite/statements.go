package sqlite

import (
	"context"
	"time"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/internal/driver"
	"reconcile/ledgerdb/sqlite/internal/dbsqlc"
)

// statements runs the statements of the claim flows and of recording an
// attempt (driver.ClaimTx, driver.EffectTx) in a write transaction, which
// holds SQLite's write lock: what Current reads is what the write saw.
type statements struct {
	ctx context.Context
	q   *dbsqlc.Queries
}

func (t statements) Take(p *ledgerdb.ClaimParams, now time.Time) (*reconcile.Claim, error) {
	return readClaim(t.q.ClaimAcquireUpsert(t.ctx, dbsqlc.ClaimAcquireUpsertParams{
		Key:        p.Key,
		Owner:      p.Owner,
		LeaseUntil: leaseUntil(now, p.TTL),
		ClaimedAt:  ts(now),
	}))
}

func (t statements) Insert(p *ledgerdb.RecordParams, req []byte, now time.Time) (*reconcile.Effect, error) {
	return readEffect(t.q.EffectInsertAttempt(t.ctx, dbsqlc.EffectInsertAttemptParams{
		Key:       p.Key,
		RunID:     p.RunID,
		Step:      p.Step,
		Provider:  p.Provider,
		Request:   string(req),
		CreatedAt: ts(now),
		ParentKey: optText(p.ParentKey),
		Depth:     int64(p.Depth),
	}))
}

func (t statements) Get(key string) (*reconcile.Effect, error) {
	return readEffect(t.q.EffectGet(t.ctx, key))
}

func (t statements) Write(p *ledgerdb.SettleParams, now time.Time) (*reconcile.Claim, error) {
	state, result, errText := driver.SettleValues(p)
	at := ts(now)
	return readClaim(t.q.ClaimSettleHeld(t.ctx, dbsqlc.ClaimSettleHeldParams{
		State:     state,
		Result:    result,
		Error:     errText,
		SettledAt: &at,
		Key:       p.Key,
		Fence:     p.Fence,
	}))
}

func (t statements) Confirm(p *ledgerdb.ConfirmParams, now time.Time) error {
	at := ts(now)
	return t.q.EffectConfirmOnSettle(t.ctx, dbsqlc.EffectConfirmOnSettleParams{
		ExternalID:  &p.ExternalID,
		Response:    optJSON(p.Response),
		ConfirmedAt: &at,
		Key:         p.Key,
	})
}

func (t statements) Current(key string) (*reconcile.Claim, error) {
	return readClaim(t.q.ClaimGet(t.ctx, key))
}

func (t statements) AddOrphan(o *reconcile.Orphan) (int64, error) {
	return t.q.OrphanInsert(t.ctx, dbsqlc.OrphanInsertParams{
		Key:           o.Key,
		StaleFence:    o.StaleFence,
		StaleOwner:    o.StaleOwner,
		StaleResult:   optJSON(o.StaleResult),
		CurrentFence:  o.CurrentFence,
		CurrentOwner:  o.CurrentOwner,
		CurrentState:  string(o.CurrentState),
		CurrentResult: optJSON(o.CurrentResult),
		RecordedAt:    ts(o.RecordedAt),
	})
}
