package ingest_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the Adyen zones without the machine's zoneinfo

	"reconcile/ingest"
	"reconcile/ingest/csvmap"
)

// cutCase is a well-formed input of one format, read with opt.
type cutCase struct {
	name string // the file name the input is written under
	data []byte
	opt  *ingest.Options
}

// cutCases are inputs of every line-based format, each ending in a valid
// row: the fixtures of the parsers' own tests.
func cutCases(t *testing.T) []cutCase {
	t.Helper()
	file := func(path string) []byte {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	mapping, err := os.Open("csvmap/testdata/acmebank.json")
	if err != nil {
		t.Fatal(err)
	}
	defer mapping.Close()
	m, err := csvmap.LoadMapping(mapping)
	if err != nil {
		t.Fatal(err)
	}
	ams, _ := time.LoadLocation("Europe/Amsterdam")
	la, _ := time.LoadLocation("America/Los_Angeles")
	return []cutCase{
		{"balance.itemized.csv", []byte(itemized + "txn_6,2026-11-01 15:00:00,eur,5.00,0.15,4.85,charge,ch_6,ch_6,run_1:charge:6,\n"), nil},
		{"itemized_balance_change.csv", file("stripe/testdata/itemized_balance_change.csv"), nil},
		{"settlement_detail.csv", file("adyen/testdata/settlement_detail.csv"), &ingest.Options{AdyenZones: map[string]*time.Location{"ShopEU_ACCOUNT": ams}, AdyenDefaultZone: la}},
		{"stl_comma.csv", file("paypal/testdata/stl_comma.csv"), nil},
		{"stl_tab.txt", file("paypal/testdata/stl_tab.txt"), nil},
		{"acmebank.csv", file("csvmap/testdata/acmebank.csv"), &ingest.Options{Format: "csv", Mapping: m}},
		{"events.jsonl", []byte(liveEvents), nil},
	}
}

// liveEvents is a dump of two live charge events, one line each.
const liveEvents = `{"id":"evt_1","object":"event","type":"charge.succeeded","created":1793523600,"livemode":true,"data":{"object":{"id":"ch_1","object":"charge","amount":1000,"currency":"eur","status":"succeeded","captured":true,"metadata":{"effect_key":"run_1:charge:0"}}}}
{"id":"evt_2","object":"event","type":"charge.succeeded","created":1793527200,"livemode":true,"data":{"object":{"id":"ch_2","object":"charge","amount":2000,"currency":"eur","status":"succeeded","captured":true,"metadata":{"effect_key":"run_1:charge:1"}}}}
`

// unterminated returns data without its trailing line ends and the blank
// or delimiter-only lines a spreadsheet leaves at the end, and the offset
// at which its last line starts.
func unterminated(data []byte) ([]byte, int) {
	for {
		data = bytes.TrimRight(data, "\r\n")
		i := bytes.LastIndexByte(data, '\n') + 1
		if len(bytes.Trim(data[i:], ",;\t \"")) > 0 {
			return data, i
		}
		data = data[:i]
	}
}

func counts(in *ingest.Input) [4]int { return [4]int{in.Rows, in.Evidence, in.Rejected, in.Ignored} }

// A complete, valid last line without a line end is read as it would be
// with one: many files lack a final newline.
func TestCompleteLastLineWithoutTerminatorIsRead(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range cutCases(t) {
		data, _ := unterminated(tc.data)
		whole, _, err := read(t, write(t, dir, "whole/"+tc.name, append(bytes.Clone(data), '\n')), tc.opt)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		in, _, err := read(t, write(t, dir, "open/"+tc.name, data), tc.opt)
		if err != nil {
			t.Errorf("%s without a final line end: %v; want it read", tc.name, err)
			continue
		}
		if counts(in) != counts(whole) || in.Evidence == 0 {
			t.Errorf("%s without a final line end: rows, evidence, rejected, ignored %v; with one %v", tc.name, counts(in), counts(whole))
		}
	}
}

// An input whose last line is cut in the middle, as one still being
// written is, cannot be read at all: the error names the file and the line
// and says to run again.
func TestCutLastLineIsUnreadable(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range cutCases(t) {
		data, last := unterminated(tc.data)
		line := 1 + bytes.Count(data[:last], []byte("\n"))
		for _, at := range []int{(len(data) - last) / 2, 1} {
			cut := data[:last+at]
			path := write(t, dir, tc.name, cut)
			_, _, err := read(t, path, tc.opt)
			var ie *ingest.InputError
			if !errors.As(err, &ie) || ie.URI != path {
				t.Errorf("%s cut after %q: error %v; want an InputError naming the file", tc.name, cut[last:], err)
				continue
			}
			for _, want := range []string{"line " + strconv.Itoa(line) + ":", "may still be being written", "run again when it is complete"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s cut after %q: %q does not say %q", tc.name, cut[last:], err, want)
				}
			}
		}
	}
}

