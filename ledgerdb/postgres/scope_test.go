package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/internal/driver"
	"reconcile/ledgerdb/postgres"
	"reconcile/ledgerdb/postgres/pgtest"
)

// scopeOf runs a PartitionMatch over no sources, confirming the effects
// named, and returns the keys of the effects in its scope.
func scopeOf(t *testing.T, s *postgres.Store, confirm ...string) []string {
	return scopeBy(t, s, false, confirm...)
}

// scopeBy is scopeOf, through PartitionDistribute (one worker, in this
// process) when distribute is set.
func scopeBy(t *testing.T, s *postgres.Store, distribute bool, confirm ...string) []string {
	t.Helper()
	var (
		mu   sync.Mutex
		keys []string
	)
	match := func(p *ledgerdb.Partition) ([]ledgerdb.Confirmation, error) {
		mu.Lock()
		defer mu.Unlock()
		var out []ledgerdb.Confirmation
		for _, e := range p.Effects {
			keys = append(keys, e.Key)
			if slices.Contains(confirm, e.Key) {
				out = append(out, ledgerdb.Confirmation{Key: e.Key, ExternalID: e.ExternalID})
			}
		}
		return out, nil
	}
	matchBy(t, s, distribute, &ledgerdb.MatchParams{RunID: "run_s"}, match)
	sort.Strings(keys)
	return keys
}

// matchBy runs a PartitionMatch, or, when distribute is set, a
// PartitionDistribute with one worker in this process, match answering
// for each partition.
func matchBy(t *testing.T, s *postgres.Store, distribute bool, params *ledgerdb.MatchParams,
	match func(*ledgerdb.Partition) ([]ledgerdb.Confirmation, error)) {
	t.Helper()
	ctx := context.Background()
	var err error
	if distribute {
		_, _, err = s.PartitionDistribute(ctx, params, &ledgerdb.Distribution{Workers: 1, Worker: "w1",
			Match: func(_ []byte, p *ledgerdb.Partition) ([]ledgerdb.Confirmation, []byte, error) {
				confs, err := match(p)
				return confs, []byte(`{}`), err
			}})
	} else {
		// As a run matches: the mark goes on beside, and is waited for.
		params.MarkBeside = true
		var sum *ledgerdb.MatchSummary
		if sum, err = s.PartitionMatch(ctx, params, match); err == nil && sum.Marked != nil {
			err = sum.Marked()
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

// insertEffect is an application's charge, written through plain SQL.
const insertEffect = `INSERT INTO effect (key, run_id, step, provider, status, external_id, request, created_at)
VALUES ($1, 'app_1', 'charge', 'stripe', 'confirmed', 'ch_' || $1, '{"amount": 1000, "currency": "eur"}', '2026-12-01T09:00:00Z')`

// An effect written by a transaction that began before a run read its
// scope and committed after is in the next run's scope: a run finds the
// effects written since the last by their transactions' ids, from the
// oldest transaction the last run could not see on, not from the newest
// it saw.
func TestAnEffectCommittedAfterARunReadIsInTheNextScope(t *testing.T) {
	ctx := context.Background()
	s, url := migrated(t)
	app := connect(t, url)
	if _, err := app.Exec(ctx, insertEffect, "r:charge:1"); err != nil {
		t.Fatal(err)
	}
	slow, err := connect(t, url).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := slow.Exec(ctx, insertEffect, "r:charge:2"); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Exec(ctx, insertEffect, "r:charge:3"); err != nil { // a later transaction, committed before the run
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"r:charge:1", "r:charge:3"}, scopeOf(t, s, "r:charge:1", "r:charge:3")); diff != "" {
		t.Errorf("first run's scope (-want +got):\n%s", diff)
	}
	if err := slow.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Exec(ctx, insertEffect, "r:charge:4"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"r:charge:2", "r:charge:4"}, scopeOf(t, s)); diff != "" {
		t.Errorf("next run's scope (-want +got):\n%s", diff)
	}
	// A session's temporary table of the list's name does not take the
	// list's rows.
	if _, err := app.Exec(ctx, `CREATE TEMP TABLE effect_new (xid xid8, key text)`); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Exec(ctx, insertEffect, "r:charge:7"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"r:charge:2", "r:charge:4", "r:charge:7"}, scopeOf(t, s, "r:charge:7")); diff != "" {
		t.Errorf("scope after an insert beside a temporary effect_new (-want +got):\n%s", diff)
	}
	// An effect whose key the application changes is a new effect.
	if _, err := app.Exec(ctx, `UPDATE effect SET key = 'r:charge:5' WHERE key = 'r:charge:1'`); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"r:charge:2", "r:charge:4", "r:charge:5"}, scopeOf(t, s)); diff != "" {
		t.Errorf("scope after a key changed (-want +got):\n%s", diff)
	}
	// An abandoned effect is out of scope until it is not abandoned, one
	// that no run has seen too.
	if _, err := app.Exec(ctx, insertEffect, "r:charge:6"); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Exec(ctx, `UPDATE effect SET status = 'abandoned' WHERE key IN ('r:charge:2', 'r:charge:6')`); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"r:charge:4", "r:charge:5"}, scopeOf(t, s)); diff != "" {
		t.Errorf("scope after two were abandoned (-want +got):\n%s", diff)
	}
	if _, err := app.Exec(ctx, `UPDATE effect SET status = 'attempted' WHERE key IN ('r:charge:2', 'r:charge:6')`); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"r:charge:2", "r:charge:4", "r:charge:5", "r:charge:6"}, scopeOf(t, s)); diff != "" {
		t.Errorf("scope after they came back (-want +got):\n%s", diff)
	}
}

