package ledgerdb

// Migration is one numbered, embedded schema change.
type Migration struct {
	Version  int
	Name     string
	SQL      string
	Checksum string // hex SHA-256 of SQL
}
