package job

import (
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"reconcile"
	"reconcile/clock"
	"reconcile/fixtures"
	"reconcile/ingest"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/ledgerdbtest"
	"reconcile/report"
)

// Three nights on each ledger, on the same files, give the same results.
// The PostgreSQL ledger reads a later night's earlier records through
// paths of its own (the records a run's ingest kept, the loose records a
// run sorted for the next, the effects a night names back, the sources
// read back from the ledger beside those the run ingests), the SQLite
// ledger through plain lookups; a record one of them drops or reads twice
// is a class that differs. Beside each night's report and webhook dump, a
// file of hand-written lines names the earlier nights' effects as the
// world does: a line read again, a late second charge of a confirmed
// effect, one found only by its payment intent, a refund a person made in
// the dashboard, a fee naming its charge, a charge with no id at all, a
// malformed row, the charge of an effect a person abandoned, a second
// charge of an effect the application gave another external id after the
// first night; and a person decides on four of the second night's
// findings. The second night's dump
// is ingested on its own before its run, and the third night is given the
// second night's report again. The nights also run on inputs all ingested
// on their own first (read back from the ledger, where a run keeps what
// its own ingest wrote), and on PostgreSQL matched by two workers
// (Distribute).
func TestNightsFindTheSameOnBothLedgers(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			// One seed at a time: each opens five ledgers, and two workers'
			// connections, on the shared server.
			nights := writeNights(t, seed)
			size := int(seed%3)*5 + 1
			want := runNights(t, ledgerdbtest.New(t, "sqlite"), nights, nightRuns{size: size})
			for _, how := range []nightRuns{{driver: "sqlite", alone: true}, {driver: "postgres"}, {driver: "postgres", workers: 2},
				{driver: "postgres", alone: true}, {driver: "postgres", workers: 2, alone: true}} {
				how.size = size
				got := runNights(t, ledgerdbtest.New(t, how.driver), nights, how)
				for i := range nights {
					if diff := cmp.Diff(want[i], got[i]); diff != "" {
						t.Errorf("night %d differs (-sqlite +%+v):\n%s", i+1, how, diff)
					}
				}
			}
			for _, n := range nights {
				n.check(t, want)
			}
		})
	}
}

// A world of every provider's formats, read on a second night again from
// files of the same transactions in another order (new files to the
// manifest), and on a third from half of them in a third order, gives the
// same results on both ledgers, whether a run reads its files itself or
// they were ingested on their own first, and finds nothing the first night
// did not: no transaction is new.
func TestAWorldReadAgainFindsTheSameOnBothLedgers(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			readAgain(t, fixtures.NewMultiWorld(200, fixtures.CaseRates, 5+seed))
		})
	}
}

