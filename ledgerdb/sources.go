package ledgerdb

import (
	"reconcile"
)

// SourceWriter receives one source's rows inside SourceIngest's transaction.
type SourceWriter interface {
	Evidence(e *reconcile.Evidence) error
	Reject(r *reconcile.Rejected) error
}

// SourceRecord is a source's entry in the manifest: what was read and what
// became of its rows.
type SourceRecord struct {
	ID int64
	reconcile.SourceAccount
	// RunID is the run that matched the source first, which reported what
	// it holds (FindingsParams.Sources); empty while no run has: a source
	// only ingested, or whose run died before it recorded its findings, is
	// new to the next run given it.
	RunID string
}

// IngestParams names the source about to be written.
type IngestParams struct {
	URI  string
	ETag string
	// Keep asks the store to keep what a run's matching reads of the
	// source's records, as written, for the next PartitionMatch whose
	// Sources name it: that run need not read them back.
	Keep bool
}

// IngestResult says how SourceIngest ended.
type IngestResult struct {
	SourceID int64
	// Duplicate is true when the same content was already in the manifest:
	// nothing was written.
	Duplicate bool
	// Coverage is what Coverage gives of the source written: the latest
	// time of each provider's records of each kind, as stored.
	Coverage []CoverageEnd
	// MatchedBy is, of a source its caller found in the manifest, the run
	// that matched it (SourceRecord.RunID).
	MatchedBy string
}
