package job

import (
	"context"

	"reconcile"
	"reconcile/escalate"
	"reconcile/ledgerdb"
)

// EffectView is what the ledger knows of one effect: its row, the job's
// state for it, the evidence that names it, the actions on it, its
// compensations, the escalations about it, and every run's finding.
type EffectView struct {
	Effect        *reconcile.Effect
	State         *reconcile.EffectState
	Evidence      []reconcile.Evidence
	Claims        []reconcile.Claim
	Compensations []reconcile.Effect
	Escalations   []EscalationView
	History       []ledgerdb.RunFinding
}

// EscalationView is an escalation as the on-call commands show it: as the
// ledger holds it, and why its page failed when the pager did not take it
// (PagedAt is then unset; the next run that applies sends it again).
type EscalationView struct {
	reconcile.Escalation
	PageFailed bool
	PageError  string
}

// Show returns what the ledger knows of the effect with key, or an error
// wrapping reconcile.ErrNotFound.
func Show(ctx context.Context, store ledgerdb.Store, key string) (*EffectView, error) {
	v := &EffectView{}
	var err error
	if v.Effect, err = store.EffectGet(ctx, key); err != nil {
		return nil, err
	}
	states, err := store.EffectStateGetMany(ctx, []string{key})
	if err != nil {
		return nil, err
	}
	if st, ok := states[key]; ok {
		v.State = &st
	}
	link := &ledgerdb.LinkParams{Keys: []string{key}}
	if v.Effect.ExternalID != "" {
		link.IDs = []string{v.Effect.ExternalID}
	}
	if v.Evidence, err = store.EvidenceListLinked(ctx, link); err != nil {
		return nil, err
	}
	if v.Claims, err = store.ClaimListByEffect(ctx, key); err != nil {
		return nil, err
	}
	for _, c := range v.Claims {
		if e, err := store.EffectGet(ctx, c.Key); err == nil && e.ParentKey == key {
			v.Compensations = append(v.Compensations, *e)
		}
	}
	es, err := store.EscalationList(ctx, &ledgerdb.EscalationsParams{Subject: key})
	if err != nil {
		return nil, err
	}
	if v.Escalations, err = WithPages(ctx, store, es); err != nil {
		return nil, err
	}
	if v.History, err = store.FindingListByEffect(ctx, key); err != nil {
		return nil, err
	}
	return v, nil
}

// WithPages gives each escalation its page's failure, if any.
func WithPages(ctx context.Context, store ledgerdb.Store, es []reconcile.Escalation) ([]EscalationView, error) {
	failed, err := escalate.PageErrors(ctx, store, es)
	if err != nil {
		return nil, err
	}
	out := make([]EscalationView, len(es))
	for i, e := range es {
		msg, ok := failed[e.Key]
		out[i] = EscalationView{Escalation: e, PageFailed: ok, PageError: msg}
	}
	return out, nil
}