// A distributed run leaves what a run in one process leaves for the next
// to read its scope from: the effects it left without a state listed, and
// the horizon of its snapshot. Without them the next run reads every
// effect, and each distributed night adds to what it reads.
func TestADistributedRunMarksTheScopeAsOneProcessDoes(t *testing.T) {
	ctx := context.Background()
	for _, distribute := range []bool{false, true} {
		s, url := migrated(t)
		app := connect(t, url)
		for _, key := range []string{"r:charge:1", "r:charge:2"} {
			if _, err := app.Exec(ctx, insertEffect, key); err != nil {
				t.Fatal(err)
			}
		}
		// The oldest transaction running before the run: its horizon is
		// no older (other tests' transactions may hold it back that far).
		var before string
		if err := app.QueryRow(ctx, `SELECT pg_snapshot_xmin(pg_current_snapshot())::text`).Scan(&before); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"r:charge:1", "r:charge:2"}, scopeBy(t, s, distribute, "r:charge:1")); diff != "" {
			t.Errorf("distributed %v: scope (-want +got):\n%s", distribute, diff)
		}
		var pending []string
		var marked bool
		if err := app.QueryRow(ctx, `SELECT (SELECT coalesce(array_agg(key ORDER BY key), '{}') FROM effect_pending),
			coalesce((SELECT horizon >= $1::xid8 FROM scope_mark), false)`, before).Scan(&pending, &marked); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"r:charge:2"}, pending); diff != "" || !marked {
			t.Errorf("distributed %v: listed as left without a state (-want +got):\n%s\nhorizon marked, from before the run on: %v, want true",
				distribute, diff, marked)
		}
	}
}

