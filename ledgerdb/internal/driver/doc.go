// Package driver holds what the PostgreSQL and SQLite drivers of ledgerdb
// share and no caller of a Store needs: the decisions a Store method makes
// from the rows it read (the same attempt, a stale fence, an orphaned
// claim, what a run's findings write), the encodings of stored columns, the
// migrations' bookkeeping, the batching of an ingest and the Spill that cuts
// a run into partitions. Keeping them here keeps each rule in one place
// while ledgerdb's own surface stays what its callers use.
package driver
