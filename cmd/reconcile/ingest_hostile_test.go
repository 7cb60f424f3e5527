package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"reconcile/ledgerdb"
)

// seededKeys are the effects seedLedger records.
var seededKeys = []string{"run_1:charge:0", "run_1:charge:1", "run_1:charge:2", "run_1:charge:3", "run_1:charge:4",
	"run_1:refund:0", "run_1:charge:1:compensate:ch_old", "run_1:notify_buyer:0"}

// ledgerState is what a run may change in a ledger: its sources and its
// effects, as JSON.
func ledgerState(t *testing.T, ledger string) string {
	t.Helper()
	ctx := context.Background()
	store, _, err := openLedger(ctx, ledger, ledgerdb.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	srcs, err := store.SourceList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	state := []any{srcs}
	for _, k := range seededKeys {
		e, err := store.EffectGet(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		state = append(state, e)
	}
	b, _ := json.Marshal(state)
	return string(b)
}

// A settlement report whose last line is cut in the middle of a row, as
// one still being written is, stops the run with exit status 2 before it
// changes anything; the same report with its last row whole but no final
// line end is read.
func TestHostileCutLastLineStopsTheRun(t *testing.T) {
	t.Parallel()
	ledger := migratedSQLite(t)
	seedLedger(t, ledger)
	before := ledgerState(t, ledger)
	lines := strings.Split(strings.TrimSuffix(settlement, "\n"), "\n")
	// The refund row, cut in its payment_metadata[effect_key]. (A row cut
	// in its last column looks whole, and is read.)
	last := lines[len(lines)-2]
	cut := strings.Join(lines[:len(lines)-2], "\n") + "\n" + last[:strings.Index(last, "run_1:charge:0")+5]
	path := writeFile(t, "2026-11-01.itemized.csv", cut)
	for _, args := range [][]string{{"run", "--ledger", ledger, path}, {"ingest", "--ledger", ledger, path}, {"ingest", "--check", path}} {
		code, _, errOut := reconcileCmd(t, args...)
		if code != exitUsage || !strings.Contains(errOut, path+": stripe-itemized: line 8: the last line is cut in the middle of a row (no line terminator, 11 of 12 fields)") ||
			!strings.Contains(errOut, "the file may still be being written; run again when it is complete") {
			t.Errorf("%s: exit %d, stderr %q; want %d naming the file, line 8 and what to do", args[0], code, errOut, exitUsage)
		}
	}
	if after := ledgerState(t, ledger); after != before {
		t.Errorf("the refused run changed the ledger:\nbefore %s\nafter  %s", before, after)
	}

	code, r, errOut := runJSON(t, "--ledger", ledger, writeFile(t, "whole.itemized.csv", strings.TrimSuffix(settlement, "\n")))
	if code != exitPerson || len(r.Inputs) != 1 || r.Inputs[0].Rows != 8 || r.Inputs[0].Evidence != 7 {
		t.Errorf("whole last row without a line end: exit %d, inputs %+v, %s; want 8 rows read", code, r.Inputs, errOut)
	}
}

// A row dated 2100 is rejected for being later than the run's clock; the
// rows beside it are evidence.
func TestHostileFutureRowIsRejected(t *testing.T) {
	t.Parallel()
	ledger := migratedSQLite(t)
	seedLedger(t, ledger)
	lines := strings.Split(settlement, "\n")
	data := strings.Join([]string{lines[0], lines[1], lines[2], lines[3],
		"txn_9,2100-01-01 00:00:00,eur,30.00,0.90,29.10,charge,ch_2,ch_2,pi_2,run_1:charge:2,", lines[8]}, "\n") + "\n"
	path := writeFile(t, "future.itemized.csv", data)
	code, r, errOut := runJSON(t, "--ledger", ledger, "--as-of", "2026-11-03", path)
	if code != 0 && code != exitPerson {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if len(r.Rejected) != 1 || r.Rejected[0].Line != 5 || r.Rejected[0].URI != path ||
		!strings.HasPrefix(r.Rejected[0].Reason, "dated 2100-01-01T00:00:00Z, later than this run's clock (") ||
		!strings.HasSuffix(r.Rejected[0].Reason, ") plus 5 minutes") {
		t.Errorf("rejected = %+v; want line 5 of %s, dated later than the clock", r.Rejected, path)
	}
	if in := r.Inputs[0]; in.Rows != 5 || in.Evidence != 4 || in.Rejected != 1 {
		t.Errorf("input = %+v; want 5 rows: 4 evidence, 1 rejected", in)
	}
}

// testModeEvent is a Stripe test-mode event for run_1:charge:0, as the
// sandbox writes them.
const testModeEvent = `{"id":"evt_t1","object":"event","type":"charge.succeeded","created":1793523600,"livemode":false,` +
	`"data":{"object":{"id":"ch_0","object":"charge","amount":1000,"amount_captured":1000,"currency":"eur","payment_intent":"pi_0",` +
	`"status":"succeeded","captured":true,"livemode":false,"metadata":{"effect_key":"run_1:charge:0"}}}}` + "\n"

// A run reads live events unless told --livemode=false: test-mode events
// are ignored, with the reason, and are no evidence.
func TestHostileTestModeEventsAreNotLiveEvidence(t *testing.T) {
	t.Parallel()
	path := writeFile(t, "events.jsonl", testModeEvent)
	for _, tc := range []struct {
		flags             []string
		evidence, ignored int
		reason            string
	}{
		{nil, 0, 1, "test-mode event (livemode false); this run reads live events (--livemode=false reads test mode)"},
		{[]string{"--livemode=false"}, 1, 0, ""},
		{[]string{"--livemode=true"}, 0, 1, "test-mode event (livemode false); this run reads live events (--livemode=false reads test mode)"},
	} {
		code, out, errOut := reconcileCmd(t, append(append([]string{"ingest", "--check", "--json", "-"}, tc.flags...), path)...)
		var got struct {
			Inputs []struct {
				Rows, Evidence, Ignored int
				Reasons                 map[string]int `json:"ignored_reasons"`
			}
		}
		if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || len(got.Inputs) != 1 {
			t.Fatalf("ingest --check %v: exit %d, %v: %s", tc.flags, code, err, errOut)
		}
		in := got.Inputs[0]
		if in.Rows != 1 || in.Evidence != tc.evidence || in.Ignored != tc.ignored || (tc.reason != "" && in.Reasons[tc.reason] != 1) {
			t.Errorf("ingest --check %v: %+v; want %d evidence, %d ignored as %q", tc.flags, in, tc.evidence, tc.ignored, tc.reason)
		}
	}

	// In a run, the test-mode event is evidence of the charge only with
	// --livemode=false.
	for _, tc := range []struct {
		flag     string
		evidence int
	}{{"--livemode=true", 0}, {"--livemode=false", 1}} {
		ledger := migratedSQLite(t)
		seedLedger(t, ledger)
		code, r, errOut := runJSON(t, "--ledger", ledger, "--as-of", "2026-11-03", tc.flag, path)
		if code != 0 && code != exitPerson {
			t.Fatalf("run %s: exit %d: %s", tc.flag, code, errOut)
		}
		seen := r.Counts["confirmed"] > 0 // or, as the matcher may have it, a finding that names the charge
		for _, d := range r.Discrepancies {
			seen = seen || slices.Contains(d.Transactions, "ch_0")
		}
		if r.Inputs[0].Evidence != tc.evidence || seen != (tc.evidence == 1) {
			t.Errorf("run %s: inputs %+v, ch_0 seen %v (counts %v); want %d evidence", tc.flag, r.Inputs, seen, r.Counts, tc.evidence)
		}
	}
}
