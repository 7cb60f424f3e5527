package driver

// BuildIndexesAfter says whether an ingest of an input of bytes (0 when
// not known) into a ledger that holds rows evidence records should drop
// the evidence table's indexes before writing and build them again after
// its rows, in its transaction. Building an index by sorting every row
// costs a fraction of keeping it up one row at a time (a 1M-effect night:
// its five lookup indexes kept up took about half of its 12-14 s ingest,
// built after it 2.6 s on PostgreSQL and 2.5 s on SQLite), so it pays when
// the input adds more records than the ledger holds: a first night, a
// backfill, not the nights after. The input's records are counted at one
// per bytesPerRecord bytes, fewer than report lines hold, so that the
// estimate errs towards keeping the indexes up.
func BuildIndexesAfter(rows, bytes int64) bool { return bytes > 0 && rows < bytes/bytesPerRecord }

// bytesPerRecord is what an input is taken to hold per record.
const bytesPerRecord = 512
