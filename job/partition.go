package job

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/matcher"
	"reconcile/report"
)

// partitionMatch classifies a run partition by partition, several at
// once. Confirmed effects are handed back to the ledger at once, and
// forgotten; the other findings (a few percent) are kept for the actions
// and the result.
type partitionMatch struct {
	in       matcher.Input // the cutoffs, scope and paging thresholds
	log      *slog.Logger
	linked   func()           // called when the first partition comes: the ledger has linked the evidence
	now      func() time.Time // the run's clock
	first    sync.Once        // of linked
	done     atomic.Int64     // partitions matched, for the progress line
	count    atomic.Int64
	mu       sync.Mutex // over what the partitions add to, below
	kept     keptFindings
	unlinked map[txName]bool // the kept unexpected transactions that link to no effect in scope
	reported map[txName]bool // of those, the ones earlier evidence holds: sorted drops them
	// Once sorted: when each kept finding's effect was created, and when
	// an earlier run first found it in the class it has now.
	created, since map[string]time.Time
	confirmed      int
	volume         map[volumeKey]*report.Volume // confirmed money per provider, currency and kind
	outOfScope     int
	matching       time.Duration // spent classifying, as opposed to reading and recording
}

// match classifies one partition and returns the confirmations to record:
// every confirmed effect but those already confirmed and final with
// nothing left to write. A confirmed compensation is kept instead, since
// the actions may yet escalate it.
func (m *partitionMatch) match(part *ledgerdb.Partition) ([]ledgerdb.Confirmation, error) {
	if m.linked != nil {
		m.first.Do(m.linked)
	}
	start := m.now()
	m.count.Store(int64(part.Count))
	in := m.in
	in.Effects = make([]matcher.Effect, len(part.Effects))
	for i := range part.Effects {
		e, err := matcher.FromLedger(&part.Effects[i].Effect)
		if err != nil {
			m.log.Warn("effect request unreadable; its amount is not compared", "effect", e.Key, "err", err)
		}
		in.Effects[i] = e
	}
	in.Evidence = append(part.Evidence, part.Earlier...)
	found := matcher.Match(&in)
	m.mu.Lock()
	defer m.mu.Unlock()
	defer func() { m.matching += m.now().Sub(start) }()
	for _, i := range found.Unlinked {
		if m.unlinked == nil {
			m.unlinked = map[txName]bool{}
		}
		m.unlinked[nameOf(&found.Discrepancies[i].Transactions[0])] = true
	}
	ds := found.Discrepancies
	if len(part.Earlier) > 0 {
		ds = onlyThisRunsUnexpected(ds, part.Evidence)
	}
	m.outOfScope += found.OutOfScope

	var confs []ledgerdb.Confirmation
	for i := range ds {
		d := &ds[i]
		j, isEffect := part.Find(d.EffectKey)
		if d.Class == reconcile.ClassConfirmed && isEffect {
			kind, _ := matcher.ExpectedKind(in.Effects[j].Step)
			m.addVolume(d, kind)
		}
		if d.Class == reconcile.ClassConfirmed && isEffect && !matcher.IsCompensation(&in.Effects[j]) {
			m.confirmed++
			e := &part.Effects[j]
			c := ledgerdb.Confirmation{Key: e.Key}
			if e.Status == reconcile.StatusAttempted {
				c.ExternalID = matcher.ConfirmingID(&d.Transactions[0])
			} else if e.State == reconcile.ClassConfirmed && e.Final {
				continue // nothing to write: it stays as the previous run left it
			}
			confs = append(confs, c)
			continue
		}
		var created, since time.Time
		if isEffect {
			e := &part.Effects[j]
			created = e.CreatedAt
			if e.State == d.Class {
				since = e.Since
			}
		}
		m.kept.add(d, created, since)
	}
	m.done.Add(1)
	return confs, nil
}

// sorted hands over the kept findings, in the order one match over all
// of the data gives them: effects by key, then unexpected transactions by
// provider, id and kind.
func (m *partitionMatch) sorted() []reconcile.Discrepancy {
	kept, created, since := m.kept.all()
	m.kept = keptFindings{}
	m.created, m.since = times(kept, created), times(kept, since)
	if len(m.reported) > 0 {
		kept = slices.DeleteFunc(kept, func(d reconcile.Discrepancy) bool {
			return d.Class == reconcile.ClassUnexpected && m.reported[nameOf(&d.Transactions[0])]
		})
	}
	slices.SortFunc(kept, func(a, b reconcile.Discrepancy) int {
		if (a.EffectKey == "") != (b.EffectKey == "") {
			if a.EffectKey == "" {
				return 1
			}
			return -1
		}
		if a.EffectKey != "" {
			return strings.Compare(a.EffectKey, b.EffectKey)
		}
		x, y := &a.Transactions[0], &b.Transactions[0]
		return cmp.Or(strings.Compare(x.Provider, y.Provider), strings.Compare(x.ID, y.ID), strings.Compare(string(x.Kind), string(y.Kind)))
	})
	return kept
}

