package ledgerdb

import (
	"context"
	"log/slog"
	"sort"
	"time"

	"reconcile"
)

// CoverageEnd is one provider and kind that a run's evidence reports on,
// with the latest time of its records (zero when none has a time).
type CoverageEnd struct {
	Provider string
	Kind     reconcile.Kind
	End      time.Time
}

// DefaultPartitionSize is about how many effects, and how many
// transactions that link to no effect, one partition of a run holds: small
// enough that a partition's matching stays within tens of megabytes, large
// enough that the round trips per partition cost little.
const DefaultPartitionSize = 50000

// MatchParams ask for a run's matching, partition by partition.
type MatchParams struct {
	RunID string
	// Sources are the run's new inputs in the manifest: their evidence is
	// the run's own, the rest of the ledger's evidence (inputs read again
	// included) is earlier. A closed effect comes back into scope only when
	// the run's own evidence names it with a transaction no earlier
	// evidence holds: reading the same evidence again reopens nothing.
	Sources []int64
	// Kinds gives the kind of provider transaction each step makes
	// (matcher.StepKinds). An effect links only to transactions of its
	// step's kind; evidence of other kinds links to nothing and is not
	// read.
	Kinds map[string]reconcile.Kind
	// PartitionSize bounds a partition: about this many effects, and this
	// many transactions that link to no effect. 0 means
	// DefaultPartitionSize.
	PartitionSize int
	// WebhookFormats are the input formats whose records are webhook
	// events (reconcile.Evidence.Webhook).
	WebhookFormats []string
	// Indexes, when set, builds the evidence indexes a large ingest
	// deferred (Store.IndexesDefer). PartitionMatch calls it once: before
	// it reads, with need true, when its reads look up earlier evidence or
	// closed effects by those indexes, and Indexes returns once they are
	// built; else, with need false, once it has read the effects in scope
	// (PostgreSQL) or cut the partitions (SQLite), before it matches the
	// first, and they may be built while the run goes on.
	Indexes func(need bool)
	// MarkBeside lets PartitionMatch return once the partitions are
	// recorded, while the ledger goes on with what it leaves the next run
	// (the effects left without a state, its horizon, the run's records
	// sorted): MatchSummary.Marked waits for that. A driver that marks
	// within its partitions' work (SQLite, a distributed run) ignores it.
	MarkBeside bool
}

// Size returns p.PartitionSize, or the default.
func (p *MatchParams) Size() int {
	if p.PartitionSize > 0 {
		return p.PartitionSize
	}
	return DefaultPartitionSize
}

// LinkKinds returns the kinds of transaction that can link to an effect,
// and disputes, which a charge's effect shows (DESIGN section 5), sorted.
func (p *MatchParams) LinkKinds() []string {
	seen := map[reconcile.Kind]bool{reconcile.KindDispute: true}
	out := []string{string(reconcile.KindDispute)}
	for _, k := range p.Kinds {
		if !seen[k] {
			seen[k] = true
			out = append(out, string(k))
		}
	}
	sort.Strings(out)
	return out
}

// Partition is one part of a run's matching: the effects in scope whose
// keys fall in it, and the evidence of the transactions that link to them
// or, linking to nothing, fall in it themselves.
type Partition struct {
	Index   int // 0, 1, ...
	Count   int // how many partitions the run has
	Effects []ScopedEffect
	// Evidence is the run's own evidence; Earlier is what earlier runs
	// ingested of the same transactions and effects. Both are compact: no
	// Raw, Metadata, Description, RawKind, Fee or SourceHash.
	Evidence []reconcile.Evidence
	Earlier  []reconcile.Evidence
	index    map[string]int32 // Find's, built on its first call
}

// Find returns the position in Effects of the effect of key. Its first
// call indexes the effects, once for all who look them up (the run's
// matching, the driver's recording): a partition is used by one
// goroutine at a time.
func (p *Partition) Find(key string) (int, bool) {
	if p.index == nil {
		p.index = make(map[string]int32, len(p.Effects))
		for i := range p.Effects {
			p.index[p.Effects[i].Key] = int32(i)
		}
	}
	i, ok := p.index[key]
	return int(i), ok
}

// ScopedEffect is an effect in a run's scope, with the state the previous
// run left it in. Its Request names only the request's amount and currency
// ({"amount": 1420000, "currency": "eur"}), or is the request as it is when
// it is not a JSON object; Response is not read.
type ScopedEffect struct {
	reconcile.Effect
	State reconcile.Class // "" when no run classified it yet
	// Since is when the effect was first found in State: the finding is
	// that old. Zero when State is "".
	Since time.Time
	Final bool
}

// Confirmation records that evidence confirmed an effect: its state
// becomes confirmed and final and, when ExternalID is set, an attempted
// effect is confirmed with it (matcher.ConfirmingID of the transaction).
type Confirmation struct {
	Key        string
	ExternalID string
}

// MatchSummary says what a run's matching went through.
type MatchSummary struct {
	Partitions int
	Effects    int // effects in scope
	Records    int // evidence records read: the run's own and earlier ones
	// Kept is how many of Records are the run's own, taken as its ingest
	// wrote them (IngestParams.Keep), not read back.
	Kept      int
	Confirmed int // attempted effects that are now confirmed
	// Spilled is how many bytes the partitions took on disk (Spill), at
	// most twice that while they were cut.
	Spilled int64
	// NoEarlier says that the ledger held no evidence but the run's own
	// sources' when the run read it: nothing the run found was reported
	// by another. False when there was some, or the driver does not say.
	NoEarlier bool
	// Marked, when MatchParams.MarkBeside was set and the mark went on
	// after PartitionMatch returned, waits for the mark and returns its
	// error; it may be called more than once. The run hands it to
	// FindingRecord (FindingsParams.Marked) and calls it before it ends.
	Marked func() error
}

// Distributor is a ledger whose runs' partitions any process may match:
// the run stages its linked partitions in the ledger, and they are handed
// out, one at a time, to the processes that work them (its own among them).
type Distributor interface {
	// PartitionDistribute links the run's evidence as PartitionMatch
	// does, stages the partitions, hands them out and waits until each has
	// been matched and recorded, once. It returns the summary and the
	// result of each partition (the second value of d.Match), in partition
	// order.
	PartitionDistribute(ctx context.Context, p *MatchParams, d *Distribution) (*MatchSummary, [][]byte, error)
	// PartitionWork matches and records the partitions of any run, d.Workers
	// at a time, until ctx ends.
	PartitionWork(ctx context.Context, d *Distribution) error
}

// Distribution says how a run's partitions are matched by whoever takes
// them.
type Distribution struct {
	// Input is what Match needs besides the partition: the run's cutoffs
	// and scope, encoded by its caller; it travels with each partition.
	Input []byte
	// Workers is how many partitions this process matches at once; 0
	// leaves them to other processes.
	Workers int
	// Worker names this process in the staged results (host:pid).
	Worker string
	// Match classifies one partition: the confirmations to record, and
	// what the run keeps of it, as bytes, recorded in the same transaction.
	Match func(input []byte, part *Partition) ([]Confirmation, []byte, error)
	// WebhookFormats are the input formats whose records are webhook events.
	WebhookFormats []string
	// Progress, when set, is told how many partitions are done of how many.
	Progress func(done, count int)
	Log      *slog.Logger
}
