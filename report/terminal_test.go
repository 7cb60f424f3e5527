package report

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"reconcile"
)

func TestPrintable(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"run_1:charge:0", "run_1:charge:0"},
		{"Café crème 東京 €", "Café crème 東京 €"},
		{`C:\data\nov.csv`, `C:\data\nov.csv`},
		{"a\x1b[31mred\x1b[0m", `a\x1b[31mred\x1b[0m`},
		{"one\r\ntwo\tthree", `one\r\ntwo\tthree`},
		{"nul\x00 bell\a del\x7f", `nul\x00 bell\a del\x7f`},
		{"csi\u009b31m nel\u0085", `csi\u009b31m nel\u0085`},
		{"latin1 caf\xe9, lone \x9b", `latin1 caf\xe9, lone \x9b`},
		{"rlo \u202egnp.exe line\u2028sep", `rlo \u202egnp.exe line\u2028sep`},
	}
	for _, tc := range tests {
		if got := Printable(tc.in); got != tc.want {
			t.Errorf("Printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// forged tries to draw on the terminal: a colour, a cleared screen, a
// carriage return and a line of its own, a C1 control sequence introducer.
const forged = "\x1b[31m\x1b[2J\r\nFORGED\tline\u009b1m\x7f"

// checkTerminal fails when out holds a control character other than a
// newline, or a line that the forged text made.
func checkTerminal(t *testing.T, what, out string) {
	t.Helper()
	for _, r := range out {
		if r != '\n' && (r < 0x20 || r == 0x7f || 0x80 <= r && r < 0xa0) {
			t.Errorf("%s wrote the raw control character %U:\n%s", what, r, out)
			break
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "FORGED") {
			t.Errorf("%s has a forged line %q", what, line)
		}
	}
	if !strings.Contains(out, `\x1b[31m`) {
		t.Errorf("%s does not show the escape as \\x1b:\n%s", what, out)
	}
}

func TestSummaryEscapesControlCharacters(t *testing.T) {
	r := &Result{RunID: "rec_1" + forged, AsOf: "2026-11-30T00:00:00Z" + forged, Counts: map[string]int{},
		Inputs: []Input{{URI: "nov" + forged + ".csv", Format: "stripe" + forged, Rows: 3}},
		Discrepancies: []Discrepancy{{Class: reconcile.ClassDuplicated, EffectKey: "k" + forged, Currency: "EUR",
			Actions: []Action{
				{Kind: reconcile.ActionCompensate, Key: "k" + forged + ":compensate", Outcome: reconcile.OutcomeApplied, Made: "re_1" + forged},
				{Kind: reconcile.ActionCompensate, Key: "k2", Outcome: reconcile.OutcomeRefused, Note: "provider said" + forged},
			}}},
		Orphans:  []Orphan{{Key: "o" + forged, StaleOwner: "a" + forged, CurrentOwner: "b" + forged, StaleResult: "re_2" + forged}},
		Rejected: []Rejected{{URI: "nov" + forged + ".csv", Line: 2, Reason: "bad amount " + forged}},
	}
	var buf bytes.Buffer
	Summary(&buf, r)
	checkTerminal(t, "Summary", buf.String())
}

func TestPushMetricsErrorsHideTheURLSecrets(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, "refused "+req.URL.String()+" "+req.Header.Get("Authorization")+" "+string(body[:min(len(body), 10)]))
	}))
	defer srv.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for _, base := range []string{srv.URL, closed.URL} {
		raw := strings.Replace(base, "://", "://pushuser:PUSHPASSWORD@", 1) + "/?token=QUERYSECRET"
		for _, r := range []*Result{sampleResult(), unfinished()} {
			err := PushMetrics(context.Background(), raw, "reconcile", r)
			if err == nil {
				t.Fatalf("PushMetrics(%s) = nil, want an error", base)
			}
			for _, secret := range []string{"PUSHPASSWORD", "QUERYSECRET"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("PushMetrics error = %q, shows %s", err, secret)
				}
			}
		}
	}
	// The user name and password still reach the gateway.
	var user, pass string
	ok := false
	ok2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { user, pass, ok = req.BasicAuth() }))
	defer ok2.Close()
	if err := PushMetrics(context.Background(), strings.Replace(ok2.URL, "://", "://pushuser:PUSHPASSWORD@", 1), "reconcile", sampleResult()); err != nil {
		t.Fatal(err)
	}
	if !ok || user != "pushuser" || pass != "PUSHPASSWORD" {
		t.Errorf("the gateway got basic auth %q:%q (%v), want pushuser:PUSHPASSWORD", user, pass, ok)
	}
}
