package ledgerdb

import (
	"strings"
	"testing"
)

func TestParseURLTakesKeywordStringsAsPostgres(t *testing.T) {
	tests := []struct {
		in, dsn string
	}{
		{"host=db dbname=payments user=reconcile password=s3cret",
			"host='db' dbname='payments' user='reconcile' password='s3cret'"},
		{"  host = db\tport=5433  dbname='pay ments' ", "host='db' port='5433' dbname='pay ments'"},
		{`dbname=pay password='it\'s \\ here'`, `dbname='pay' password='it\'s \\ here'`},
		{"host=/var/run/postgresql dbname=x sslmode=disable search_path=t_1", "host='/var/run/postgresql' dbname='x' sslmode='disable' search_path='t_1'"},
		{"service=ledger", "service='ledger'"},
	}
	for _, tc := range tests {
		got, err := ParseURL(tc.in)
		if err != nil || got != (Location{Postgres, tc.dsn}) {
			t.Errorf("ParseURL(%q) = %+v, %v; want %+v", tc.in, got, err, Location{Postgres, tc.dsn})
		}
	}
}

func TestParseURLRefusesWhatIsNeitherPathNorKeywords(t *testing.T) {
	for _, in := range []string{
		"host=db dbname=payments user reconcile password=s3cret", // a keyword without its =
		"host=db dbname=payments password='s3cret",               // an unterminated quote
		"password=s3cret",                  // nothing to connect to
		"user=app password=s3cret=x extra", // a word that is no keyword=value
		"ledger=s3cret.db",                 // a file name that reads as a keyword: sqlite: says it is one
		"host=db 9x=s3cret",                // not a keyword name
		"host=db\x00 password=s3cret",
	} {
		got, err := ParseURL(in)
		if err == nil {
			t.Errorf("ParseURL(%q) = %+v, want an error", in, got)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("ParseURL(%q) error shows the password: %v", in, err)
		}
	}
	// Plain paths stay SQLite files, even with an = or a space in them.
	for _, in := range []string{"/data/a=b/ledger.db", "./x=y.db", "my ledger.db", "sqlite:host=db.db"} {
		got, err := ParseURL(in)
		if err != nil || got.Driver != SQLite {
			t.Errorf("ParseURL(%q) = %+v, %v; want a SQLite path", in, got, err)
		}
	}
}

func TestRedactKeywordsAndURLs(t *testing.T) {
	for in, want := range map[string]string{
		"host=db dbname=payments user=reconcile password=s3cret":            "host=db dbname=payments user=reconcile password=xxxxx",
		"host='db' dbname='pay ments' password='s3 cret' sslpassword=k3y!!": "host=db dbname='pay ments' password=xxxxx sslpassword=xxxxx",
		"host=db password='s3cret":                                          "xxxxx",
		"https://hooks.example.com/services/T000/B000/XXXXSECRET":           "https://hooks.example.com/xxxxx",
		"postgres://app:s3cret@db/pay?password=s3cret":                      "postgres://app:xxxxx@db/pay?password=xxxxx",
		"postgres://app@db/pay?options=-c search_path=x":                    "postgres://app@db/pay?options=xxxxx",
		"host=db password=a://s3cret":                                       "host=db password=xxxxx",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSecretsOfALedgerLocation(t *testing.T) {
	for in, want := range map[string]string{
		"host='db' password='s3 cret'":                  "s3 cret",
		"postgres://app:s3cret@db/pay":                  "s3cret",
		"postgres://app@db/pay?sslpassword=s3cret&x=1":  "s3cret",
		"host=db dbname=payments sslpassword='s3cret' ": "s3cret",
	} {
		if got := Secrets(in); !contains(got, want) {
			t.Errorf("Secrets(%q) = %q, want %q among them", in, got, want)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