// A run forgets the new effects it listed below the horizon it leaves:
// no later run reads them from the list again, and the list would
// otherwise grow by every effect ever written. What a transaction still
// open at the run's read writes is kept, and is in the next scope. (The
// horizon is the oldest transaction running anywhere in the cluster, so
// other tests' may keep more listed, never less.)
func TestARunForgetsTheNewEffectsBelowItsHorizon(t *testing.T) {
	ctx := context.Background()
	s, url := migrated(t)
	app := connect(t, url)
	listed := func() (below int, keys []string) {
		t.Helper()
		if err := app.QueryRow(ctx, `SELECT count(*) FILTER (WHERE xid < (SELECT horizon FROM scope_mark)),
			coalesce(array_agg(key ORDER BY key), '{}') FROM effect_new`).Scan(&below, &keys); err != nil {
			t.Fatal(err)
		}
		return below, keys
	}
	for _, key := range []string{"r:charge:1", "r:charge:2"} {
		if _, err := app.Exec(ctx, insertEffect, key); err != nil {
			t.Fatal(err)
		}
	}
	scopeOf(t, s, "r:charge:1", "r:charge:2")
	if below, keys := listed(); below != 0 {
		t.Errorf("after the first run: %d listed effects below the horizon, of %q; want none", below, keys)
	}
	slow, err := connect(t, url).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := slow.Exec(ctx, insertEffect, "r:charge:3"); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Exec(ctx, insertEffect, "r:charge:4"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"r:charge:4"}, scopeOf(t, s, "r:charge:4")); diff != "" {
		t.Errorf("second run's scope (-want +got):\n%s", diff)
	}
	if err := slow.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if below, keys := listed(); below != 0 || !slices.Contains(keys, "r:charge:3") || !slices.Contains(keys, "r:charge:4") {
		t.Errorf("after the second run: %d listed effects below the horizon, of %q; want none, and the two written from it on listed", below, keys)
	}
	if diff := cmp.Diff([]string{"r:charge:3"}, scopeOf(t, s)); diff != "" {
		t.Errorf("third run's scope (-want +got):\n%s", diff)
	}
}

// twoCharges is a migrated ledger holding the application's charges
// r:charge:1 and r:charge:2, and the application's connection.
func twoCharges(t *testing.T) (*postgres.Store, *pgx.Conn) {
	t.Helper()
	s, url := migrated(t)
	app := connect(t, url)
	for _, key := range []string{"r:charge:1", "r:charge:2"} {
		if _, err := app.Exec(context.Background(), insertEffect, key); err != nil {
			t.Fatal(err)
		}
	}
	return s, app
}

// pendingKeys lists the effects listed as left without a state.
func pendingKeys(t *testing.T, app *pgx.Conn) []string {
	t.Helper()
	var keys []string
	if err := app.QueryRow(context.Background(), `SELECT coalesce(array_agg(key ORDER BY key), '{}') FROM effect_pending`).Scan(&keys); err != nil {
		t.Fatal(err)
	}
	return keys
}

