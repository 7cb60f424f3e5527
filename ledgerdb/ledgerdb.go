// Package ledgerdb is the effect ledger and the job's own state behind one
// interface, with two drivers: ledgerdb/postgres (production) and
// ledgerdb/sqlite (the embedded default). Both run ledgerdbtest's one
// behavioural suite, so they cannot drift.
package ledgerdb

import (
	"context"
	"encoding/json"
	"time"

	"reconcile"
)

// Store is the ledger. Methods take a context first and a params struct, and
// return domain types. "Already done" and "superseded" are results, not errors.
type Store interface {
	// EffectRecord writes an effect as attempted, before its external call.
	// A key that exists with the same request (compared as JSON values, so
	// field order does not matter) returns the existing row with Created
	// false; with a different request it fails with *reconcile.KeyReusedError.
	EffectRecord(ctx context.Context, p *RecordParams) (*RecordResult, error)
	// EffectConfirm marks an attempted effect confirmed with its external id and
	// response. Confirming again with the same external id returns the row
	// unchanged; anything else (an abandoned effect, another external id)
	// fails with reconcile.ErrInvalidTransition and changes nothing.
	EffectConfirm(ctx context.Context, p *ConfirmParams) (*reconcile.Effect, error)
	// EffectAbandon closes an attempted effect by an explicit decision.
	EffectAbandon(ctx context.Context, p *AbandonParams) (*reconcile.Effect, error)
	// EffectLoad writes effects as they are (status, external id, times),
	// in bulk and in one transaction: for loading an existing ledger, or a
	// generated world. A key that exists already fails the whole load.
	EffectLoad(ctx context.Context, effects []reconcile.Effect) error
	// EffectGet returns one effect, or reconcile.ErrNotFound.
	EffectGet(ctx context.Context, key string) (*reconcile.Effect, error)

	// ClaimAcquire takes the lease on key in one conditional write and returns a new,
	// strictly greater fence token; or InFlight when a live lease is held
	// (the token is not bumped); or Done.
	ClaimAcquire(ctx context.Context, p *ClaimParams) (*reconcile.ClaimResult, error)
	// ClaimRenew extends the lease of the holder of p.Fence.
	ClaimRenew(ctx context.Context, p *RenewParams) (*reconcile.WriteResult, error)
	// ClaimSettle completes or fails a claim, conditional on its fence token. A
	// superseded token changes nothing and returns Superseded; a superseded
	// success is also recorded as an orphan. A second settle with the same
	// token fails with reconcile.ErrAlreadySettled, a token never issued with
	// reconcile.ErrUnknownFence, and a key never claimed with
	// reconcile.ErrNotFound.
	ClaimSettle(ctx context.Context, p *SettleParams) (*reconcile.WriteResult, error)
	// ClaimGet returns the claim on key, or reconcile.ErrNotFound.
	ClaimGet(ctx context.Context, key string) (*reconcile.Claim, error)
	// ClaimGetMany returns the claims on those of keys that have one, by key,
	// in one round trip.
	ClaimGetMany(ctx context.Context, keys []string) (map[string]*reconcile.Claim, error)
	// OrphanList lists every orphan recorded, oldest first.
	OrphanList(ctx context.Context) ([]reconcile.Orphan, error)

	// SourceFind returns the manifest entry of content with this hash, or
	// of an S3 object with this ETag, or reconcile.ErrNotFound. Empty
	// arguments match nothing.
	SourceFind(ctx context.Context, hash, etag string) (*SourceRecord, error)
	// SourceIngest writes one source in one transaction. fill streams the
	// source's evidence and rejected rows into the writer it is given and
	// returns the source's account; the manifest entry is completed last.
	// Content already in the manifest (the same hash) writes nothing and
	// returns Duplicate. An error from fill rolls everything back.
	SourceIngest(ctx context.Context, p *IngestParams, fill func(w SourceWriter) (*SourceRecord, error)) (*IngestResult, error)
	// SourceList lists the manifest, oldest first.
	SourceList(ctx context.Context) ([]SourceRecord, error)
	// SourceGetRows returns what SourceIngest wrote for a source, in order.
	SourceGetRows(ctx context.Context, sourceID int64) (*SourceRecord, []reconcile.Evidence, []reconcile.Rejected, error)
	// RejectedListBySource returns the first limit rejected rows of a source (all
	// when limit is 0), in order: what a run reports again for an input
	// ingested before.
	RejectedListBySource(ctx context.Context, sourceID int64, limit int) ([]reconcile.Rejected, error)

	// EvidenceListLinked returns the evidence outside the given sources that
	// names one of the effect keys (EffectKey, ParentEffectKey) or provider ids (TxID,
	// PaymentIntent, ParentTxID): what earlier runs saw of those effects.
	EvidenceListLinked(ctx context.Context, p *LinkParams) ([]reconcile.Evidence, error)
	// CoverageList returns what the evidence of the given sources reports on:
	// each provider and kind, with the latest time of its records.
	CoverageList(ctx context.Context, sourceIDs []int64) ([]CoverageEnd, error)
	// PartitionMatch prepares the matching of a run inside the ledger and
	// hands it to match partition by partition. The effects a run
	// classifies (its scope) are every effect not finally reconciled and
	// not abandoned, and every effect
	// whose key or external id the run's evidence names (a late duplicate
	// re-opens a confirmed effect). The evidence is the run's records of
	// the kinds the steps make (p.Kinds), and the earlier records that
	// name an effect in scope by key or by its external id.
	//
	// The ledger links nothing itself: it fetches the effects and records
	// by keys into a Spill, which groups them (matcher.Router) and lays
	// them out by partition. A partition therefore holds
	// every effect and record that the matcher could relate to one of its
	// own, and matches as one match over all of the data would; which
	// record links to which effect is the matcher's to decide. Partitions
	// are read in a compact form: no raw row, metadata, description, raw
	// kind, fee or source hash.
	//
	// match is called once per partition, on goroutines of the driver's,
	// several at once (one per processor but one, driver.Pipeline): it
	// must be safe for concurrent use. A driver reads the next partition
	// and records the last while match classifies some. The
	// confirmations match returns are recorded as the matching goes on,
	// one transaction per partition, and all of them by the time
	// PartitionMatch returns: each effect's state becomes confirmed and
	// final (its since kept when it was confirmed already), and an
	// attempted effect is confirmed with the given id, conditional on it
	// still being attempted. An error from match stops the matching and is
	// returned; the partitions recorded before it stay recorded.
	PartitionMatch(ctx context.Context, p *MatchParams, match func(part *Partition) ([]Confirmation, error)) (*MatchSummary, error)
	// FindingRecord writes a run's findings in one transaction, as the
	// drivers' shared Decide gives them: a finding row for each discrepancy
	// other than confirmed, the state of every classified effect, and, for each
	// confirmed effect still attempted, its confirmation with the
	// transaction's id, conditional on the row still being attempted so
	// that a concurrent change by the application is never overwritten.
	FindingRecord(ctx context.Context, p *FindingsParams) (*FindingsResult, error)
	// FindingListByRun returns a run's findings in the order they were recorded.
	FindingListByRun(ctx context.Context, runID string) ([]reconcile.Discrepancy, error)
	// FindingListByEffect returns every finding about one effect, oldest run
	// first: its history.
	FindingListByEffect(ctx context.Context, effectKey string) ([]RunFinding, error)
	// EffectStateGetMany returns the state of the given effects that have one.
	EffectStateGetMany(ctx context.Context, keys []string) (map[string]reconcile.EffectState, error)

	// EscalationOpen opens an escalation, or returns the one open under its key
	// (Opened false). A resolved escalation under the key is opened again
	// under the next generation (Opened true): it is paged again, once.
	EscalationOpen(ctx context.Context, p *EscalateParams) (*EscalateResult, error)
	// EscalationMarkPaged records that the pager took an escalation's generation.
	EscalationMarkPaged(ctx context.Context, p *MarkPagedParams) error
	// EscalationList lists escalations, oldest first: those about one subject
	// and the effects it compensates through (Subject), or all not resolved
	// (Open), or those resolved since a time (ResolvedSince), or all.
	EscalationList(ctx context.Context, p *EscalationsParams) ([]reconcile.Escalation, error)
	// EscalationAcknowledge marks an open escalation as taken in hand by someone. An
	// acknowledged one is returned as it is; a resolved one fails with
	// reconcile.ErrInvalidTransition, an unknown key with ErrNotFound.
	EscalationAcknowledge(ctx context.Context, p *AcknowledgeParams) (*reconcile.Escalation, error)
	// EffectResolve records a person's decision on an effect in one transaction:
	// the resolution, the effect's state (final), an attempted effect
	// abandoned or confirmed as decided, and every escalation about it
	// closed. It returns the escalations it closed.
	EffectResolve(ctx context.Context, p *ResolveParams) (*ResolveResult, error)
	// ClaimListByEffect returns the claims on an effect's actions: the key itself and
	// every key that starts with it and a colon, in key order.
	ClaimListByEffect(ctx context.Context, effectKey string) ([]reconcile.Claim, error)

	// RunStart records a run as running.
	RunStart(ctx context.Context, p *StartRunParams) (*reconcile.Run, error)
	// RunFinish records how a running run ended.
	RunFinish(ctx context.Context, p *FinishRunParams) (*reconcile.Run, error)
	// RunGet returns one run, or reconcile.ErrNotFound.
	RunGet(ctx context.Context, id string) (*reconcile.Run, error)
	// RunList lists the latest runs, newest first (by start time, then id),
	// without their results: Run reads one. At most p.Limit of them (0:
	// all), and only those with p.Status when it is set.
	RunList(ctx context.Context, p *RunsParams) ([]reconcile.Run, error)

	// IndexesDefer drops the evidence table's indexes before an ingest of
	// bytes of new input (0: not known), when that input adds more records
	// than the ledger holds (driver.BuildIndexesAfter), the store's role
	// owns the table and no other session is using it; it says whether it
	// did. Their definitions stay in the ledger until IndexesBuild builds
	// them again, so that a process that dies in between leaves them to
	// the next. Without them every query gives what it gave, more slowly.
	IndexesDefer(ctx context.Context, bytes int64) (bool, error)
	// IndexesBuild builds every index IndexesDefer dropped, and returns
	// the names of those it could not build, its role not owning the
	// table (none otherwise). SchemaMigrate builds them too.
	IndexesBuild(ctx context.Context) (pending []string, err error)

	// SchemaMigrate applies every pending migration, in order, in one transaction,
	// and returns those it applied: none the second time. Two processes that
	// migrate at once serialize.
	SchemaMigrate(ctx context.Context) ([]Migration, error)
	// SchemaCheck fails with an error wrapping reconcile.ErrSchema when the
	// ledger has pending migrations, is ahead of this binary, or was migrated
	// with a migration that differs from the embedded one.
	SchemaCheck(ctx context.Context) error

	// Close releases the connections.
	Close() error
}