// times maps the key of each finding of an effect to its time in ts, if
// it has one.
func times(ds []reconcile.Discrepancy, ts []time.Time) map[string]time.Time {
	out := map[string]time.Time{}
	for i := range ds {
		if ds[i].EffectKey != "" && !ts[i].IsZero() {
			out[ds[i].EffectKey] = ts[i]
		}
	}
	return out
}

// txName names a provider's transaction by its id.
type txName struct{ Provider, ID string }

func nameOf(tx *reconcile.Transaction) txName { return txName{tx.Provider, tx.ID} }

// dropReported notes, for sorted to drop, the kept unexpected
// transactions that link to no effect in scope and that evidence outside
// the run's sources holds: the run that read that evidence reported them,
// and a person may have decided on them since. A file that repeats
// yesterday's line is no new unexpected money.
func (m *partitionMatch) dropReported(ctx context.Context, store ledgerdb.Store, sources []int64) error {
	if len(m.unlinked) == 0 {
		return nil
	}
	p := &ledgerdb.LinkParams{ExcludeSources: sources}
	for n := range m.unlinked {
		p.IDs = append(p.IDs, n.ID)
	}
	slices.Sort(p.IDs)
	earlier, err := store.EvidenceListLinked(ctx, p)
	if err != nil {
		return err
	}
	m.reported = map[txName]bool{}
	for i := range earlier {
		if n := (txName{earlier[i].Provider, earlier[i].TxID}); m.unlinked[n] {
			m.reported[n] = true
		}
	}
	return nil
}

// onlyThisRunsUnexpected drops unexpected transactions that no record of
// this run's inputs describes: earlier evidence read for context was
// reported by the run that ingested it. A transaction is named by its
// provider, kind and id: a refund whose id is a payment intent does not
// describe a charge of that intent.
func onlyThisRunsUnexpected(ds []reconcile.Discrepancy, evidence []reconcile.Evidence) []reconcile.Discrepancy {
	type name struct {
		provider string
		kind     reconcile.Kind
		id       string
	}
	mine := map[name]bool{}
	for _, t := range matcher.Transactions(evidence) {
		mine[name{t.Provider, t.Kind, t.ID}] = true
	}
	out := ds[:0]
	for _, d := range ds {
		if d.Class != reconcile.ClassUnexpected {
			out = append(out, d)
		} else if t := &d.Transactions[0]; mine[name{t.Provider, t.Kind, t.ID}] {
			out = append(out, d)
		}
	}
	return out
}

type volumeKey struct {
	provider, currency string
	kind               reconcile.Kind
}

// addVolume counts a confirmed effect's money, for the tie-out: money in
// for a charge, out for a refund or payout, as the providers' totals sign it.
func (m *partitionMatch) addVolume(d *reconcile.Discrepancy, kind reconcile.Kind) {
	amount := d.ObservedMinor
	if kind != reconcile.KindCharge {
		amount = -amount
	}
	m.mergeVolume(&report.Volume{Provider: d.Provider, Currency: d.Currency, Kind: kind, Count: 1, AmountMinor: amount})
}

// mergeVolume adds confirmed money to the tie-out.
func (m *partitionMatch) mergeVolume(add *report.Volume) {
	if m.volume == nil {
		m.volume = map[volumeKey]*report.Volume{}
	}
	k := volumeKey{add.Provider, add.Currency, add.Kind}
	v := m.volume[k]
	if v == nil {
		v = &report.Volume{Provider: add.Provider, Currency: add.Currency, Kind: add.Kind}
		m.volume[k] = v
	}
	v.Count += add.Count
	v.AmountMinor, _ = reconcile.AddMinor(v.AmountMinor, add.AmountMinor)
}

// volumes returns the confirmed money, by provider and currency.
func (m *partitionMatch) volumes() []report.Volume {
	out := make([]report.Volume, 0, len(m.volume))
	for _, v := range m.volume {
		out = append(out, *v)
	}
	slices.SortFunc(out, func(a, b report.Volume) int {
		return cmp.Or(strings.Compare(a.Provider, b.Provider), strings.Compare(a.Currency, b.Currency), strings.Compare(string(a.Kind), string(b.Kind)))
	})
	return out
}
