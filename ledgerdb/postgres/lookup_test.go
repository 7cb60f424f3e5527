package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/postgres"
	"reconcile/ledgerdb/postgres/pgtest"
)

// A record that names its effect by key is found by that key on every
// later night, whatever the application did to the effect since the
// record was read: its external id changed, the effect deleted and
// written again, a source ingested and never matched, a ledger upgraded.
// What each night's partitions held of earlier evidence is compared.

// appLedger gives a store on a fresh schema, migrated whole (or up to
// migration before, when set), and the application's connection, which
// has written an effect by the statement insert.
func appLedger(t *testing.T, before int, insert string, args ...any) (*postgres.Store, *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	url := pgtest.Schema(t)
	s := open(t, url, time.Now)
	var err error
	if before > 0 {
		err = s.MigrateBefore(ctx, before)
	} else {
		_, err = s.SchemaMigrate(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	app := connect(t, url)
	if _, err := app.Exec(ctx, insert, args...); err != nil {
		t.Fatal(err)
	}
	return s, app
}

// chargeRecord is a Stripe charge of 10.00 EUR that names key.
func chargeRecord(tx, key string) reconcile.Evidence {
	return reconcile.Evidence{Provider: "stripe", TxID: tx, Kind: reconcile.KindCharge, RawKind: "charge", EffectKey: key,
		Amount: reconcile.Money{Minor: 1000, Currency: "EUR"}, Time: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
}

// ingestSource writes records as a source named by hash; keep says
// whether a run ingests it (and matches it next) or it is ingested alone.
func ingestSource(t *testing.T, s *postgres.Store, hash string, keep bool, records ...reconcile.Evidence) int64 {
	t.Helper()
	res, err := s.SourceIngest(context.Background(), &ledgerdb.IngestParams{URI: hash + ".csv", Keep: keep},
		func(w ledgerdb.SourceWriter) (*ledgerdb.SourceRecord, error) {
			for i := range records {
				records[i].URI, records[i].Line = hash+".csv", i+2
				if err := w.Evidence(&records[i]); err != nil {
					return nil, err
				}
			}
			return &ledgerdb.SourceRecord{SourceAccount: reconcile.SourceAccount{Format: "stripe-itemized", Hash: hash,
				Rows: len(records), Evidence: len(records)}}, nil
		})
	if err != nil || res.Duplicate {
		t.Fatalf("SourceIngest(%s) = %+v, %v", hash, res, err)
	}
	return res.SourceID
}

// nightOver matches the sources, one process or one worker of a
// distributed run, confirming every effect in scope with its external id;
// it returns each effect in scope with the ids of the earlier records its
// partition held.
func nightOver(t *testing.T, s *postgres.Store, distribute bool, sources ...int64) map[string][]string {
	t.Helper()
	var (
		mu  sync.Mutex
		got = map[string][]string{}
	)
	match := func(p *ledgerdb.Partition) ([]ledgerdb.Confirmation, error) {
		mu.Lock()
		defer mu.Unlock()
		var earlier []string
		for _, r := range p.Earlier {
			earlier = append(earlier, r.TxID)
		}
		slices.Sort(earlier)
		var out []ledgerdb.Confirmation
		for _, e := range p.Effects {
			got[e.Key] = earlier
			out = append(out, ledgerdb.Confirmation{Key: e.Key, ExternalID: e.ExternalID})
		}
		return out, nil
	}
	matchBy(t, s, distribute, &ledgerdb.MatchParams{RunID: fmt.Sprintf("run_%d", runs.Add(1)), Sources: sources,
		Kinds: map[string]reconcile.Kind{"charge": reconcile.KindCharge, "refund": reconcile.KindRefund}}, match)
	return got
}

// childRecord is a Stripe record of kind that names its charge (its
// parent) by the charge's effect key or transaction.
func childRecord(tx string, kind reconcile.Kind, parentKey, parentTx string) reconcile.Evidence {
	return reconcile.Evidence{Provider: "stripe", TxID: tx, Kind: kind, RawKind: string(kind), ParentEffectKey: parentKey, ParentTxID: parentTx,
		Amount: reconcile.Money{Minor: -200, Currency: "EUR"}, Time: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
}

// runs numbers the runs of nightOver: a run's id is its own.
var runs atomic.Int64

// linkedByKey lists the ids of the records outside exclude that
// EvidenceListLinked finds by key alone.
func linkedByKey(t *testing.T, s *postgres.Store, key string, exclude ...int64) []string {
	t.Helper()
	return linked(t, s, &ledgerdb.LinkParams{Keys: []string{key}, ExcludeSources: exclude})
}

// linked lists the ids of the records EvidenceListLinked finds.
func linked(t *testing.T, s *postgres.Store, p *ledgerdb.LinkParams) []string {
	t.Helper()
	ev, err := s.EvidenceListLinked(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range ev {
		ids = append(ids, e.TxID)
	}
	return ids
}

// The application changes a confirmed charge's external id (or deletes
// the effect and writes it again with the new one) after a night read
// its record; a second charge under the same key, with the new id, comes
// the next night. That night must see the first charge, found by the key
// alone: missing it, it would confirm a charge made twice.
func TestAnEarlierRecordIsFoundByKeyAfterItsEffectChanged(t *testing.T) {
	changes := map[string][]string{
		"external id changed": {`UPDATE effect SET external_id = 'ch_new' WHERE key = 'r:charge:1'`},
		"deleted and written again": {`DELETE FROM effect_state WHERE key = 'r:charge:1'`, `DELETE FROM effect WHERE key = 'r:charge:1'`,
			`INSERT INTO effect (key, run_id, step, provider, status, external_id, request, created_at)
			 VALUES ('r:charge:1', 'app_1', 'charge', 'stripe', 'confirmed', 'ch_new', '{"amount": 1000, "currency": "eur"}', '2026-12-01T09:00:00Z')`},
	}
	for name, change := range changes {
		for _, distribute := range []bool{false, true} {
			t.Run(name+map[bool]string{false: "", true: ", distributed"}[distribute], func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				s, app := appLedger(t, 0, insertEffect, "r:charge:1") // external id ch_r:charge:1
				// The charge, and one made twice under its key, which a
				// later night finds by the key alone.
				first := ingestSource(t, s, "night1", true, chargeRecord("ch_r:charge:1", "r:charge:1"), chargeRecord("ch_dup", "r:charge:1"))
				if got, ok := nightOver(t, s, distribute, first)["r:charge:1"]; !ok || got != nil {
					t.Fatalf("first night: in scope %v, earlier records %v", ok, got)
				}
				for _, sql := range change {
					if _, err := app.Exec(ctx, sql); err != nil {
						t.Fatal(err)
					}
				}
				second := ingestSource(t, s, "night2", true, chargeRecord("ch_new", "r:charge:1"))
				got := nightOver(t, s, distribute, second)
				if diff := cmp.Diff(map[string][]string{"r:charge:1": {"ch_dup", "ch_r:charge:1"}}, got); diff != "" {
					t.Errorf("second night's scope and earlier records (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]string{"ch_r:charge:1", "ch_dup", "ch_new"}, linkedByKey(t, s, "r:charge:1")); diff != "" {
					t.Errorf("records linked by key (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// A source ingested alone (or by a run that died before it matched) is
// found by key by the next runs, before any of them matched it and after.
func TestARecordIngestedAloneIsFoundByKey(t *testing.T) {
	s, _ := appLedger(t, 0, insertEffect, "r:charge:1")
	ingestSource(t, s, "alone", false, chargeRecord("ch_twice", "r:charge:1"))
	if diff := cmp.Diff([]string{"ch_twice"}, linkedByKey(t, s, "r:charge:1")); diff != "" {
		t.Errorf("records linked by key before a run (-want +got):\n%s", diff)
	}
	night := ingestSource(t, s, "night1", true, chargeRecord("ch_r:charge:1", "r:charge:1"))
	if diff := cmp.Diff(map[string][]string{"r:charge:1": {"ch_twice"}}, nightOver(t, s, false, night)); diff != "" {
		t.Errorf("first night (-want +got):\n%s", diff)
	}
	later := ingestSource(t, s, "night2", true, chargeRecord("ch_third", "r:charge:1")) // a new charge: in scope again
	if diff := cmp.Diff(map[string][]string{"r:charge:1": {"ch_r:charge:1", "ch_twice"}}, nightOver(t, s, false, later)); diff != "" {
		t.Errorf("second night (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ch_twice", "ch_r:charge:1"}, linkedByKey(t, s, "r:charge:1", later)); diff != "" {
		t.Errorf("records linked by key after the runs (-want +got):\n%s", diff)
	}
}

// A ledger of the release before records were sorted by how they are
// found: its evidence is found by key after the upgrade.
func TestAnUpgradeKeepsEveryRecordFoundByKey(t *testing.T) {
	ctx := context.Background()
	s, app := appLedger(t, 22, insertEffect, "r:charge:1")
	ingestSource(t, s, "old", false, chargeRecord("ch_r:charge:1", "r:charge:1"), chargeRecord("ch_twice", "r:charge:1"))
	if _, err := s.SchemaMigrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Exec(ctx, `UPDATE effect SET external_id = 'ch_new' WHERE key = 'r:charge:1'`); err != nil {
		t.Fatal(err)
	}
	night := ingestSource(t, s, "night1", true, chargeRecord("ch_new", "r:charge:1"))
	if diff := cmp.Diff(map[string][]string{"r:charge:1": {"ch_r:charge:1", "ch_twice"}}, nightOver(t, s, false, night)); diff != "" {
		t.Errorf("first night after the upgrade (-want +got):\n%s", diff)
	}
}

// An attempted effect that a night confirms takes the external id of the
// record that confirms it, unless the application gave it one while the
// run matched: then that record is found by key. A record of a kind that
// does not link (an adjustment) naming the effect by key is found by key
// too, though no partition held it.
func TestARecordIsFoundByKeyWhateverItsEffectsIDBecame(t *testing.T) {
	for _, raced := range []bool{false, true} {
		t.Run(map[bool]string{false: "confirmed", true: "given an id by the application meanwhile"}[raced], func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, app := appLedger(t, 0, `INSERT INTO effect (key, run_id, step, provider, status, request, created_at)
				VALUES ('r:charge:1', 'app_1', 'charge', 'stripe', 'attempted', '{"amount": 1000, "currency": "eur"}', '2026-12-01T09:00:00Z')`)
			adjustment := chargeRecord("adj_1", "r:charge:1")
			adjustment.Kind = reconcile.KindAdjustment
			first := ingestSource(t, s, "night1", true, chargeRecord("ch_a", "r:charge:1"), adjustment)
			_, err := s.PartitionMatch(ctx, &ledgerdb.MatchParams{RunID: "run_1", Sources: []int64{first},
				Kinds: map[string]reconcile.Kind{"charge": reconcile.KindCharge}},
				func(p *ledgerdb.Partition) ([]ledgerdb.Confirmation, error) {
					if raced {
						if _, err := app.Exec(ctx, `UPDATE effect SET external_id = 'ch_b' WHERE key = 'r:charge:1'`); err != nil {
							return nil, err
						}
					}
					return []ledgerdb.Confirmation{{Key: "r:charge:1", ExternalID: "ch_a"}}, nil
				})
			if err != nil {
				t.Fatal(err)
			}
			id := map[bool]string{false: "ch_a", true: "ch_b"}[raced]
			if e, err := s.EffectGet(ctx, "r:charge:1"); err != nil || e.ExternalID != id || e.Status != reconcile.StatusConfirmed {
				t.Fatalf("effect after the first night = %+v, %v; want confirmed with %s", e, err, id)
			}
			second := ingestSource(t, s, "night2", true, chargeRecord("ch_c", "r:charge:1")) // a new charge: in scope again
			if diff := cmp.Diff(map[string][]string{"r:charge:1": {"ch_a"}}, nightOver(t, s, false, second)); diff != "" {
				t.Errorf("second night's scope and earlier records (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"ch_a", "adj_1", "ch_c"}, linkedByKey(t, s, "r:charge:1")); diff != "" {
				t.Errorf("records linked by key (-want +got):\n%s", diff)
			}
		})
	}
}

// A refund names the charge it returns (its parent) by the charge's
// effect key or transaction, and may name its own effect too; an
// adjustment, of a kind that does not link, may name a parent as well. A
// later night that has the charge in scope holds the refunds among its
// earlier records, and EvidenceListLinked finds them all, and the
// adjustment, by the charge's key and id, however the source was read: by
// a run of one process or a distributed one, ingested alone (before a run
// sorted it and after), or by a ledger of the release before (migration
// 023) whose run had sorted it.
func TestAnEarlierRecordIsFoundByItsParent(t *testing.T) {
	for _, how := range []string{"one process", "distributed", "ingested alone", "upgraded"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			before := map[bool]int{true: 23}[how == "upgraded"]
			s, app := appLedger(t, before, insertEffect, "r:charge:1") // external id ch_r:charge:1
			// A refund the application made, whose record names it by key
			// and id, and its charge by key.
			if _, err := app.Exec(ctx, `INSERT INTO effect (key, run_id, step, provider, status, external_id, request, created_at)
				VALUES ('r:refund:1', 'app_1', 'refund', 'stripe', 'confirmed', 're_own', '{"amount": 200, "currency": "eur"}', '2026-12-01T10:00:00Z')`); err != nil {
				t.Fatal(err)
			}
			own := childRecord("re_own", reconcile.KindRefund, "r:charge:1", "")
			own.EffectKey = "r:refund:1"
			records := []reconcile.Evidence{chargeRecord("ch_r:charge:1", "r:charge:1"), own,
				childRecord("re_by_key", reconcile.KindRefund, "r:charge:1", ""),
				childRecord("re_by_tx", reconcile.KindRefund, "", "ch_r:charge:1"),
				childRecord("adj_by_tx", reconcile.KindAdjustment, "", "ch_r:charge:1")}
			byParent := &ledgerdb.LinkParams{Keys: []string{"r:charge:1"}, IDs: []string{"ch_r:charge:1"}}
			all := []string{"ch_r:charge:1", "re_own", "re_by_key", "re_by_tx", "adj_by_tx"}
			first := ingestSource(t, s, "night1", how != "ingested alone", records...)
			switch how {
			case "one process", "distributed":
				nightOver(t, s, how == "distributed", first)
				// The run sorts its own sources; left to the next run, its
				// records would be read whole again.
				var sorted bool
				if err := app.QueryRow(ctx, `SELECT sorted FROM source WHERE id = $1`, first).Scan(&sorted); err != nil || !sorted {
					t.Errorf("the run's source sorted after the run: %v, %v; want true", sorted, err)
				}
			case "ingested alone":
				if diff := cmp.Diff(all, linked(t, s, byParent)); diff != "" {
					t.Errorf("records linked before a run sorted them (-want +got):\n%s", diff)
				}
			case "upgraded":
				// The release before sorted a source by key alone.
				if _, err := app.Exec(ctx, `SELECT sort_sources(ARRAY[$1::bigint])`, first); err != nil {
					t.Fatal(err)
				}
				if _, err := s.SchemaMigrate(ctx); err != nil {
					t.Fatal(err)
				}
			}
			second := ingestSource(t, s, "night2", true, chargeRecord("ch_new", "r:charge:1")) // a new charge: in scope again
			earlier := []string{"ch_r:charge:1", "re_by_key", "re_by_tx", "re_own"}
			want := map[string][]string{"r:charge:1": earlier}
			if how == "ingested alone" || how == "upgraded" { // no run has reconciled the refund yet
				want["r:refund:1"] = earlier
			}
			if diff := cmp.Diff(want, nightOver(t, s, false, second)); diff != "" {
				t.Errorf("second night's scope and earlier records (-want +got):\n%s", diff)
			}
			byParent.ExcludeSources = []int64{second}
			if diff := cmp.Diff(all, linked(t, s, byParent)); diff != "" {
				t.Errorf("records linked by the charge's key and id (-want +got):\n%s", diff)
			}
		})
	}
}
