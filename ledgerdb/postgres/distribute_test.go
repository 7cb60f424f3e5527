package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/postgres/pgtest"
	"reconcile/matcher"
)

// migrated opens a fresh, migrated ledger for t.
func migrated(t *testing.T) *Store {
	s, err := Open(context.Background(), pgtest.Schema(t), ledgerdb.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.SchemaMigrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// A partition is recorded once however many workers match it: River gives
// the partition of a worker it thinks dead to another, and both may finish.
// Here a second worker records the partition while the first is still
// matching it; the first must then record nothing, neither its result nor
// its confirmations. A worker that finishes after its run ended records
// nothing either.
func TestAPartitionMatchedTwiceIsRecordedOnce(t *testing.T) {
	ctx := context.Background()
	s := migrated(t)
	at := time.Now().Add(-time.Hour).UTC()
	const key = "app_1:charge:0"
	if err := s.EffectLoad(ctx, []reconcile.Effect{{Key: key, RunID: "app_1", Step: "charge", Provider: "stripe",
		Status: reconcile.StatusAttempted, CreatedAt: at, Request: json.RawMessage(`{"amount": 1000, "currency": "eur"}`)}}); err != nil {
		t.Fatal(err)
	}
	in, err := s.SourceIngest(ctx, &ledgerdb.IngestParams{URI: "report.csv", ETag: "e1"},
		func(w ledgerdb.SourceWriter) (*ledgerdb.SourceRecord, error) {
			ev := reconcile.Evidence{Provider: "stripe", TxID: "ch_0", Kind: reconcile.KindCharge, RawKind: "charge", Time: at, URI: "report.csv",
				Line: 2, Amount: reconcile.Money{Minor: 1000, Currency: "EUR"}, EffectKey: key, Raw: "ch_0"}
			return &ledgerdb.SourceRecord{SourceAccount: reconcile.SourceAccount{Format: "test", Hash: "h1", Rows: 1, Evidence: 1}}, w.Evidence(&ev)
		})
	if err != nil {
		t.Fatal(err)
	}
	var (
		late      *matching
		lateRead  *read
		otherDone bool
	)
	d := &ledgerdb.Distribution{Workers: 1, Worker: "first", Input: []byte(`{}`)}
	d.Match = func(_ []byte, part *ledgerdb.Partition) ([]ledgerdb.Confirmation, []byte, error) {
		if len(part.Effects) != 1 || part.Effects[0].Key != key || len(part.Evidence) != 1 {
			t.Errorf("partition %d: %d effects, %d records; want the one effect and its record", part.Index, len(part.Effects), len(part.Evidence))
		}
		// Another worker was given the same partition, matched it, and
		// recorded it first: with no confirmation.
		m, r, err := s.stagedPartition(ctx, "run_1", part.Index, &ledgerdb.Distribution{Worker: "second"})
		if err != nil {
			return nil, nil, err
		}
		ok, err := s.recordPartition(ctx, m, r, nil, []byte(`"second"`), func(pgx.Tx) error { otherDone = true; return nil })
		if err != nil || !ok {
			t.Errorf("the second worker's record = %v, %v; want it recorded", ok, err)
		}
		late, lateRead = m, r
		return []ledgerdb.Confirmation{{Key: key, ExternalID: "ch_0"}}, []byte(`"first"`), nil
	}
	sum, results, err := s.PartitionDistribute(ctx, &ledgerdb.MatchParams{RunID: "run_1", Sources: []int64{in.SourceID},
		Kinds: matcher.StepKinds()}, d)
	if err != nil {
		t.Fatal(err)
	}
	if !otherDone || len(results) != 1 || string(results[0]) != `"second"` || sum.Confirmed != 0 {
		t.Errorf("results %q, confirmed %d; want the second worker's result alone, nothing confirmed", results, sum.Confirmed)
	}
	var states int
	var status string
	if err := s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM effect_state), (SELECT status FROM effect WHERE key = $1)`, key).
		Scan(&states, &status); err != nil {
		t.Fatal(err)
	}
	if states != 0 || status != "attempted" {
		t.Errorf("%d states written, effect %s; want the first worker's confirmation not recorded", states, status)
	}

	// The run is over and its partitions unstaged: a worker that finishes
	// now records nothing.
	ok, err := s.recordPartition(ctx, late, lateRead, []ledgerdb.Confirmation{{Key: key, ExternalID: "ch_0"}}, []byte(`"late"`),
		func(pgx.Tx) error { t.Error("a late worker completed its job"); return nil })
	if err != nil || ok {
		t.Errorf("a late worker's record = %v, %v; want nothing recorded", ok, err)
	}
	var staged int
	if err := s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM effect_state) + (SELECT count(*) FROM stage_result)
		+ (SELECT count(*) FROM stage_record) + (SELECT count(*) FROM stage_effect) + (SELECT count(*) FROM stage_partition)`).Scan(&staged); err != nil {
		t.Fatal(err)
	}
	if staged != 0 {
		t.Errorf("%d rows staged or written after the run; want none", staged)
	}
}

// A partition that cannot be matched fails the run at once, with the
// reason, instead of being tried again: the same rows would fail again.
func TestAPartitionThatCannotBeMatchedFailsTheRun(t *testing.T) {
	ctx := context.Background()
	s := migrated(t)
	if err := s.EffectLoad(ctx, []reconcile.Effect{{Key: "app_1:charge:0", RunID: "app_1", Step: "charge", Provider: "stripe",
		Status: reconcile.StatusAttempted, CreatedAt: time.Now().UTC(), Request: json.RawMessage(`{"amount": 1000, "currency": "eur"}`)}}); err != nil {
		t.Fatal(err)
	}
	d := &ledgerdb.Distribution{Workers: 1, Worker: "w1", Input: []byte(`{}`),
		Match: func([]byte, *ledgerdb.Partition) ([]ledgerdb.Confirmation, []byte, error) {
			return nil, nil, errors.New("the effect's request is not what the matcher reads")
		}}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, _, err := s.PartitionDistribute(ctx, &ledgerdb.MatchParams{RunID: "run_1", Kinds: matcher.StepKinds()}, d)
	if err == nil || !strings.Contains(err.Error(), "the effect's request is not what the matcher reads") {
		t.Errorf("PartitionDistribute = %v; want the partition's failure", err)
	}
}

// Unstaging a run empties the staging tables whole only when it can take
// them at once: beside another run that has read one of them in an open
// transaction, it deletes its own rows and goes on. Waiting for the tables
// in its own order, it deadlocked with a run that read them in another
// (its progress reads stage_result, then stage_partition), and PostgreSQL
// failed one of the two.
func TestUnstagingDoesNotWaitForAnotherRunsTables(t *testing.T) {
	ctx := context.Background()
	s := migrated(t)
	if _, err := s.pool.Exec(ctx, `INSERT INTO stage_partition (run_id, idx, count) VALUES ('run_a', 0, 1), ('run_b', 0, 1)`); err != nil {
		t.Fatal(err)
	}
	other, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback(ctx)
	if _, err := other.Exec(ctx, `SELECT count(*) FROM stage_result WHERE run_id = 'run_b'`); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second) // not a wait: an unstaging that waits for the lock never returns
	defer cancel()
	if err := s.unstage(wctx, "run_a"); err != nil {
		t.Fatalf("unstage beside another run's read: %v", err)
	}
	var left []string
	if err := other.QueryRow(ctx, `SELECT coalesce(array_agg(run_id ORDER BY run_id), '{}') FROM stage_partition`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0] != "run_b" {
		t.Errorf("staged partitions left: %q, want the other run's alone", left)
	}
}