// The message counts the fields a cut row has, and says when it ends
// inside quotes; a complete row that is rejected is no more acceptable.
func TestCutLastLineMessages(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ last, want string }{
		{"txn_6,2026-11-01 15:00:00,eur,5.00,0.15,4.85,charge,ch_6,ch_6,run_1:cha",
			"balance.csv: stripe-itemized: line 7: the last line is cut in the middle of a row (no line terminator, 10 of 11 fields): the file may still be being written; run again when it is complete"},
		{`txn_6,2026-11-01 15:00:00,eur,5.00,0.15,4.85,charge,ch_6,"ch_6,run_1`,
			"line 7: the last line is cut in the middle of a row (no line terminator, inside a quoted field)"},
		{"txn_6,2026-11-01 15:00:00,eur,5.0.0,0.15,4.85,charge,ch_6,ch_6,run_1:charge:6,",
			`line 7: the last line has no line terminator and its row is rejected (column gross: amount "5.0.0" is not a number)`},
	} {
		path := write(t, dir, "balance.csv", []byte(itemized+tc.last))
		_, _, err := read(t, path, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("last line %q: error %v; want %q", tc.last, err, tc.want)
		}
	}
	// A JSON value cut off, or one the parser rejects, on an unterminated
	// last line.
	for _, tc := range []struct{ last, want string }{
		{`{"id":"evt_3","object":"event","type":"charge.succeeded","created":17935`,
			"line 3: the last line is cut in the middle of an event (no line terminator, incomplete JSON): the file may still be being written"},
		{`{"id":"evt_3","object":"event"}`,
			"line 3: the last line has no line terminator and its event is rejected (not a Stripe event: no id or no type)"},
	} {
		_, _, err := read(t, write(t, dir, "events.jsonl", []byte(liveEvents+tc.last)), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("last line %q: error %v; want %q", tc.last, err, tc.want)
		}
	}
}

// A camt.053 statement cut anywhere is unreadable already: XML must close
// every element.
func TestCutCamtIsUnreadable(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("camt", "testdata", "v02_batch.xml"))
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.TrimRight(data, "\n")
	for _, n := range []int{len(data) / 2, len(data) - 1, len(data) - len("</Document>")} {
		_, _, err := read(t, write(t, t.TempDir(), "statement.xml", data[:n]), nil)
		var ie *ingest.InputError
		if !errors.As(err, &ie) {
			t.Errorf("camt cut at %d of %d bytes: %v; want an InputError", n, len(data), err)
		}
	}
}

// clock is the run's clock in the tests of evidence from the future.
var clock = time.Date(2026, 12, 1, 19, 40, 0, 0, time.UTC)

