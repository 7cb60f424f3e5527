package job

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"reconcile"
	"reconcile/compensate"
	"reconcile/ingest"
	"reconcile/ledgerdb"
	"reconcile/matcher"
	"reconcile/report"
)

// reconcile matches and records one run over what its inputs gave.
func (j *Job) reconcile(ctx context.Context, p *RunParams, in *ingested, ap *compensate.Applier) (_ *report.Result, err error) {
	res := &report.Result{RunID: p.ID, Applied: p.Apply, StartedAt: j.now(), Counts: map[string]int{}, Inputs: in.inputs,
		Discrepancies: []report.Discrepancy{}, Rejected: in.rejected, RejectedUnlisted: in.unlisted, Orphans: []report.Orphan{}}
	// What the inputs cover: as the ledger gave it back when this run
	// wrote them, and from the ledger for those read before.
	var cover []ledgerdb.CoverageEnd
	var before []int64
	for i, id := range in.sourceIDs {
		if in.inputs[i].AlreadyIngested {
			before = append(before, id)
		} else {
			cover = append(cover, in.coverage[i]...)
		}
	}
	if len(before) > 0 {
		c, err := j.Store.CoverageList(ctx, before)
		if err != nil {
			return nil, err
		}
		cover = append(cover, c...)
	}
	ends := make(map[matcher.Coverage]time.Time, len(cover))
	now := j.now()
	for _, c := range cover {
		// Evidence may run a few minutes ahead of this clock (a provider's
		// clock skew), never the end of coverage: no report covers the future.
		k, end := matcher.Coverage{Provider: c.Provider, Kind: c.Kind}, minTime(c.End, now)
		if e, ok := ends[k]; !ok || end.After(e) {
			ends[k] = end
		}
	}
	ap.Covered = func(provider, step string) time.Time {
		kind, _ := matcher.ExpectedKind(step)
		return ends[matcher.Coverage{Provider: provider, Kind: kind}]
	}
	scope, cutoff := matcher.Window(ends, p.AsOf, p.Lag)
	res.AsOf = coverageEnd(p.AsOf, cutoff, p.Lag)
	done := j.phase("link")
	m := &partitionMatch{in: matcher.Input{Cutoff: cutoff, Scope: scope, EscalateUnexpected: p.PageUnexpected, Terse: true},
		log: j.log(), now: j.now, linked: func() { done(); done = j.phase("partitions") }}
	stopMatch := j.progress(func() string { return fmt.Sprintf("matching: partition %d of %d", m.done.Load(), m.count.Load()) })
	// Inputs a run matched before are earlier evidence: what they hold was
	// seen, reported and perhaps resolved by a person already. An input
	// only ingested (reconcile ingest), or whose run died before recording
	// its findings, is new to this run, as one it ingests.
	var fresh []int64
	for i, id := range in.sourceIDs {
		if !in.matched[i] {
			fresh = append(fresh, id)
		}
	}
	start := j.now()
	// The ledger's mark of what the run leaves the next goes on while the
	// run acts and writes its findings, which wait for it before their
	// states; the run ends once it is done, whatever else fails.
	params := &ledgerdb.MatchParams{RunID: p.ID, Sources: fresh, Kinds: matcher.StepKinds(), WebhookFormats: ingest.WebhookFormats(),
		PartitionSize: p.PartitionSize, Indexes: in.indexes, MarkBeside: true}
	var sum *ledgerdb.MatchSummary
	if p.Distribute {
		sum, err = j.distribute(ctx, params, m, p.Workers)
	} else {
		sum, err = j.Store.PartitionMatch(ctx, params, m.match)
	}
	if err == nil && sum.Marked != nil {
		defer func() {
			if merr := sum.Marked(); merr != nil && err == nil {
				err = merr
			}
		}()
	}
	stopMatch()
	if err == nil && !sum.NoEarlier { // a first night has nothing reported before
		err = m.dropReported(ctx, j.Store, fresh)
	}
	if err != nil {
		return nil, err
	}
	kept := m.sorted()
	j.log().Debug("partitions matched", "partitions", sum.Partitions, "effects", sum.Effects, "records", sum.Records, "records_kept", sum.Kept, "spilled_mb", sum.Spilled>>20,
		"matching", m.matching.Round(time.Millisecond), "reading_and_recording", (j.now().Sub(start) - m.matching).Round(time.Millisecond))
	done()
	var acts, total atomic.Int64
	ap.Progress = func(d, t int) { acts.Store(int64(d)); total.Store(int64(t)) }
	stop := j.progress(func() string { return fmt.Sprintf("applying: %d of %d actions", acts.Load(), total.Load()) })
	done = j.phase("act")
	acted, err := ap.Act(ctx, kept)
	stop()
	if err != nil {
		return nil, err
	}
	done()
	crash("run:acted") // everything is made; of this run only the confirmations are recorded yet
	done = j.phase("record")
	if _, err := j.Store.FindingRecord(ctx, &ledgerdb.FindingsParams{RunID: p.ID, Discrepancies: acted.Discrepancies, Sources: fresh, Marked: sum.Marked}); err != nil {
		return nil, err
	}
	done()
	for _, o := range acted.Orphans {
		res.Orphans = append(res.Orphans, report.Orphan{Key: o.Key, StaleOwner: o.StaleOwner, StaleFence: o.StaleFence, StaleResult: string(o.StaleResult),
			CurrentOwner: o.CurrentOwner, CurrentFence: o.CurrentFence, CurrentState: string(o.CurrentState)})
	}
	for _, c := range reconcile.Classes {
		res.Counts[string(c)] = 0
	}
	res.Counts[string(reconcile.ClassConfirmed)] = m.confirmed
	res.Discrepancies = make([]report.Discrepancy, 0, len(acted.Discrepancies))
	for i := range acted.Discrepancies {
		d := &acted.Discrepancies[i]
		res.Counts[string(d.Class)]++
		if d.Class == reconcile.ClassConfirmed {
			continue
		}
		out := report.FindingOf(d)
		out.Time, out.FirstFound = m.created[d.EffectKey], res.StartedAt
		if since, ok := m.since[d.EffectKey]; ok {
			out.FirstFound = since
		}
		if d.EffectKey == "" && len(d.Transactions) > 0 {
			out.Time = d.Transactions[0].Time
		}
		res.Discrepancies = append(res.Discrepancies, out)
		*d = reconcile.Discrepancy{} // what the result keeps of it is out; the rest can go
	}
	acted, m.created, m.since = nil, nil, nil
	res.OutOfScope = m.outOfScope
	res.AtRisk, res.Repaired, res.Confirmed = res.MoneyAtRisk(), res.MoneyRepaired(), m.volumes()
	if res.Resolved, err = moneyResolved(ctx, j.Store, p.ID); err != nil {
		return nil, err
	}
	res.FinishedAt = j.now()
	j.log().Debug("run recorded", "run", p.ID, "inputs", len(res.Inputs), "records", sum.Records, "effects", sum.Effects,
		"partitions", sum.Partitions, "confirmed_now", sum.Confirmed)
	return res, nil
}

