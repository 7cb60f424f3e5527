package postgres

import (
	"context"
	"time"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/internal/driver"
	"reconcile/ledgerdb/postgres/internal/dbsqlc"
)

// statements runs the statements of the claim flows and of recording an
// attempt (driver.ClaimTx, driver.EffectTx) on a transaction or the pool.
type statements struct {
	ctx context.Context
	q   *dbsqlc.Queries
}

func (t statements) Take(p *ledgerdb.ClaimParams, now time.Time) (*reconcile.Claim, error) {
	return claimRow(t.q.ClaimAcquireUpsert(t.ctx, dbsqlc.ClaimAcquireUpsertParams{Key: p.Key, Owner: p.Owner,
		LeaseUntil: leaseUntil(now, p.TTL), ClaimedAt: now}))
}

func (t statements) Insert(p *ledgerdb.RecordParams, req []byte, now time.Time) (*reconcile.Effect, error) {
	var parent *string
	if p.ParentKey != "" {
		parent = &p.ParentKey
	}
	r, err := t.q.EffectRecordInsert(t.ctx, dbsqlc.EffectRecordInsertParams{Key: p.Key, RunID: p.RunID, Step: p.Step, Provider: p.Provider,
		Request: string(req), CreatedAt: now, ParentKey: parent, Depth: p.Depth})
	if err != nil {
		return nil, interpretError(err)
	}
	return effectOf(r), nil
}

func (t statements) Get(key string) (*reconcile.Effect, error) {
	r, err := t.q.EffectGet(t.ctx, key)
	if err != nil {
		return nil, interpretError(err)
	}
	return effectOf(r), nil
}

func (t statements) Write(p *ledgerdb.SettleParams, now time.Time) (*reconcile.Claim, error) {
	state, result, errText := driver.SettleValues(p)
	return claimRow(t.q.ClaimSettleUpdate(t.ctx, dbsqlc.ClaimSettleUpdateParams{Key: p.Key, Fence: p.Fence, State: state,
		Result: result, Error: errText, SettledAt: now}))
}

func (t statements) Confirm(p *ledgerdb.ConfirmParams, now time.Time) error {
	return t.q.EffectConfirmIfAttempted(t.ctx, dbsqlc.EffectConfirmIfAttemptedParams{Key: p.Key, ExternalID: p.ExternalID,
		Response: jsonText(p.Response), ConfirmedAt: now})
}

func (t statements) Current(key string) (*reconcile.Claim, error) {
	return claimRow(t.q.ClaimGetForUpdate(t.ctx, key))
}

func (t statements) AddOrphan(o *reconcile.Orphan) (int64, error) {
	return t.q.OrphanInsert(t.ctx, dbsqlc.OrphanInsertParams{Key: o.Key, StaleFence: o.StaleFence, StaleOwner: o.StaleOwner,
		StaleResult: jsonText(o.StaleResult), CurrentFence: o.CurrentFence, CurrentOwner: o.CurrentOwner,
		CurrentState: string(o.CurrentState), CurrentResult: jsonText(o.CurrentResult), RecordedAt: o.RecordedAt})
}

// claimRow is the claim a statement returned, or why there is none.
func claimRow(r dbsqlc.Claim, err error) (*reconcile.Claim, error) {
	if err != nil {
		return nil, interpretError(err)
	}
	c := claimOf(r)
	return &c, nil
}
