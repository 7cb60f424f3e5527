package ledgerdb

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Driver names.
const (
	Postgres = "postgres"
	SQLite   = "sqlite"
)

// Location is a parsed ledger URL: which driver, and what to hand it.
type Location struct {
	Driver string
	DSN    string // a postgres:// URL, or a SQLite file path
}

// ParseURL reads a ledger URL: postgres:// or postgresql:// for PostgreSQL,
// sqlite:PATH (or sqlite://PATH) or a plain file path for SQLite. An empty
// string means the embedded default file.
func ParseURL(s string) (Location, error) {
	switch {
	case s == "":
		p, err := DefaultSQLitePath()
		if err != nil {
			return Location{}, err
		}
		return Location{Driver: SQLite, DSN: p}, nil
	case strings.HasPrefix(s, "postgres://"), strings.HasPrefix(s, "postgresql://"):
		return Location{Driver: Postgres, DSN: s}, nil
	case strings.HasPrefix(s, "sqlite://"):
		return sqlitePath(s, strings.TrimPrefix(s, "sqlite://"))
	case strings.HasPrefix(s, "sqlite:"):
		return sqlitePath(s, strings.TrimPrefix(s, "sqlite:"))
	case strings.Contains(s, "://"):
		scheme, _, _ := strings.Cut(s, "://")
		return Location{}, fmt.Errorf("ledger URL %q: unknown scheme %q (want postgres://, postgresql://, sqlite:PATH or a file path)", Redact(s), scheme)
	}
	return sqlitePath(s, s)
}

func sqlitePath(orig, p string) (Location, error) {
	if p == "" {
		return Location{}, fmt.Errorf("ledger URL %q: no file path after sqlite:", orig)
	}
	if p == ":memory:" {
		return Location{}, fmt.Errorf("ledger URL %q: an in-memory ledger would forget everything; give a file path", orig)
	}
	return Location{Driver: SQLite, DSN: p}, nil
}

// DefaultSQLitePath is the embedded default ledger file:
// $XDG_DATA_HOME/reconcile/ledger.db, else ~/.local/share/reconcile/ledger.db.
func DefaultSQLitePath() (string, error) {
	dir := os.Getenv("XDG_DATA_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("default ledger: no home directory (%v); pass --ledger or set RECONCILE_LEDGER", err)
		}
		dir = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(dir, "reconcile", "ledger.db"), nil
}

// Redact hides the password in a URL so that it can be printed.
func Redact(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	userinfo, host, ok := strings.Cut(rest, "@")
	if !ok || strings.Contains(userinfo, "/") {
		return s
	}
	if user, _, hasPass := strings.Cut(userinfo, ":"); hasPass {
		return scheme + "://" + user + ":xxxxx@" + host
	}
	return s
}