// coverageEnd is the as-of of the result: asOf when given, else the
// latest end of coverage over the providers.
func coverageEnd(asOf time.Time, cutoff map[string]time.Time, lag time.Duration) string {
	if !asOf.IsZero() {
		return asOf.Format(time.RFC3339)
	}
	var end time.Time
	for _, c := range cutoff {
		if c.Add(lag).After(end) {
			end = c.Add(lag)
		}
	}
	if end.IsZero() {
		return ""
	}
	return end.Format(time.RFC3339)
}

func minTime(a, b time.Time) time.Time {
	if a.After(b) {
		return b
	}
	return a
}

// moneyResolved is what the findings a person resolved since the last run
// had at risk, per currency: the third part of the exposure, beside what
// is open and what this run repaired.
func moneyResolved(ctx context.Context, store ledgerdb.Store, runID string) (map[string]int64, error) {
	runs, err := store.RunList(ctx, &ledgerdb.RunsParams{Limit: 2})
	if err != nil {
		return nil, err
	}
	var since time.Time // the start of the run before this one
	for _, r := range runs {
		if r.ID != runID {
			since = r.StartedAt
			break
		}
	}
	if since.IsZero() { // the first run: nothing was resolved before it
		return map[string]int64{}, nil
	}
	es, err := store.EscalationList(ctx, &ledgerdb.EscalationsParams{ResolvedSince: since})
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	done := map[string]bool{}
	for _, e := range es {
		if done[e.Subject] {
			continue
		}
		done[e.Subject] = true
		fs, err := store.FindingListByEffect(ctx, e.Subject)
		if err != nil || len(fs) == 0 {
			continue // unexpected money names no effect: its amount is in its own finding only
		}
		d := report.FindingOf(&fs[len(fs)-1].Discrepancy)
		out[d.Currency], _ = reconcile.AddMinor(out[d.Currency], d.AtRisk())
	}
	return out, nil
}