// The effects a run leaves without a state are listed for the next run
// only until the run's findings give them one: the findings take their
// keys off the list, which the next run would otherwise read and empty
// again.
func TestFindingsTakeTheirEffectsOffTheListLeftOpen(t *testing.T) {
	ctx := context.Background()
	s, app := twoCharges(t)
	if _, err := s.RunStart(ctx, &ledgerdb.StartRunParams{ID: "run_s", Args: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	scopeOf(t, s)
	if diff := cmp.Diff([]string{"r:charge:1", "r:charge:2"}, pendingKeys(t, app)); diff != "" {
		t.Errorf("listed after the matching (-want +got):\n%s", diff)
	}
	if _, err := s.FindingRecord(ctx, &ledgerdb.FindingsParams{RunID: "run_s", Discrepancies: []reconcile.Discrepancy{
		{Class: reconcile.ClassMissing, EffectKey: "r:charge:1", Provider: "stripe", Currency: "EUR", ExpectedMinor: 1000}}}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"r:charge:2"}, pendingKeys(t, app)); diff != "" {
		t.Errorf("listed after the findings (-want +got):\n%s", diff)
	}
}

// A ledger restored into another cluster, whose transaction ids may be
// behind the last run's, one whose mark is ahead of every transaction, or
// one whose triggers are off, is read whole, and every effect without a
// final state is in scope.
func TestAScopeMarkFromAnotherClusterIsNotTrusted(t *testing.T) {
	ctx := context.Background()
	const on = `; ALTER TABLE effect ENABLE ALWAYS TRIGGER effect_new_insert, ENABLE ALWAYS TRIGGER effect_new_update`
	for name, move := range map[string]string{
		"another cluster":            `UPDATE scope_mark SET system = system + 1, horizon = '3'` + on,
		"ahead of every transaction": `UPDATE scope_mark SET horizon = '999999999999'` + on,
		"a trigger off":              `ALTER TABLE effect ENABLE TRIGGER effect_new_update`,
	} {
		t.Run(name, func(t *testing.T) {
			s, url := migrated(t)
			app := connect(t, url)
			if _, err := app.Exec(ctx, insertEffect, "r:charge:1"); err != nil {
				t.Fatal(err)
			}
			scopeOf(t, s)
			// What a restore would leave: effects without a state that
			// are neither in the list of those left open nor after the
			// mark.
			if _, err := app.Exec(ctx, `DELETE FROM effect_pending; DELETE FROM effect_new; ALTER TABLE effect DISABLE TRIGGER USER`); err != nil {
				t.Fatal(err)
			}
			if _, err := app.Exec(ctx, insertEffect, "r:charge:2"); err != nil {
				t.Fatal(err)
			}
			if _, err := app.Exec(ctx, move); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"r:charge:1", "r:charge:2"}, scopeOf(t, s)); diff != "" {
				t.Errorf("scope (-want +got):\n%s", diff)
			}
		})
	}
}

// A ledger of the release before the list of new effects: its first run
// reads every effect, and its effects left without a state stay in scope.
func TestAnUpgradeKeepsEveryEffectInScope(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Schema(t)
	s := open(t, url, time.Now)
	if err := s.MigrateBefore(ctx, 18); err != nil {
		t.Fatal(err)
	}
	app := connect(t, url)
	for _, key := range []string{"r:charge:1", "r:charge:2"} {
		if _, err := app.Exec(ctx, insertEffect, key); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.SchemaMigrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Exec(ctx, insertEffect, "r:charge:3"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"r:charge:1", "r:charge:2", "r:charge:3"}, scopeOf(t, s, "r:charge:1")); diff != "" {
		t.Errorf("first run's scope (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"r:charge:2", "r:charge:3"}, scopeOf(t, s)); diff != "" {
		t.Errorf("second run's scope (-want +got):\n%s", diff)
	}
}

// An effect written after a run is in the next run's scope even when the
// server crashed in between: the list of new effects, the list of those
// left open and the mark are lost together in a crash, or kept together,
// so that a run never trusts a mark whose list is gone (it reads every
// effect instead). A cluster of the test's own, crashed with an immediate
// stop.
func TestACrashLosesNoNewEffect(t *testing.T) {
	ctx := context.Background()
	c := pgtest.NewCluster(t)
	s := open(t, c.URL, time.Now)
	if _, err := s.SchemaMigrate(ctx); err != nil {
		t.Fatal(err)
	}
	app := connect(t, c.URL)
	for _, key := range []string{"r:charge:1", "r:charge:2"} {
		if _, err := app.Exec(ctx, insertEffect, key); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"r:charge:1", "r:charge:2"}, scopeOf(t, s, "r:charge:1")); diff != "" {
		t.Errorf("first run's scope (-want +got):\n%s", diff)
	}
	if _, err := app.Exec(ctx, insertEffect, "r:charge:3"); err != nil {
		t.Fatal(err)
	}
	c.Crash()
	c.Start()
	if diff := cmp.Diff([]string{"r:charge:2", "r:charge:3"}, scopeOf(t, open(t, c.URL, time.Now))); diff != "" {
		t.Errorf("scope after the crash (-want +got):\n%s", diff)
	}
}

