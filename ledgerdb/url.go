package ledgerdb

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"reconcile"
)

// Driver names.
const (
	Postgres = "postgres"
	SQLite   = "sqlite"
)

// Location is a parsed ledger URL: which driver, and what to hand it.
type Location struct {
	Driver string
	DSN    string // a postgres:// URL or a keyword/value string, or a SQLite file path
}

// ParseURL reads a ledger URL: postgres:// or postgresql:// or a libpq
// keyword/value string (host=db dbname=payments user=reconcile) for
// PostgreSQL, sqlite:PATH (or sqlite://PATH) or a plain file path for
// SQLite. An empty string means the embedded default file. A string that
// reads as keywords (one with an = and a space, or that starts with
// word=) but is not a well-formed keyword string naming a host, hostaddr,
// port, dbname, user or service is refused rather than taken as a file
// name: it likely holds a password. No error shows the string.
func ParseURL(s string) (Location, error) {
	switch {
	case s == "":
		p, err := defaultSQLitePath()
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
	case looksLikeKeywords(s):
		kv, err := parseKeywords(s)
		if err == nil && !slices.ContainsFunc(kv, func(p keyword) bool { return connectionKeys[p.key] }) {
			err = errors.New("it names no host, hostaddr, port, dbname, user or service")
		}
		if err != nil {
			return Location{}, fmt.Errorf("ledger: the ledger given (not shown: it may hold a password) has an = in it but is not a PostgreSQL keyword/value string: %w; "+
				"give host=... dbname=... user=..., a postgres:// URL, or sqlite:PATH for a file whose name has an =", err)
		}
		return Location{Driver: Postgres, DSN: formatKeywords(kv, false)}, nil
	case strings.Contains(s, "://"):
		scheme, _, _ := strings.Cut(s, "://")
		if strings.ContainsAny(scheme, "/@?#= \t") {
			scheme = "?"
		}
		return Location{}, fmt.Errorf("ledger URL %s: unknown scheme %q (want postgres://, postgresql://, sqlite:PATH or a file path)", reconcile.RedactURL(s), scheme)
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

// defaultSQLitePath is the embedded default ledger file:
// $XDG_DATA_HOME/reconcile/ledger.db, else ~/.local/share/reconcile/ledger.db.
func defaultSQLitePath() (string, error) {
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

// Redact returns a ledger's location without its secrets, to be printed:
// a URL as reconcile.RedactURL gives it (the database's name stays), a
// keyword/value string with its password and sslpassword hidden, a file
// path as it is. A keyword string that does not parse is not shown.
func Redact(s string) string {
	switch {
	case urlLike(s):
		return reconcile.RedactURL(s)
	case looksLikeKeywords(s):
		kv, err := parseKeywords(s)
		if err != nil {
			return reconcile.Redacted
		}
		return formatKeywords(kv, true)
	}
	return s
}

// Secrets returns the passwords a ledger's location holds, for
// reconcile.Scrub to hide in a driver's errors that may quote them: each
// as it is, escaped as a keyword string writes it, and word by word, since
// a driver's own redaction may have hidden only its first word.
func Secrets(s string) []string {
	switch {
	case urlLike(s):
		return reconcile.URLSecrets(s)
	case !looksLikeKeywords(s):
		return nil // a file path
	}
	kv, err := parseKeywords(s)
	if err != nil {
		return []string{s}
	}
	var out []string
	for _, p := range kv {
		if secretKeys[p.key] {
			out = append(out, p.value, quoteEscaper.Replace(p.value))
			out = append(out, strings.Fields(p.value)...)
		}
	}
	return out
}

// connectionKeys are the libpq keywords that say where to connect: a
// keyword string must name one of them.
var connectionKeys = map[string]bool{"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true, "service": true}

// secretKeys are the libpq keywords whose values are secrets.
var secretKeys = map[string]bool{"password": true, "sslpassword": true}

// keyword is one keyword=value pair of a libpq connection string.
type keyword struct{ key, value string }

// looksLikeKeywords says whether s was meant as a libpq keyword/value
// string rather than a file path: it has an = and a space, or it starts
// with a word and an =.
func looksLikeKeywords(s string) bool {
	if !strings.Contains(s, "=") {
		return false
	}
	if strings.ContainsAny(s, " \t\n\r\v\f") {
		return true
	}
	key, _, _ := strings.Cut(s, "=")
	return validKey(key)
}

// urlLike says whether s is a URL (scheme://...) rather than a keyword
// string, whose values may hold a :// of their own.
func urlLike(s string) bool {
	head := s
	if i := strings.IndexAny(head, "= \t\n\r\v\f"); i >= 0 {
		head = head[:i]
	}
	return strings.Contains(head, "://")
}

// parseKeywords reads a libpq keyword/value string as libpq and pgconn do:
// pairs separated by spaces, spaces allowed around the =, a value quoted
// with ' when it has spaces, a backslash escaping the next character. Its
// errors name a pair by its position, never by its text.
func parseKeywords(s string) ([]keyword, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, errors.New("it holds a NUL byte")
	}
	const space = " \t\n\r\v\f"
	var out []keyword
	s = strings.TrimLeft(s, space)
	for n := 1; s != ""; n++ {
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return nil, fmt.Errorf("word %d has no =", n)
		}
		key := strings.TrimRight(s[:eq], space)
		if !validKey(key) {
			return nil, fmt.Errorf("word %d is not keyword=value", n)
		}
		s = strings.TrimLeft(s[eq+1:], space)
		var b strings.Builder
		quoted := strings.HasPrefix(s, "'")
		if quoted {
			s = s[1:]
		}
		i := 0
		for ; i < len(s); i++ {
			c := s[i]
			if quoted && c == '\'' || !quoted && strings.IndexByte(space, c) >= 0 {
				break
			}
			if c == '\\' && i+1 < len(s) {
				i++
				c = s[i]
			} else if c == '\\' {
				break // a trailing backslash is dropped, as libpq does
			}
			b.WriteByte(c)
		}
		if quoted {
			if i == len(s) {
				return nil, fmt.Errorf("the value of keyword %d has no closing quote", n)
			}
			i++
		}
		out = append(out, keyword{key, b.String()})
		s = strings.TrimLeft(s[i:], space)
	}
	return out, nil
}

// validKey says whether s can be a libpq keyword or a run-time parameter.
func validKey(s string) bool {
	for i, c := range s {
		if c != '_' && !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return s != ""
}

// formatKeywords writes pairs back as a keyword string: every value quoted
// for the driver, or for people only where it must be, with the secrets
// hidden.
func formatKeywords(kv []keyword, redact bool) string {
	parts := make([]string, len(kv))
	for i, p := range kv {
		v := p.value
		switch {
		case redact && secretKeys[p.key]:
			v = reconcile.Redacted
		case !redact || v == "" || strings.ContainsAny(v, " \t\n\r\v\f'\\"):
			v = "'" + quoteEscaper.Replace(v) + "'"
		}
		parts[i] = p.key + "=" + v
	}
	return strings.Join(parts, " ")
}

// quoteEscaper escapes a value for a keyword string.
var quoteEscaper = strings.NewReplacer(`\`, `\\`, `'`, `\'`)
