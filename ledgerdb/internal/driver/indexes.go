package driver

// BuildIndexesAfter says whether an ingest of bytes of new input (0 when
// not known) into a ledger that holds rows evidence records should drop
// the evidence table's indexes before it and build them again after its
// rows. Building an index by sorting every row once costs less than
// keeping it up one row at a time, so it pays when the input adds more
// records than the ledger holds: a first night, a backfill, not the
// nights after (a 10M-effect first night: ingest 1:38 with the indexes
// kept up, 1:16 with them built after it; at 1M no difference, its
// ingest being bound by the parsers). The input's records are counted at
// one per bytesPerRecord bytes, fewer than report lines hold, so that the
// estimate errs towards keeping the indexes up.
func BuildIndexesAfter(rows, bytes int64) bool { return bytes > 0 && rows < bytes/bytesPerRecord }

// bytesPerRecord is what an input is taken to hold per record.
const bytesPerRecord = 512
