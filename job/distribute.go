package job

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"reconcile"
	"reconcile/ingest"
	"reconcile/ledgerdb"
	"reconcile/matcher"
	"reconcile/report"
)

// A distributed run stages its partitions in the ledger and has them
// matched and recorded by worker processes (Work), on any machine; it
// keeps what they found, as partitionMatch keeps it of the partitions it
// matches itself, and acts on it alone.

// partitionInput is what a worker needs of the run to match one of its
// partitions: the matcher's input but the effects and evidence.
type partitionInput struct {
	Cutoff             map[string]time.Time `json:"cutoff"`
	Scope              []matcher.Coverage   `json:"scope"`
	EscalateUnexpected map[string]int64     `json:"escalate_unexpected"`
}

// partitionResult is what the run keeps of a partition a worker matched.
type partitionResult struct {
	Kept       []reconcile.Discrepancy `json:"kept"`
	Created    map[string]time.Time    `json:"created"`
	Since      map[string]time.Time    `json:"since"`
	Confirmed  int                     `json:"confirmed"`
	OutOfScope int                     `json:"out_of_scope"`
	Volumes    []report.Volume         `json:"volumes"`
	Matching   time.Duration           `json:"matching_ns"`
	Unlinked   []txName                `json:"unlinked"`
}

// distribute has the run's partitions matched by workers, n of them in
// this process, and keeps their findings in m.
func (j *Job) distribute(ctx context.Context, p *ledgerdb.MatchParams, m *partitionMatch, n int) (*ledgerdb.MatchSummary, error) {
	d, ok := j.Store.(ledgerdb.Distributor)
	if !ok {
		return nil, errors.New("a run's partitions can be distributed on a PostgreSQL ledger only")
	}
	in := partitionInput{Cutoff: m.in.Cutoff, EscalateUnexpected: m.in.EscalateUnexpected}
	for c := range m.in.Scope {
		in.Scope = append(in.Scope, c)
	}
	input, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	dist := j.distribution(n)
	dist.Input = input
	dist.Progress = func(done, count int) {
		if m.linked != nil {
			m.linked()
			m.linked = nil
		}
		m.done.Store(int64(done))
		m.count.Store(int64(count))
	}
	sum, results, err := d.PartitionDistribute(ctx, p, dist)
	if err != nil {
		return nil, err
	}
	for _, b := range results {
		var r partitionResult
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, err
		}
		for i := range r.Kept {
			d := &r.Kept[i]
			m.kept.add(d, r.Created[d.EffectKey], r.Since[d.EffectKey])
		}
		m.confirmed += r.Confirmed
		m.outOfScope += r.OutOfScope
		m.matching += r.Matching
		for _, n := range r.Unlinked {
			if m.unlinked == nil {
				m.unlinked = map[txName]bool{}
			}
			m.unlinked[n] = true
		}
		for i := range r.Volumes {
			m.mergeVolume(&r.Volumes[i])
		}
	}
	return sum, nil
}

// Work matches and records the partitions of any distributed run on the
// ledger, n at a time, until ctx ends.
func (j *Job) Work(ctx context.Context, n int) error {
	d, ok := j.Store.(ledgerdb.Distributor)
	if !ok {
		return errors.New("a worker works the partitions of a PostgreSQL ledger only")
	}
	return d.PartitionWork(ctx, j.distribution(n))
}

func (j *Job) distribution(n int) *ledgerdb.Distribution {
	return &ledgerdb.Distribution{Workers: n, Worker: j.Owner, Match: j.matchPartition, WebhookFormats: ingest.WebhookFormats(), Log: j.log()}
}

// matchPartition matches one partition of a distributed run, as the run
// would match it itself.
func (j *Job) matchPartition(input []byte, part *ledgerdb.Partition) ([]ledgerdb.Confirmation, []byte, error) {
	var in partitionInput
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, nil, err
	}
	m := &partitionMatch{in: matcher.Input{Cutoff: in.Cutoff, Scope: map[matcher.Coverage]bool{}, EscalateUnexpected: in.EscalateUnexpected},
		log: j.log(), now: j.now}
	for _, c := range in.Scope {
		m.in.Scope[c] = true
	}
	confs, err := m.match(part)
	if err != nil {
		return nil, nil, err
	}
	crash("worker:matched") // matched, nothing recorded
	kept, created, since := m.kept.all()
	r := &partitionResult{Kept: kept, Created: times(kept, created), Since: times(kept, since), Confirmed: m.confirmed,
		OutOfScope: m.outOfScope, Volumes: m.volumes(), Matching: m.matching}
	for n := range m.unlinked {
		r.Unlinked = append(r.Unlinked, n)
	}
	b, err := json.Marshal(r)
	return confs, b, err
}