func readAgain(t *testing.T, w *fixtures.MultiWorld) {
	var nights []*night
	for i, order := range []uint64{3, 8, 13} {
		dir := filepath.Join(t.TempDir(), fmt.Sprint(i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		paths, err := w.WriteFiles(dir, order)
		if err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			paths = paths[:len(paths)/2]
		}
		n := &night{inputs: paths, end: fixtures.Start.Add(time.Duration(10+i) * 24 * time.Hour), lag: w.Lag}
		if i == 0 {
			n.effects = w.Effects
		}
		nights = append(nights, n)
	}
	want := runNights(t, ledgerdbtest.New(t, "sqlite"), nights, nightRuns{size: 5})
	for _, how := range []nightRuns{{driver: "sqlite", alone: true}, {driver: "postgres"}, {driver: "postgres", alone: true}} {
		how.size = 5
		got := runNights(t, ledgerdbtest.New(t, how.driver), nights, how)
		for i := range nights {
			if diff := cmp.Diff(want[i], got[i]); diff != "" {
				t.Errorf("night %d differs (-sqlite +%+v):\n%s", i+1, how, diff)
			}
		}
	}
	var counts [3]map[string]int
	for i := range counts {
		if err := json.Unmarshal([]byte(want[i][0]), &counts[i]); err != nil {
			t.Fatal(err)
		}
	}
	if counts[0][string(reconcile.ClassDuplicated)] == 0 {
		t.Fatalf("the first night finds no duplicate: %v", counts[0])
	}
	for i := 1; i < len(counts); i++ {
		for class, n := range counts[i] {
			if i == 2 && class == string(reconcile.ClassPending) {
				continue // half the files may cover less time: missing then, pending now
			}
			if n > counts[0][class] || class == string(reconcile.ClassUnexpected) && n > 0 {
				t.Errorf("night %d, read again: %d %s against %d the first night", i+1, n, class, counts[0][class])
			}
		}
	}
	if counts[1][string(reconcile.ClassDuplicated)] != counts[0][string(reconcile.ClassDuplicated)] { // none closed by reading
		t.Errorf("read again, %d duplicated against %d the first night", counts[1][string(reconcile.ClassDuplicated)], counts[0][string(reconcile.ClassDuplicated)])
	}
}

// A night's files matched in two runs, the report alone first (an ad hoc
// run) and then with the webhook dump, leave every effect in the state one
// run over both leaves, on both ledgers; the two runs together report the
// unexpected transactions one run reports.
func TestANightInTwoRunsEndsAsInOne(t *testing.T) {
	n := writeNights(t, 1)[0]
	report, events := n.inputs[0], n.inputs[1]
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			var states [2][]string
			var unexpected [2]map[string]bool
			for i, runs := range [][][]string{{{report, events}}, {{report}, {events, report}}} {
				fake := clock.NewFake(n.end.Add(time.Hour))
				store := ledgerdbtest.New(t, driver).Open(t, fake.Now)
				one := &night{effects: n.effects, end: n.end, lag: n.lag}
				unexpected[i] = map[string]bool{}
				for k, inputs := range runs {
					res := runNight(t, store, fake, one, fmt.Sprintf("run_%d", k+1), inputs, nightRuns{})
					one.effects = nil
					for _, d := range res.Discrepancies {
						if d.Class == reconcile.ClassUnexpected {
							unexpected[i][d.Transactions[0]] = true
						}
					}
				}
				states[i] = statesOf(t, store, n.effects)
			}
			if diff := cmp.Diff(states[0], states[1]); diff != "" {
				t.Errorf("states (-one run +two runs):\n%s", diff)
			}
			if diff := cmp.Diff(unexpected[0], unexpected[1]); diff != "" || len(unexpected[0]) == 0 {
				t.Errorf("unexpected transactions (-one run +two runs):\n%s", diff)
			}
		})
	}
}

// statesOf lists the states of the effects, a line each.
func statesOf(t *testing.T, store ledgerdb.Store, effects []reconcile.Effect) []string {
	t.Helper()
	var keys []string
	for _, e := range effects {
		keys = append(keys, e.Key)
	}
	states, err := store.EffectStateGetMany(context.Background(), keys)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, k := range keys {
		st, ok := states[k]
		out = append(out, fmt.Sprintf("%s %s final %v (%v)", k, st.Class, st.Final, ok))
	}
	slices.Sort(out)
	return out
}

// night is one night's effects and files: alone are ingested before the
// run, which is given inputs.
type night struct {
	effects       []reconcile.Effect
	alone, inputs []string
	end           time.Time
	lag           time.Duration
	// check looks for what the hand-written lines must have made.
	check func(t *testing.T, results [][]string)
	// decide is what a person decides after the night's run; app, a
	// statement the application runs on the ledger then.
	decide []ledgerdb.ResolveParams
	app    string
}

// nightEffect is what the hand-written lines use of an effect: its key,
// the id that follows "ch_"/"pi_" in its charge, its amount and currency.
type nightEffect struct {
	key, id, currency string
	amount            int64
}

// chargesOf lists the charge effects that a world's report, at report,
// confirms (one charge of their payment intent, of their amount), and
// those attempted before the time before that it holds no charge of.
func chargesOf(t *testing.T, effects []reconcile.Effect, report string, before time.Time) (confirmed, missing []nightEffect) {
	t.Helper()
	f, err := os.Open(report)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	charges := map[string][]string{} // key → "source gross" of each of its charges
	for _, r := range rows[1:] {
		if r[col["reporting_category"]] == "charge" {
			key := r[col["payment_metadata[effect_key]"]]
			charges[key] = append(charges[key], r[col["source_id"]]+" "+r[col["gross"]])
		}
	}
	for i, e := range effects {
		var req struct {
			Amount   int64  `json:"amount"`
			Currency string `json:"currency"`
		}
		if err := json.Unmarshal(e.Request, &req); err != nil {
			t.Fatal(err)
		}
		id := strings.TrimPrefix(e.ExternalID, "pi_")
		exp, _ := reconcile.Exponent("stripe", strings.ToUpper(req.Currency))
		switch {
		case e.Step != "charge":
		case e.Status == reconcile.StatusConfirmed &&
			slices.Equal(slices.Compact(charges[e.Key]), []string{"ch_" + id + " " + reconcile.FormatMinor(req.Amount, exp)}):
			confirmed = append(confirmed, nightEffect{e.Key, id, req.Currency, req.Amount})
		case e.Status == reconcile.StatusAttempted && len(charges[e.Key]) == 0 && e.CreatedAt.Before(before):
			missing = append(missing, nightEffect{e.Key, fmt.Sprintf("lost%d", i), req.Currency, req.Amount})
		}
	}
	if len(confirmed) < 8 {
		t.Fatalf("the world holds %d confirmed charges", len(confirmed))
	}
	return confirmed, missing
}