// Config is what both drivers take when they open a ledger.
type Config struct {
	// Now is the clock. Leases are measured with it, so tests move a fake
	// one instead of sleeping. Default time.Now.
	Now func() time.Time
}

// Clock returns c.Now, or time.Now when unset, always in UTC.
func (c Config) Clock() func() time.Time {
	now := c.Now
	if now == nil {
		now = time.Now
	}
	return func() time.Time { return now().UTC() }
}

// RecordParams describes an effect about to be attempted.
type RecordParams struct {
	Key      string // reconcile.EffectKey(runID, step, seq)
	RunID    string
	Step     string
	Provider string
	Request  json.RawMessage // must be a JSON object
	// ParentKey and Depth are set for a compensation: the effect it
	// compensates, and 1.
	ParentKey string
	Depth     int
}

// RecordResult is the effect row and whether this call created it.
type RecordResult struct {
	Effect  reconcile.Effect
	Created bool
}

// ConfirmParams confirms an effect after its external call.
type ConfirmParams struct {
	Key        string
	ExternalID string
	Response   json.RawMessage // optional
}

// AbandonParams closes an effect by decision.
type AbandonParams struct {
	Key string
}

// ClaimParams asks for the lease on an action key.
type ClaimParams struct {
	Key   string
	Owner string        // who claims: host:pid:run, for people reading the table
	TTL   time.Duration // the lease length; 0 means no deadline
	// Effect, when set, is recorded as attempted in the same transaction as
	// a claim that is taken (a compensation's own effect row): both land or
	// neither. A key that exists with the same request is left as it is;
	// with another request the claim fails with *reconcile.KeyReusedError.
	Effect *RecordParams
}

