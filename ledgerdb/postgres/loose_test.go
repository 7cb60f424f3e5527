package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/postgres"
)

// A run sorts the records of its own sources that a later night finds by
// key or by parent into evidence_loose (migration 022): a source the run
// ingested itself from the rows its ingest kept, one ingested before from
// the ledger. Both must leave exactly the same rows, each one the record
// evidence holds, to its number (seq) past rejected rows, its time to the
// microsecond and its raw kind and fee: a row that differs is a record a
// later night reads twice (a charge made twice) or not at all (a charge
// redelivered).
func TestAKeptNightSortsItsRecordsAsOneReadFromTheLedger(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(seed, 7))
			records, rejects := randomNight(r)
			others, otherRejects := randomNight(r)
			var loose [2][]string
			for i, keep := range []bool{true, false} {
				s, app := appLedger(t, 0, insertEffect, "r:charge:0")
				for k := 1; k < 12; k++ { // effects with and without an external id the records give
					if _, err := app.Exec(context.Background(), insertEffect, fmt.Sprintf("r:charge:%d", k)); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := app.Exec(context.Background(), `UPDATE effect SET external_id = NULL, status = 'attempted' WHERE key LIKE '%3' OR key LIKE '%7'`); err != nil {
					t.Fatal(err)
				}
				// A second source, read from the ledger in both runs:
				// its loose records with no transaction make the run
				// read its sources whole.
				source := ingestWithRejects(t, s, "night.csv", keep, records, rejects)
				other := ingestWithRejects(t, s, "webhooks.csv", false, others, otherRejects)
				nightOver(t, s, false, source, other)
				loose[i] = looseRows(t, app)
				if stray := strayLooseRows(t, app); len(stray) > 0 {
					t.Errorf("kept %v: rows of evidence_loose that evidence does not hold:\n%v", keep, stray)
				}
			}
			if len(loose[1]) == 0 {
				t.Fatal("the night left no loose records: the world tests nothing")
			}
			if diff := cmp.Diff(loose[1], loose[0]); diff != "" {
				t.Errorf("evidence_loose (-read from the ledger +kept by the run's ingest):\n%s", diff)
			}
		})
	}
}

// randomNight is a night's records that name effects by key, by their
// transaction or payment intent, or a parent by key or transaction, of
// kinds that link and kinds that do not, some with no transaction, and the
// positions of the rows rejected among them.
func randomNight(r *rand.Rand) ([]reconcile.Evidence, map[int]bool) {
	kinds := []reconcile.Kind{reconcile.KindCharge, reconcile.KindCharge, reconcile.KindRefund, reconcile.KindFee, reconcile.KindAdjustment, reconcile.KindDispute}
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var records []reconcile.Evidence
	for i := range 40 + r.IntN(40) {
		k := kinds[r.IntN(len(kinds))]
		key := fmt.Sprintf("r:charge:%d", r.IntN(14))
		e := reconcile.Evidence{Provider: "stripe", TxID: fmt.Sprintf("%s_%d", k, i), Kind: k, RawKind: fmt.Sprintf("raw %s %d", k, r.IntN(3)),
			Amount: reconcile.Money{Minor: int64(r.IntN(5000)) - 1000, Currency: []string{"EUR", "usd"}[r.IntN(2)]}, Fee: int64(r.IntN(90)),
			Time: t0.Add(time.Duration(r.Int64N(int64(48 * time.Hour)))), Pending: r.IntN(9) == 0, Failed: r.IntN(11) == 0}
		switch r.IntN(7) {
		case 0:
			e.TxID = "ch_" + key // the effect's external id
		case 1:
			e.TxID = ""
		case 2:
			e.Time = time.Time{}
		case 3:
			e.Time = time.Date(1999, 12, 31, 23, 59, 59, 999_999_999, time.UTC) // before PostgreSQL's epoch, cut short
		}
		switch r.IntN(6) {
		case 0, 1, 2:
			e.EffectKey = key
		case 3:
			e.ParentEffectKey = key
		case 4:
			e.ParentTxID = "ch_" + key
		}
		if r.IntN(4) == 0 {
			e.PaymentIntent = fmt.Sprintf("pi_%d", r.IntN(9))
		}
		if r.IntN(5) == 0 {
			e.EffectKey = fmt.Sprintf("r:charge:%d", r.IntN(14)) // names one effect by key, maybe another by id
		}
		records = append(records, e)
	}
	rejects := map[int]bool{}
	for range r.IntN(6) {
		rejects[r.IntN(len(records))] = true
	}
	return records, rejects
}

// ingestWithRejects writes records as the source uri, with a rejected row
// before each record whose position rejects holds.
func ingestWithRejects(t *testing.T, s *postgres.Store, uri string, keep bool, records []reconcile.Evidence, rejects map[int]bool) int64 {
	t.Helper()
	res, err := s.SourceIngest(context.Background(), &ledgerdb.IngestParams{URI: uri, Keep: keep},
		func(w ledgerdb.SourceWriter) (*ledgerdb.SourceRecord, error) {
			line := 1
			for i := range records {
				if rejects[i] {
					line++
					if err := w.Reject(&reconcile.Rejected{URI: uri, Line: line, Reason: "amount \"ten\" is not a number", Raw: "ten"}); err != nil {
						return nil, err
					}
				}
				line++
				e := records[i]
				e.URI, e.Line = uri, line
				if err := w.Evidence(&e); err != nil {
					return nil, err
				}
			}
			return &ledgerdb.SourceRecord{SourceAccount: reconcile.SourceAccount{Format: "stripe-itemized", Hash: uri,
				Rows: line - 1, Evidence: len(records), Rejected: len(rejects)}}, nil
		})
	if err != nil || res.Duplicate {
		t.Fatalf("SourceIngest = %+v, %v", res, err)
	}
	return res.SourceID
}

// looseRows lists evidence_loose, a row a line.
func looseRows(t *testing.T, app *pgx.Conn) []string {
	t.Helper()
	return textRows(t, app, `SELECT l::text FROM evidence_loose l ORDER BY source_id, seq`)
}

// strayLooseRows lists the rows of evidence_loose that evidence does not hold.
func strayLooseRows(t *testing.T, app *pgx.Conn) []string {
	t.Helper()
	return textRows(t, app, `SELECT l::text FROM (SELECT * FROM evidence_loose EXCEPT SELECT * FROM evidence) l`)
}

func textRows(t *testing.T, app *pgx.Conn, sql string) []string {
	t.Helper()
	rows, _ := app.Query(context.Background(), sql)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}