// itemizedHeader is the header of fixtures.World's itemized reports.
const itemizedHeader = "balance_transaction_id,created_utc,available_on_utc,currency,gross,fee,net,reporting_category,source_id,description," +
	"customer_facing_amount,customer_facing_currency,automatic_payout_id,charge_id,payment_intent_id," +
	"payment_metadata[effect_key],refund_metadata[effect_key]\n"

// line is a line of an itemized report: the balance transaction, the
// category, the source's id, the charge's, the payment intent, the
// payment's and the refund's effect key, the amount in minor units.
func line(txn string, at time.Time, currency, category, source, charge, intent, key, refundKey string, minor int64) string {
	exp, _ := reconcile.Exponent("stripe", strings.ToUpper(currency))
	amount := reconcile.FormatMinor(minor, exp)
	ts := at.Format("2006-01-02 15:04:05")
	return fmt.Sprintf("%s,%s,%s,%s,%s,0,%s,%s,%s,,%s,%s,,%s,%s,%s,%s\n",
		txn, ts, ts, currency, amount, amount, category, source, amount, currency, charge, intent, key, refundKey)
}

func writeFile(t *testing.T, path string, write func(*os.File) error) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// writeNights writes three nights' worlds and hand-written lines.
func writeNights(t *testing.T, seed uint64) []*night {
	dir := t.TempDir()
	rates := fixtures.Rates{Duplicated: 0.06, Missing: 0.1, Mismatched: 0.05, Unexpected: 0.05, Pending: 0.05,
		Refunds: 0.2, Outside: 0.1, Fees: 0.05, Reissued: 0.1}
	var nights []*night
	var worlds, lost [][]nightEffect // each world's confirmed and missing charges
	for day, prefix := range []string{"a", "b", "c"} {
		w := fixtures.NewWorldWith(60+int(seed)*7, rates, seed*3+uint64(day), fixtures.Options{Prefix: prefix, Days: day})
		report := writeFile(t, filepath.Join(dir, prefix+".csv"), func(f *os.File) error { return w.WriteItemized(f) })
		events := writeFile(t, filepath.Join(dir, prefix+".jsonl"), func(f *os.File) error { return w.WriteEvents(f) })
		for i := range w.Effects { // SQLite keeps times to the millisecond
			e := &w.Effects[i]
			e.CreatedAt, e.ConfirmedAt = e.CreatedAt.Truncate(time.Millisecond), e.ConfirmedAt.Truncate(time.Millisecond)
		}
		n := &night{effects: w.Effects, inputs: []string{report, events}, end: w.End, lag: 3 * time.Hour, check: func(*testing.T, [][]string) {}}
		at := fixtures.Start.Add(time.Duration(day)*24*time.Hour + 10*time.Hour)
		switch day {
		case 1:
			a := worlds[0]
			b, bLost := chargesOf(t, w.Effects, report, w.End.Add(-4*time.Hour))
			if len(bLost) < 2 {
				t.Fatalf("the second world holds %d missing charges", len(bLost))
			}
			n.alone = []string{events}
			n.inputs = append(n.inputs, writeFile(t, filepath.Join(dir, "b-more.csv"), func(f *os.File) error {
				_, err := f.WriteString(itemizedHeader +
					// last night's charge, read again: nothing new
					line("txn_x0", at, a[0].currency, "charge", "ch_"+a[0].id, "ch_"+a[0].id, "pi_"+a[0].id, a[0].key, "", a[0].amount) +
					// a second charge of a confirmed effect: duplicated
					line("txn_x1", at, a[1].currency, "charge", "ch_"+a[1].id+"late", "ch_"+a[1].id+"late", "pi_"+a[1].id+"late", a[1].key, "", a[1].amount) +
					// a refund a person made: shown with its charge
					line("txn_x2", at, a[2].currency, "refund", "re_"+a[2].id+"p", "ch_"+a[2].id, "pi_"+a[2].id, a[2].key, "", -a[2].amount/2) +
					// a second charge found only by its payment intent
					line("txn_x3", at, a[3].currency, "charge", "ch_"+a[3].id+"pi", "ch_"+a[3].id+"pi", "pi_"+a[3].id, "", "", a[3].amount) +
					// a fee that names its charge's effect
					line("txn_x4", at, a[4].currency, "fee", "", "", "", a[4].key, "", -30) +
					// a refund a person made, named by its charge and key alone
					line("txn_x7", at, a[6].currency, "refund", "re_"+a[6].id+"p", "ch_"+a[6].id, "", a[6].key, "", -a[6].amount) +
					// a second charge, by key, of the effect whose id changed
					line("txn_x8", at, a[7].currency, "charge", "ch_"+a[7].id+"late", "ch_"+a[7].id+"late", "", a[7].key, "", a[7].amount) +
					// a charge with no id, of tonight's effect
					line("txn_x5", at, b[0].currency, "charge", "", "", "", b[0].key, "", b[0].amount) +
					"txn_x6," + at.Format("2006-01-02 15:04:05") + ",,eur,ten,0,0,charge,ch_bad,,,,,ch_bad,,,\n")
				return err
			}))
			// The application gives an effect another external id after
			// the first night: its charge is found through the one it had.
			nights[0].app = fmt.Sprintf(`UPDATE effect SET external_id = 'pi_%sx' WHERE key = '%s'`, a[7].id, a[7].key)
			n.decide = []ledgerdb.ResolveParams{{EffectKey: a[1].key, As: reconcile.ResolutionCompensated, By: "finance"},
				{EffectKey: a[3].key, As: reconcile.ResolutionConfirmed, By: "finance"},
				{EffectKey: bLost[0].key, As: reconcile.ResolutionAbandoned, By: "finance"},
				{EffectKey: bLost[1].key, As: reconcile.ResolutionAbandoned, By: "finance"}}
			n.check = func(t *testing.T, results [][]string) {
				t.Helper()
				for _, want := range []struct {
					key   string
					class reconcile.Class
				}{{a[1].key, reconcile.ClassDuplicated}, {a[3].key, reconcile.ClassDuplicated}, {a[7].key, reconcile.ClassDuplicated}} {
					if !found(results[1], want.key, want.class) {
						t.Errorf("night 2 does not find %s %s", want.key, want.class)
					}
				}
				if found(results[1], a[0].key, "") {
					t.Errorf("night 2 reports %s again for a line read again", a[0].key)
				}
				if !found(results[1], bLost[0].key, reconcile.ClassMissing) {
					t.Errorf("night 2 does not find %s missing", bLost[0].key)
				}
			}
		case 2:
			a, b, bLost := worlds[0], worlds[1], lost[1]
			n.inputs = append(n.inputs, nights[1].inputs[0], writeFile(t, filepath.Join(dir, "c-more.csv"), func(f *os.File) error {
				_, err := f.WriteString(itemizedHeader +
					// last night's late charge, read again, after a person
					// had it refunded: nothing new
					line("txn_y0", at, a[1].currency, "charge", "ch_"+a[1].id+"late", "ch_"+a[1].id+"late", "pi_"+a[1].id+"late", a[1].key, "", a[1].amount) +
					// a second charge of last night's confirmed effect
					line("txn_y1", at, b[1].currency, "charge", "ch_"+b[1].id+"late", "ch_"+b[1].id+"late", "pi_"+b[1].id+"late", b[1].key, "", b[1].amount) +
					// refunds a person made, of both earlier nights' charges
					line("txn_y2", at, b[2].currency, "refund", "re_"+b[2].id+"p", "ch_"+b[2].id, "pi_"+b[2].id, b[2].key, "", -1) +
					line("txn_y3", at, a[5].currency, "refund", "re_"+a[5].id+"p", "ch_"+a[5].id, "", "", "", -1) +
					// second charges of the effects last night's fee and refund named
					line("txn_y4", at, a[4].currency, "charge", "ch_"+a[4].id+"late", "ch_"+a[4].id+"late", "", a[4].key, "", a[4].amount) +
					line("txn_y5", at, a[6].currency, "charge", "ch_"+a[6].id+"late", "ch_"+a[6].id+"late", "", a[6].key, "", a[6].amount) +
					// a third charge of the payment intent a person said was charged once
					line("txn_y6", at, a[3].currency, "charge", "ch_"+a[3].id+"pi2", "ch_"+a[3].id+"pi2", "pi_"+a[3].id, "", "", a[3].amount) +
					// the charge of an effect a person abandoned, made after all
					line("txn_y7", at, bLost[0].currency, "charge", "ch_"+bLost[0].id, "ch_"+bLost[0].id, "pi_"+bLost[0].id, bLost[0].key, "", bLost[0].amount))
				return err
			}))
			n.check = func(t *testing.T, results [][]string) {
				t.Helper()
				for _, key := range []string{b[1].key, a[3].key} {
					if !found(results[2], key, reconcile.ClassDuplicated) {
						t.Errorf("night 3 does not find %s duplicated", key)
					}
				}
				if found(results[2], a[1].key, "") {
					t.Errorf("night 3 reopens %s, resolved, for a line read again", a[1].key)
				}
				if found(results[2], bLost[1].key, "") {
					t.Errorf("night 3 reports %s, abandoned, with nothing new", bLost[1].key)
				}
			}
		}
		confirmed, missing := chargesOf(t, w.Effects, report, w.End.Add(-4*time.Hour))
		worlds, lost = append(worlds, confirmed), append(lost, missing)
		nights = append(nights, n)
	}
	return nights
}

