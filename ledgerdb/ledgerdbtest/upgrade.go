package ledgerdbtest

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"reconcile/ledgerdb"
)

// OldEvidence writes, as the release before evidence_detail did, a source
// (id 7) and two of its records with their description, metadata and raw
// row: SQL that both ledgers run.
const OldEvidence = `INSERT INTO source (id, hash, uri, ingested_at) VALUES (7, 'h', 's.csv', '2026-12-01T10:00:00Z');
INSERT INTO evidence (source_id, seq, line, provider, tx_id, kind, raw_kind, amount_minor, currency, fee_minor, occurred_at,
	pending, failed, effect_key, parent_effect_key, payment_intent, parent_tx_id, description, metadata, raw)
VALUES (7, 1, 2, 'stripe', 'ch_1', 'charge', 'charge', 1000, 'EUR', 30, '2026-12-01T10:00:00Z', false, false, 'r:charge:1', '', '', '',
	'Order 1', '{"order": "1"}', 'ch_1,10.00,eur'),
(7, 3, 4, 'stripe', 'ch_3', 'charge', 'charge', 1000, 'EUR', 30, NULL, false, false, '', '', '', '', '', NULL, 'ch_3,10.00,eur')`

// UpgradeKeepsEveryRecordsDetails checks that store, whose ledger holds
// OldEvidence, keeps every record's description, metadata and raw row
// through SchemaMigrate.
func UpgradeKeepsEveryRecordsDetails(t *testing.T, store ledgerdb.Store) {
	ctx := context.Background()
	if _, err := store.SchemaMigrate(ctx); err != nil {
		t.Fatal(err)
	}
	_, ev, _, err := store.SourceGetRows(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ev {
		got = append(got, fmt.Sprintf("%s %d %q %q %v", e.TxID, e.Line, e.Description, e.Raw, e.Metadata))
	}
	want := []string{`ch_1 2 "Order 1" "ch_1,10.00,eur" map[order:1]`, `ch_3 4 "" "ch_3,10.00,eur" map[]`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("evidence after the upgrade (-want +got):\n%s", diff)
	}
}