// A closed effect that the run's records name back into scope is found as
// the scope's snapshot has it, whatever the application writes while the
// run plans its reads, and comes with its earlier records. A charge
// confirmed on the first night comes again on the next under the same
// payment intent, as a new transaction (charged twice); meanwhile the
// application gives the effect another external id. Not parallel: it sets
// a hook of the driver's.
func TestAClosedEffectNamedBackIsFoundInTheScopesSnapshot(t *testing.T) {
	ctx := context.Background()
	byIntent := func(tx string) reconcile.Evidence {
		r := chargeRecord(tx, "")
		r.PaymentIntent = "pi_1"
		return r
	}
	for _, distribute := range []bool{false, true} {
		t.Run(map[bool]string{false: "one process", true: "distributed"}[distribute], func(t *testing.T) {
			s, app := appLedger(t, 0, `INSERT INTO effect (key, run_id, step, provider, status, external_id, request, created_at)
				VALUES ('r:charge:1', 'app_1', 'charge', 'stripe', 'confirmed', 'pi_1', '{"amount": 1000, "currency": "eur"}', '2026-12-01T09:00:00Z')`)
			first := ingestSource(t, s, "night1", true, byIntent("ch_1"))
			if diff := cmp.Diff(map[string][]string{"r:charge:1": nil}, nightOver(t, s, distribute, first)); diff != "" {
				t.Fatalf("first night's scope and earlier records (-want +got):\n%s", diff)
			}
			second := ingestSource(t, s, "night2", true, byIntent("ch_2"))
			var once sync.Once
			driver.ScopeRead = func() {
				once.Do(func() {
					if _, err := app.Exec(ctx, `UPDATE effect SET external_id = 'pi_other' WHERE key = 'r:charge:1'`); err != nil {
						t.Error(err)
					}
				})
			}
			defer func() { driver.ScopeRead = nil }()
			if diff := cmp.Diff(map[string][]string{"r:charge:1": {"ch_1"}}, nightOver(t, s, distribute, second)); diff != "" {
				t.Errorf("second night's scope and earlier records (-want +got):\n%s", diff)
			}
		})
	}
}

