package reconcile

// SourceAccount is the account of one source read: its name and content,
// and what became of its rows. Every row is evidence, rejected or ignored:
// Rows = Evidence + Rejected + Ignored. The ingest gives it (with the
// totals the rows add up to), and the ledger's manifest keeps it.
type SourceAccount struct {
	URI      string
	ETag     string
	Format   string
	Hash     string // hex SHA-256 of the content as read
	Bytes    int64
	Rows     int
	Evidence int
	Rejected int
	Ignored  int
}