// Evidence dated later than the run's clock, by more than the skew
// allowed, is rejected with the date and the clock; the rows around it
// are evidence, and every row is counted once.
func TestFutureEvidenceIsRejected(t *testing.T) {
	row := func(txn, at string) string {
		return txn + "," + at + ",eur,5.00,0.15,4.85,charge,ch_" + txn + ",ch_" + txn + ",run_1:charge:" + txn + ",\n"
	}
	skew := clock.Add(ingest.MaxClockSkew)
	data := itemized +
		row("6", "2100-01-01 00:00:00") +
		row("7", skew.Format("2006-01-02 15:04:05")) + // just within the skew
		row("8", skew.Add(time.Second).Format("2006-01-02 15:04:05"))
	opt := &ingest.Options{Now: func() time.Time { return clock.In(time.FixedZone("CET", 3600)) }}
	in, c, err := read(t, write(t, t.TempDir(), "future.itemized.csv", []byte(data)), opt)
	if err != nil {
		t.Fatal(err)
	}
	if counts(in) != [4]int{8, 5, 3, 0} {
		t.Errorf("rows, evidence, rejected, ignored = %v; want 8, 5, 3, 0", counts(in))
	}
	var got []string
	for _, r := range c.rejected {
		got = append(got, strconv.Itoa(r.Line)+": "+r.Reason)
	}
	want := []string{
		"5: column gross: amount \"1500.5\" has more decimals than the currency allows (0)",
		"7: dated 2100-01-01T00:00:00Z, later than this run's clock (2026-12-01T19:40:00Z) plus 5 minutes",
		"9: dated 2026-12-01T19:45:01Z, later than this run's clock (2026-12-01T19:40:00Z) plus 5 minutes",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rejected:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, e := range c.evidence {
		if e.Time.After(skew) {
			t.Errorf("evidence %s dated %v, after the clock's %v", e.TxID, e.Time, skew)
		}
	}
}

// Without a clock of its own a read goes by time.Now: a row dated 2100
// is rejected, one dated yesterday is not.
func TestFutureEvidenceByTheSystemClock(t *testing.T) {
	yesterday := time.Now().UTC().Add(-24 * time.Hour).Format("2006-01-02 15:04:05")
	data := itemized + "txn_6," + yesterday + ",eur,5.00,0.15,4.85,charge,ch_6,ch_6,,\ntxn_7,2100-01-01 00:00:00,eur,5.00,0.15,4.85,charge,ch_7,ch_7,,\n"
	in, c, err := read(t, write(t, t.TempDir(), "now.itemized.csv", []byte(data)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if in.Evidence != 5 || in.Rejected != 2 || c.rejected[1].Line != 8 || !strings.Contains(c.rejected[1].Reason, "dated 2100-01-01T00:00:00Z, later than this run's clock") {
		t.Errorf("evidence %d, rejected %+v; want 5, and line 8 rejected as from the future", in.Evidence, c.rejected)
	}
}

// stripeEvent is a charge event with the given livemode field: "" leaves
// it out, as hand-written dumps do.
func stripeEvent(id, livemode string) string {
	if livemode != "" {
		livemode = `"livemode":` + livemode + `,`
	}
	return `{"id":"evt_` + id + `","object":"event","type":"charge.succeeded","created":1793523600,` + livemode +
		`"data":{"object":{"id":"ch_` + id + `","object":"charge","amount":1000,"currency":"eur","status":"succeeded","captured":true}}}` + "\n"
}

// A run reads the events of one mode: live by default, test mode when
// asked. The others are ignored, with the reason, and never evidence. An
// event that does not say is taken for live, as Stripe always says and
// its API is live unless told otherwise.
func TestStripeEventsOfTheOtherModeAreIgnored(t *testing.T) {
	dump := stripeEvent("live", "true") + stripeEvent("test", "false") + stripeEvent("unsaid", "") +
		`{"received_at":1,"body":` + strings.TrimSpace(stripeEvent("wrapped", "false")) + "}\n"
	path := write(t, t.TempDir(), "events.jsonl", []byte(dump))
	for _, tc := range []struct {
		testMode bool
		evidence []string
		reason   string
	}{
		{false, []string{"ch_live", "ch_unsaid"}, "test-mode event (livemode false); this run reads live events (--livemode=false reads test mode)"},
		{true, []string{"ch_test", "ch_wrapped"}, "live event (livemode true); this run reads test-mode events (--livemode=false)"},
	} {
		in, c, err := read(t, path, &ingest.Options{StripeTestMode: tc.testMode})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range c.evidence {
			got = append(got, e.TxID)
		}
		if strings.Join(got, " ") != strings.Join(tc.evidence, " ") || counts(in) != [4]int{4, 2, 0, 2} || in.Ignores[tc.reason] != 2 {
			t.Errorf("test mode %v: evidence %v, rows/evidence/rejected/ignored %v, ignored %v; want %v, and 2 ignored as %q",
				tc.testMode, got, counts(in), in.Ignores, tc.evidence, tc.reason)
		}
	}
}
