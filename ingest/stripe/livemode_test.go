package stripe

import (
	"context"
	"strings"
	"testing"

	"reconcile"
	"reconcile/ingest/ingesttest"
)

// Both decoders read livemode: the fast one, and encoding/json, which
// takes an event the fast one gives up on (here for a key in capitals).
// An event without it, or with null, is live; one whose livemode is no
// boolean is rejected.
func TestLivemodeDecidesTheRunAnEventBelongsTo(t *testing.T) {
	const charge = `{"id":"ch_1","object":"charge","amount":500,"currency":"eur","status":"succeeded","captured":true}`
	const slow = `{"id":"ch_1","object":"charge","amount":500,"currency":"eur","status":"succeeded","captured":true,"Receipt_Email":"a@example.org"}`
	for _, tc := range []struct {
		name, line string
		live, test string // the call a live run and a test-mode run make
	}{
		{"live", evt("evt_1", "charge.succeeded", charge, `"livemode":true`), "evidence", "ignore"},
		{"test", evt("evt_1", "charge.succeeded", charge, `"livemode":false`), "ignore", "evidence"},
		{"test, slow", evt("evt_1", "charge.succeeded", slow, `"livemode":false`), "ignore", "evidence"},
		{"live, slow", evt("evt_1", "charge.succeeded", slow, `"livemode":true`), "evidence", "ignore"},
		{"unsaid", evt("evt_1", "charge.succeeded", charge), "evidence", "ignore"},
		{"null", evt("evt_1", "charge.succeeded", charge, `"livemode":null`), "evidence", "ignore"},
		{"wrapped test", `{"received_at":1,"body":` + evt("evt_1", "charge.succeeded", charge, `"livemode":false`) + `}`, "ignore", "evidence"},
		{"a string", evt("evt_1", "charge.succeeded", charge, `"livemode":"false"`), "reject", "reject"},
	} {
		for _, mode := range []struct {
			testMode bool
			want     string
		}{{false, tc.live}, {true, tc.test}} {
			calls, err := ingesttest.Run(func(sink reconcile.RowSink) error {
				return ParseEvents(context.Background(), strings.NewReader(tc.line+"\n"), EventsOptions{TestMode: mode.testMode}, sink)
			})
			if err != nil || len(calls) != 1 || calls[0].Call != mode.want {
				t.Errorf("%s, test mode %v: %v, %v; want one %s", tc.name, mode.testMode, calls, err, mode.want)
				continue
			}
			if c := calls[0]; c.Call == "ignore" && !strings.Contains(c.Reason, "(livemode ") {
				t.Errorf("%s, test mode %v: ignored as %q, which does not name livemode", tc.name, mode.testMode, c.Reason)
			}
		}
	}
}