// found says whether a night's result lists a finding of key in class
// (any class when it is empty).
func found(result []string, key string, class reconcile.Class) bool {
	for _, l := range result {
		if strings.Contains(l, `"effect_key":"`+key+`"`) && (class == "" || strings.Contains(l, `"class":"`+string(class)+`"`)) {
			return true
		}
	}
	return false
}

// nightRuns says how runNights runs: partitions of about size effects,
// matched by that many workers (0: by the run alone), every input
// ingested on its own before the run when alone is set.
type nightRuns struct {
	driver        string // for the caller
	size, workers int
	alone         bool
}

// runNights runs the nights on a ledger and gives each night's result,
// its findings and rejected rows one per line.
func runNights(t *testing.T, l *ledgerdbtest.Ledger, nights []*night, how nightRuns) [][]string {
	t.Helper()
	fake := clock.NewFake(nights[0].end.Add(time.Hour))
	store := l.Open(t, fake.Now)
	var out [][]string
	for i, n := range nights {
		res := runNight(t, store, fake, n, fmt.Sprintf("night_%d", i+1), n.inputs, how)
		out = append(out, resultLines(res))
		if n.app != "" {
			appExec(t, l, n.app)
		}
	}
	return out
}

// appExec runs statement on the ledger as the application does, on a
// connection of its own.
func appExec(t *testing.T, l *ledgerdbtest.Ledger, statement string) {
	t.Helper()
	var err error
	if l.Driver == "sqlite" {
		var db *sql.DB
		if db, err = sql.Open("sqlite", strings.TrimPrefix(l.URL, "sqlite:")); err == nil {
			_, err = db.Exec(statement)
			err = errors.Join(err, db.Close())
		}
	} else {
		var conn *pgx.Conn
		if conn, err = pgx.Connect(context.Background(), l.URL); err == nil {
			_, err = conn.Exec(context.Background(), statement)
			err = errors.Join(err, conn.Close(context.Background()))
		}
	}
	if err != nil {
		t.Fatalf("%s: %v", statement, err)
	}
}

