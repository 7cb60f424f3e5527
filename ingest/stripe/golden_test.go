package stripe

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
	_ "time/tzdata" // Europe/Berlin without relying on the system's zoneinfo

	"reconcile"
	"reconcile/ingest/ingesttest"
)

// parseFunc is ParseItemized or ParseEvents with its options bound.
type parseFunc func(ctx context.Context, data []byte, sink reconcile.RowSink) error

func itemized(opt ItemizedOptions) parseFunc {
	return func(ctx context.Context, data []byte, sink reconcile.RowSink) error {
		return ParseItemized(ctx, bytes.NewReader(data), opt, sink)
	}
}

func events(ctx context.Context, data []byte, sink reconcile.RowSink) error {
	return ParseEvents(ctx, bytes.NewReader(data), EventsOptions{}, sink)
}

// testEvents is events for a dump of Stripe's test mode, as the fixtures
// in testdata are ("livemode": false).
func testEvents(ctx context.Context, data []byte, sink reconcile.RowSink) error {
	return ParseEvents(ctx, bytes.NewReader(data), EventsOptions{TestMode: true}, sink)
}

// run parses data and returns the calls and the error.
func run(parse parseFunc, data []byte) ([]ingesttest.Call, error) {
	return ingesttest.Run(func(sink reconcile.RowSink) error { return parse(context.Background(), data, sink) })
}

// TestGolden parses each fixture in testdata and compares every sink call,
// and the error, with its .golden file. go test -update rewrites them.
func TestGolden(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file  string
		parse parseFunc
	}{
		{"itemized_balance_change.csv", itemized(ItemizedOptions{})},
		{"itemized_payout_reconciliation.csv", itemized(ItemizedOptions{Location: berlin})},
		{"itemized_excel_semicolon.csv", itemized(ItemizedOptions{DecimalComma: true})},
		{"itemized_missing_columns.csv", itemized(ItemizedOptions{})},
		{"events.jsonl", testEvents},
		{"events_array.json", testEvents},
		{"events_cli.json", testEvents},
		{"events_array_truncated.json", testEvents},
		{"events_array_syntax.json", testEvents},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("testdata", tc.file)
			calls, err := run(tc.parse, ingesttest.ReadFile(t, path))
			ingesttest.Golden(t, path+".golden", ingesttest.FormatCalls, calls, err)
		})
	}
}

// TestDetect checks each fixture against both detectors.
func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		file             string
		itemized, events bool
	}{
		{"itemized_balance_change.csv", true, false},
		{"itemized_payout_reconciliation.csv", true, false},
		{"itemized_excel_semicolon.csv", true, false},
		{"itemized_missing_columns.csv", false, false},
		{"events.jsonl", false, true},
		{"events_array.json", false, true},
		{"events_cli.json", false, true},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if got := DetectItemized(tc.file, data); got != tc.itemized {
			t.Errorf("DetectItemized(%s) = %v, want %v", tc.file, got, tc.itemized)
		}
		if got := DetectEvents(tc.file, data); got != tc.events {
			t.Errorf("DetectEvents(%s) = %v, want %v", tc.file, got, tc.events)
		}
	}
}
