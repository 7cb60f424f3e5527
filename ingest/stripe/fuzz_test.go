package stripe

import (
	"context"
	"testing"
	"time"

	"reconcile"
	"reconcile/ingest/ingesttest"
)

// check checks what must hold for any input (see ingesttest.Check).
func check(t *testing.T, parse parseFunc, data []byte) []ingesttest.Call {
	return ingesttest.Check(t, data, provider, func(sink reconcile.RowSink) error {
		return parse(context.Background(), data, sink)
	})
}

func FuzzParseItemized(f *testing.F) {
	for _, data := range ingesttest.Inputs(f, "testdata/itemized_*.csv") {
		f.Add(data, false)
	}
	f.Add([]byte(itemizedHeader+"\n"+itemizedRow(baseRow())+"\n"), false)
	f.Add([]byte("currency;gross;reporting_category;created;source_id\nEUR;\"1.234,5\";charge;2025-01-01 00:00:00;ch_1\n"), true)
	f.Add([]byte("currency,gross,reporting_category,created_utc,source_id\nkwd,1.2345,refund,2025-01-01T00:00:00Z,\"re_\"\"1\"\n"), false)
	berlin := time.FixedZone("CET", 3600)
	f.Fuzz(func(t *testing.T, data []byte, comma bool) {
		calls := check(t, itemized(ItemizedOptions{Location: berlin, DecimalComma: comma}), data)
		// A CSV row has exactly one outcome: no line may carry two.
		seen := map[int]string{}
		for _, c := range calls {
			if prev, ok := seen[c.Line]; ok {
				t.Fatalf("line %d has a %s and a %s", c.Line, prev, c.Call)
			}
			seen[c.Line] = c.Call
		}
	})
}

func FuzzParseEvents(f *testing.F) {
	for _, data := range ingesttest.Inputs(f, "testdata/events*") {
		f.Add(data)
	}
	f.Add([]byte(`{"received_at":1,"body":"{\"id\":\"evt_1\",\"object\":\"event\",\"type\":\"payout.paid\",\"created\":1,\"data\":{\"object\":{\"id\":\"po_1\",\"amount\":5,\"currency\":\"jpy\"}}}"}`))
	f.Add([]byte("[\n{\"id\":\"evt_1\",\"type\":\"charge.refunded\",\"created\":2,\"data\":{\"object\":{\"id\":\"ch_1\",\"refunds\":{\"data\":[{\"id\":\"re_1\",\"amount\":3,\"currency\":\"kwd\"}]}}}}\n]"))
	f.Add([]byte("{\n\"id\": \"evt_1\"\n}\n{\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		check(t, events, data)
	})
}