// RenewParams extends a lease held under Fence.
type RenewParams struct {
	Key   string
	Fence int64
	TTL   time.Duration // 0 means no deadline
}

// SettleParams ends a claim held under Fence.
type SettleParams struct {
	Key     string
	Fence   int64
	Owner   string          // who settles, for the orphan report
	Success bool            // true completes the claim, false fails it
	Result  json.RawMessage // what the action made (ids), on success
	Error   string          // why it failed, on failure
	// Confirm, when set with Success, confirms an attempted effect in the
	// same transaction as a settle that is written: the action's effect
	// and its claim agree, whatever crashes. An effect that is not
	// attempted any more is left as it is.
	Confirm *ConfirmParams
}

// StartRunParams starts a run.
type StartRunParams struct {
	ID   string
	Args json.RawMessage
}

// FinishRunParams ends a run.
type FinishRunParams struct {
	ID     string
	Status reconcile.RunStatus // succeeded or failed
	Result json.RawMessage
}

// RunsParams filter Runs.
type RunsParams struct {
	Limit  int                 // at most this many; 0: all
	Status reconcile.RunStatus // only runs with this status; empty: any
}

// LinkParams name effects by key and by provider id.
type LinkParams struct {
	Keys []string // effect keys
	IDs  []string // provider ids: external ids of effects, transaction ids of evidence
	// ExcludeSources leaves these sources' evidence out (EvidenceListLinked).
	ExcludeSources []int64
}