// markedBeside runs a PartitionMatch that leaves its mark going on
// (MarkBeside), confirming r:charge:1 and leaving r:charge:2 open, then
// records that the second is missing, as a run does while the mark goes
// on. The mark waits until the findings ask for it (FindingsParams.Marked)
// or are recorded without it, then runs hook, which may fail it. The run's
// sources are sources; after, when set, is called by FindingRecord once the
// mark is made. It returns FindingRecord's error and the mark's.
func markedBeside(t *testing.T, s *postgres.Store, sources []int64, hook, after func() error) (recordErr, markErr error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.RunStart(ctx, &ledgerdb.StartRunParams{ID: "run_m", Args: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	free := sync.OnceFunc(func() { close(release) })
	driver.Marking = func() error {
		select {
		case <-release:
		case <-ctx.Done(): // PartitionMatch waited for its mark: the guard ends the deadlock
			t.Error("PartitionMatch did not return before its mark")
		}
		return hook()
	}
	defer func() { driver.Marking = nil }()
	sum, err := s.PartitionMatch(ctx, &ledgerdb.MatchParams{RunID: "run_m", Sources: sources, MarkBeside: true},
		func(p *ledgerdb.Partition) ([]ledgerdb.Confirmation, error) {
			return []ledgerdb.Confirmation{{Key: "r:charge:1", ExternalID: "ch_r:charge:1"}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Marked == nil {
		free()
		t.Fatal("PartitionMatch with MarkBeside gave no Marked")
	}
	_, recordErr = s.FindingRecord(ctx, &ledgerdb.FindingsParams{RunID: "run_m", Sources: sources,
		Discrepancies: []reconcile.Discrepancy{{Class: reconcile.ClassMissing, EffectKey: "r:charge:2", Provider: "stripe", Currency: "EUR", ExpectedMinor: 1000}},
		Marked: func() error {
			free()
			if err := sum.Marked(); err != nil || after == nil {
				return err
			}
			return after()
		}})
	free()
	return recordErr, sum.Marked()
}

// A run records its findings while its mark (its sources sorted, the
// effects it left without a state noted, its horizon) goes on, and their
// states after the mark: the effect noted as left without a state is taken
// off that list by its state, and not noted again after it. Not parallel:
// it sets a hook of the driver's.
func TestFindingsAreRecordedBesideTheMarkAndTheirStatesAfterIt(t *testing.T) {
	ctx := context.Background()
	s, app := twoCharges(t)
	recordErr, markErr := markedBeside(t, s, nil, func() error { return nil }, nil)
	if recordErr != nil || markErr != nil {
		t.Fatalf("FindingRecord: %v; mark: %v", recordErr, markErr)
	}
	if pending := pendingKeys(t, app); len(pending) > 0 {
		t.Errorf("listed as left without a state after the findings: %v; want none", pending)
	}
	var class string
	if err := app.QueryRow(ctx, `SELECT class FROM effect_state WHERE key = 'r:charge:2'`).Scan(&class); err != nil || class != "missing" {
		t.Errorf("r:charge:2's state = %q, %v; want missing", class, err)
	}
	if diff := cmp.Diff([]string{"r:charge:2"}, scopeOf(t, s)); diff != "" {
		t.Errorf("the next run's scope (-want +got):\n%s", diff)
	}
}

// The findings note the run's sources as matched by it (source.run_id),
// and the run's mark sorts the same sources (source.sorted), in
// transactions of their own: the findings must not hold the sources' rows
// when they wait for the mark, which would wait for the rows (a run hung
// so, until its context ended). Once the mark is made, the rows are free.
// Not parallel: it sets a hook of the driver's.
func TestTheFindingsNoteTheSourcesTheMarkSorts(t *testing.T) {
	ctx := context.Background()
	s, app := twoCharges(t)
	charge := reconcile.Evidence{Provider: "stripe", TxID: "ch_r:charge:1", Kind: reconcile.KindCharge, RawKind: "charge", EffectKey: "r:charge:1",
		Amount: reconcile.Money{Minor: 1000, Currency: "EUR"}, Time: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	source := ingestWithRejects(t, s, "night.csv", false, []reconcile.Evidence{charge}, nil)
	free := func() error {
		return pgx.BeginFunc(ctx, app, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `SELECT 1 FROM source WHERE id = $1 FOR UPDATE NOWAIT`, source)
			return err
		})
	}
	recordErr, markErr := markedBeside(t, s, []int64{source}, func() error { return nil }, free)
	if recordErr != nil || markErr != nil {
		t.Fatalf("FindingRecord: %v; mark: %v", recordErr, markErr)
	}
	var runID string
	var sorted bool
	if err := app.QueryRow(ctx, `SELECT run_id, sorted FROM source WHERE id = $1`, source).Scan(&runID, &sorted); err != nil || runID != "run_m" || !sorted {
		t.Errorf("source matched by %q, sorted %v (%v); want run_m, sorted", runID, sorted, err)
	}
}

// A mark that fails fails the findings' record: nothing of them is kept.
func TestAFailedMarkFailsTheFindings(t *testing.T) {
	ctx := context.Background()
	s, app := twoCharges(t)
	refused := errors.New("the mark refused")
	recordErr, markErr := markedBeside(t, s, nil, func() error { return refused }, nil)
	if !errors.Is(recordErr, refused) || !errors.Is(markErr, refused) {
		t.Errorf("FindingRecord: %v; mark: %v; want both %v", recordErr, markErr, refused)
	}
	var findings, states int
	if err := app.QueryRow(ctx, `SELECT (SELECT count(*) FROM finding), (SELECT count(*) FROM effect_state WHERE NOT final)`).Scan(&findings, &states); err != nil {
		t.Fatal(err)
	}
	if findings != 0 || states != 0 {
		t.Errorf("after a failed mark: %d findings, %d open states; want none", findings, states)
	}
}