// runNight loads the night's effects, ingests those of its inputs it
// ingests alone, runs on inputs with the clock an hour past the night's
// end, and makes the night's decisions.
func runNight(t *testing.T, store ledgerdb.Store, fake *clock.Fake, n *night, id string, inputs []string, how nightRuns) *report.Result {
	t.Helper()
	ctx := context.Background()
	if d := n.end.Add(time.Hour).Sub(fake.Now()); d > 0 {
		fake.Advance(d)
	}
	if err := store.EffectLoad(ctx, n.effects); err != nil {
		t.Fatal(err)
	}
	opt := &ingest.Options{Now: fake.Now}
	j := &Job{Store: store, Clock: fake, Owner: "test"}
	alone := n.alone
	if how.alone {
		alone = inputs
	}
	for k, p := range alone {
		srcs, err := ingest.Expand(ctx, []string{p}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := j.Ingest(ctx, srcs[0], opt, false, (&RejectedList{}).Collect(k)); err != nil {
			t.Fatal(err)
		}
	}
	srcs, err := ingest.Expand(ctx, inputs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := j.Run(ctx, &RunParams{ID: id, Sources: srcs, Options: opt, Lag: n.lag,
		Actions: actionsFor(time.Hour), PartitionSize: how.size, Distribute: how.workers > 0, Workers: how.workers})
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	for _, d := range n.decide {
		if _, err := store.EffectResolve(ctx, &d); err != nil {
			t.Fatal(err)
		}
	}
	return res.Result
}

// resultLines shows a result one finding or rejected row per line, after
// its counts.
func resultLines(r *report.Result) []string {
	counts, _ := json.Marshal(r.Counts)
	out := []string{string(counts), fmt.Sprintf("out of scope %d, rejected %d unlisted", r.OutOfScope, r.RejectedUnlisted)}
	for _, d := range r.Discrepancies {
		b, _ := json.Marshal(d)
		out = append(out, string(b))
	}
	for _, x := range r.Rejected {
		b, _ := json.Marshal(x)
		out = append(out, string(b))
	}
	return out
}

// A ledger that took duplicates handed to a person for final (before
// matcher.IsFinal said otherwise) has them opened again by its migration:
// the states as that version wrote them, the migration's statement run
// again, and only the duplicate with an escalation is open.
func TestAnUpgradeOpensTheDuplicatesLeftToAPerson(t *testing.T) {
	migration := map[string]string{"sqlite": "../ledgerdb/sqlite/migrations/011_duplicates_for_a_person.sql",
		"postgres": "../ledgerdb/postgres/migrations/025_duplicates_for_a_person.sql"}
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			l := ledgerdbtest.New(t, driver)
			store := l.Open(t, nil)
			at := time.Date(2026, 11, 2, 3, 0, 0, 0, time.UTC)
			var effects []reconcile.Effect
			for _, key := range []string{"r:refund:1", "r:charge:2"} {
				effects = append(effects, reconcile.Effect{Key: key, RunID: "r", Step: strings.Split(key, ":")[1], Provider: "stripe",
					Status: reconcile.StatusConfirmed, ExternalID: "x_" + key, CreatedAt: at, ConfirmedAt: at,
					Request: json.RawMessage(`{"amount": 100, "currency": "eur"}`)})
			}
			if err := store.EffectLoad(context.Background(), effects); err != nil {
				t.Fatal(err)
			}
			appExec(t, l, `INSERT INTO run (id, status, started_at) VALUES ('run_old', 'succeeded', '2026-11-02T03:00:00.000Z')`)
			for i, f := range []struct{ key, actions string }{
				{"r:refund:1", `[{"kind": "escalate", "key": "r:refund:1:escalate:duplicated", "target": "r:refund:1", "outcome": "escalated"}]`},
				{"r:charge:2", `[{"kind": "compensate", "key": "r:charge:2:compensate:ch_2", "target": "ch_2", "outcome": "applied"}]`},
			} {
				appExec(t, l, fmt.Sprintf(`INSERT INTO finding (run_id, seq, class, effect_key, provider, currency, expected_minor, observed_minor,
  transactions, actions, reason) VALUES ('run_old', %d, 'duplicated', '%s', 'stripe', 'EUR', 100, 200, '[]', '%s', 'seen twice')`, i+1, f.key, f.actions))
				appExec(t, l, fmt.Sprintf(`INSERT INTO effect_state (key, class, final, run_id, classified_at, since)
  VALUES ('%s', 'duplicated', true, 'run_old', '2026-11-02T03:00:00.000Z', '2026-11-02T03:00:00.000Z')`, f.key))
			}
			statement, err := os.ReadFile(migration[driver])
			if err != nil {
				t.Fatal(err)
			}
			appExec(t, l, string(statement))
			states, err := store.EffectStateGetMany(context.Background(), []string{"r:refund:1", "r:charge:2"})
			if err != nil {
				t.Fatal(err)
			}
			if st := states["r:refund:1"]; st.Class != reconcile.ClassDuplicated || st.Final {
				t.Errorf("the duplicate left to a person: %+v, want open", st)
			}
			if st := states["r:charge:2"]; st.Class != reconcile.ClassDuplicated || !st.Final {
				t.Errorf("the duplicate compensated: %+v, want final", st)
			}
		})
	}
}