// FindingsParams are a run's findings: every effect it classified, and
// every unexpected transaction.
type FindingsParams struct {
	RunID         string
	Discrepancies []reconcile.Discrepancy
	// Sources are the sources the run matched as new: those no run had
	// matched yet are noted as matched by this one (SourceRecord.RunID),
	// with its findings.
	Sources []int64
	// Marked, when set, is called once the findings and their records'
	// details are written and before their states: the states take the
	// effects they classify off the list of those a run left without a
	// state, which the run's mark writes (MatchSummary.Marked).
	Marked func() error
}

// RunFinding is a finding with the run that made it.
type RunFinding struct {
	RunID string
	At    time.Time // when the run started
	reconcile.Discrepancy
}

// EscalateParams opens an escalation.
type EscalateParams struct {
	Key     string // the pager's dedup key
	Subject string
	Class   reconcile.Class
	Reason  string
	RunID   string
}

// EscalateResult is the escalation and whether this call opened it.
type EscalateResult struct {
	Escalation reconcile.Escalation
	Opened     bool
}

// MarkPagedParams records a page.
type MarkPagedParams struct {
	Key        string
	Generation int
}

// AcknowledgeParams take an escalation in hand.
type AcknowledgeParams struct {
	Key string
	By  string
}

// EscalationsParams filter Escalations.
type EscalationsParams struct {
	Subject string // this effect, and the compensations of it
	Open    bool   // only those not resolved
	// ResolvedSince, when set, keeps only those resolved after it: what a
	// run reads of the people's decisions since the last run, without
	// reading every escalation ever raised.
	ResolvedSince time.Time
}

// ResolveParams are a person's decision on an effect.
type ResolveParams struct {
	EffectKey string
	As        reconcile.Resolution
	Note      string
	By        string // who decided: a user name
	// ExternalID confirms an attempted effect resolved as confirmed with the
	// provider's id; without it the effect row is left as it is.
	ExternalID string
}

// ResolveResult is what a resolution changed.
type ResolveResult struct {
	Effect reconcile.Effect
	Closed []reconcile.Escalation
}

// FindingsResult says what recording the findings changed in the ledger.
type FindingsResult struct {
	// Confirmed counts attempted effects that evidence confirmed and that
	// are now confirmed with the transaction's id.
	Confirmed int
}

// SerialBuilder is a Store that builds an index on one processor (SQLite):
// the job builds the indexes a large ingest deferred while the run reads
// and matches on another. PostgreSQL builds them in processes of its own,
// which would take the processor its reads of the scope need: there the
// ledger has them built once it has read the effects in scope, or before
// its reads when they look the indexes up (MatchParams.Indexes;
// docs/PERFORMANCE.md).
type SerialBuilder interface {
	Store
	SerialBuilds()
}

// ParallelWriter is a Store on which several sources can be written at
// once, each in a transaction of its own (PostgreSQL; SQLite has one writer
// at a time).
type ParallelWriter interface {
	Store
	ParallelWrites()
}
