package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/ledgerdbtest"
	"reconcile/ledgerdb/postgres"
	"reconcile/ledgerdb/postgres/pgtest"
)

// granted is a migrated ledger in a schema of its own, with postgres.Grants
// applied to a role of its own in place of reconcile.
type granted struct {
	admin    *pgx.Conn // the administrator who migrated the ledger and applied the grants
	adminURL string
	roleURL  string // the job's role
}

// grantedLedger migrates a fresh ledger and applies the grants to a new
// role, dropped when t ends.
func grantedLedger(t *testing.T) *granted {
	t.Helper()
	ctx := context.Background()
	g := &granted{adminURL: pgtest.Schema(t)}
	if _, err := open(t, g.adminURL, nil).SchemaMigrate(ctx); err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, g.adminURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(context.WithoutCancel(ctx)) })
	g.admin = admin
	role, roleURL := newRole(t, admin, g.adminURL, "reconcile")
	g.roleURL = roleURL
	sql := regexp.MustCompile(`\breconcile\b`).ReplaceAllString(postgres.Grants, role)
	sql = strings.ReplaceAll(sql, "SCHEMA public", "SCHEMA "+schemaOf(g.adminURL))
	for range 2 { // README says the file may be run again
		if _, err := admin.Exec(ctx, sql); err != nil {
			admin.Exec(ctx, "ROLLBACK") // the file's transaction, so that the cleanup can drop the role
			t.Fatalf("apply the grants: %v", err)
		}
	}
	return g
}

// schemaOf is the schema a pgtest URL selects.
func schemaOf(u string) string {
	p, _ := url.Parse(u)
	return p.Query().Get("search_path")
}

// newRole creates a login role named prefix_<random> (roles belong to the
// whole cluster) and returns it with a URL that connects as it. The role
// and its privileges are dropped when t ends.
func newRole(t *testing.T, admin *pgx.Conn, base, prefix string) (string, string) {
	t.Helper()
	ctx := context.Background()
	b := make([]byte, 6)
	rand.Read(b)
	role, password := prefix+"_"+hex.EncodeToString(b), hex.EncodeToString(b)
	if _, err := admin.Exec(ctx, "CREATE ROLE "+role+" LOGIN PASSWORD '"+password+"'"); err != nil {
		t.Fatalf("create role: %v", err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		if _, err := admin.Exec(ctx, "DROP OWNED BY "+role+"; DROP ROLE "+role); err != nil {
			t.Errorf("drop role %s: %v", role, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, password)
	return role, u.String()
}

// connect opens a connection for the length of t.
func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.WithoutCancel(ctx)) })
	return c
}

// appEffect is an application's charge, as the application records it.
func appEffect(key string, status reconcile.Status, externalID string, at time.Time) reconcile.Effect {
	e := reconcile.Effect{Key: key, RunID: "app_1", Step: "charge", Provider: "stripe", Status: status, ExternalID: externalID, CreatedAt: at,
		Request: json.RawMessage(`{"amount": 1000, "currency": "eur", "metadata": {"effect_key": "` + key + `"}}`)}
	if status == reconcile.StatusConfirmed {
		e.ConfirmedAt = at
	}
	return e
}

// statement is one write and whether the role may make it.
type statement struct {
	what, sql string
	allowed   bool
}

// try runs each statement in a transaction of its own, rolled back, and
// checks that an allowed one reads or changes exactly one row and a refused one
// fails for want of privilege (SQLSTATE 42501), not for another reason.
func try(t *testing.T, c *pgx.Conn, statements []statement) {
	t.Helper()
	ctx := context.Background()
	for _, s := range statements {
		tx, err := c.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tag, err := tx.Exec(ctx, s.sql)
		var pe *pgconn.PgError
		switch {
		case s.allowed && err != nil:
			t.Errorf("%s: %v; want it allowed", s.what, err)
		case s.allowed && tag.RowsAffected() != 1:
			t.Errorf("%s: %d rows, want 1", s.what, tag.RowsAffected())
		case !s.allowed && err == nil:
			t.Errorf("%s: allowed (%s), want it refused", s.what, tag)
		case !s.allowed && !(errors.As(err, &pe) && pe.Code == "42501"):
			t.Errorf("%s: %v; want it refused for want of privilege (42501)", s.what, err)
		}
		tx.Rollback(ctx)
	}
}

// README's Deployment section shows the grants that the tests apply,
// verbatim.
func TestGrantsAreTheREADMEs(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```sql\n"+postgres.Grants+"```\n") {
		t.Errorf("README.md does not show ledgerdb/postgres/grants.sql verbatim in a sql block; copy the file's text into it:\n%s", postgres.Grants)
	}
}

// The job's role reads the ledger, inserts only compensation rows and
// updates only the outcome columns of any row; it deletes nothing and
// cannot lift the policy.
func TestGrantsLimitTheJobsRole(t *testing.T) {
	g := grantedLedger(t)
	at := time.Now().UTC().Add(-time.Hour)
	if err := open(t, g.adminURL, nil).EffectLoad(context.Background(), []reconcile.Effect{
		appEffect("app_1:charge:0", reconcile.StatusAttempted, "", at),
		appEffect("app_1:charge:1", reconcile.StatusConfirmed, "pi_1", at),
	}); err != nil {
		t.Fatal(err)
	}
	// comp inserts an effect row; an empty parent is NULL.
	comp := func(key, step, status, parent string, depth int, runID, provider string) string {
		p := "NULL"
		if parent != "" {
			p = "'" + parent + "'"
		}
		return fmt.Sprintf(`INSERT INTO effect (key, run_id, step, provider, status, request, parent_key, depth)
			VALUES ('%s', '%s', '%s', '%s', '%s', '{"charge": "ch_b", "amount": 1000}', %s, %d)`, key, runID, step, provider, status, p, depth)
	}
	const ck = "app_1:charge:1:compensate:ch_b"
	update := func(set string) string { return "UPDATE effect SET " + set + " WHERE key = 'app_1:charge:0'" }
	try(t, connect(t, g.roleURL), []statement{
		{"read an application row", "SELECT * FROM effect WHERE key = 'app_1:charge:0'", true},
		{"insert a compensation", comp(ck, "compensate", "attempted", "app_1:charge:1", 1, "app_1", "stripe"), true},
		{"insert a charge", comp("app_1:charge:9", "charge", "attempted", "", 0, "app_1", "stripe"), false},
		{"insert a charge at depth 1 under a parent", comp(ck, "charge", "attempted", "app_1:charge:1", 1, "app_1", "stripe"), false},
		{"insert a compensation at depth 0", comp(ck, "compensate", "attempted", "app_1:charge:1", 0, "app_1", "stripe"), false},
		{"insert a compensation with no parent", comp(ck, "compensate", "attempted", "", 1, "app_1", "stripe"), false},
		{"insert a compensation of an effect that does not exist", comp("app_1:charge:7:compensate:ch_b", "compensate", "attempted", "app_1:charge:7", 1, "app_1", "stripe"), false},
		{"insert a compensation under another effect's key", comp("app_1:charge:0:compensate:ch_b", "compensate", "attempted", "app_1:charge:1", 1, "app_1", "stripe"), false},
		{"insert a compensation of another run", comp(ck, "compensate", "attempted", "app_1:charge:1", 1, "app_2", "stripe"), false},
		{"insert a compensation at another provider", comp(ck, "compensate", "attempted", "app_1:charge:1", 1, "app_1", "adyen"), false},
		{"insert a compensation already confirmed", comp(ck, "compensate", "confirmed", "app_1:charge:1", 1, "app_1", "stripe"), false},
		{"confirm an application row", update(`status = 'confirmed', external_id = 'pi_0', response = '{"id": "pi_0"}', confirmed_at = now()`), true},
		{"update the request", update(`request = '{"amount": 1}'`), false},
		{"update the request's amount", update(`request = jsonb_set(request, '{amount}', '1')`), false},
		{"update the step", update(`step = 'refund'`), false},
		{"update the key", update(`key = 'app_1:charge:8'`), false},
		{"update created_at", update(`created_at = now()`), false},
		{"update the run", update(`run_id = 'app_2'`), false},
		{"update the provider", update(`provider = 'adyen'`), false},
		{"update the parent", update(`parent_key = 'app_1:charge:1'`), false},
		{"update the depth", update(`depth = 1`), false},
		{"delete an effect", "DELETE FROM effect WHERE key = 'app_1:charge:0'", false},
		{"truncate the ledger", "TRUNCATE effect", false},
		{"lift row-level security", "ALTER TABLE effect DISABLE ROW LEVEL SECURITY", false},
		{"drop the insert policy", "DROP POLICY effect_reconcile_insert ON effect", false},
		{"delete a claim", "DELETE FROM claim", false},
		{"create a table", "CREATE TABLE effect_copy (key text)", false},
	})
}

// Row-level security leaves the application as it was: the table's owner
// (not a superuser) and a role of its own that is not the owner still
// write any row.
func TestGrantsLeaveTheApplicationAlone(t *testing.T) {
	g := grantedLedger(t)
	ctx := context.Background()
	schema := schemaOf(g.adminURL)
	owner, ownerURL := newRole(t, g.admin, g.adminURL, "app_owner")
	app, appURL := newRole(t, g.admin, g.adminURL, "app")
	if _, err := g.admin.Exec(ctx, "GRANT USAGE ON SCHEMA "+schema+" TO "+owner+", "+app+"; ALTER TABLE effect OWNER TO "+owner+
		"; GRANT SELECT, INSERT, UPDATE, DELETE ON effect TO "+app); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.admin.Exec(context.WithoutCancel(ctx), "ALTER TABLE effect OWNER TO CURRENT_USER") }) // before the role is dropped
	writes := []statement{
		{"read a row", "SELECT * FROM effect WHERE key = 'app_1:charge:1'", true},
		{"insert a charge", `INSERT INTO effect (key, run_id, step, provider, status, request) VALUES ('app_1:charge:0', 'app_1', 'charge', 'stripe', 'attempted', '{"amount": 1}')`, true},
		{"update a request", `UPDATE effect SET request = '{"amount": 2}', step = 'refund' WHERE key = 'app_1:charge:1'`, true},
		{"delete an effect", "DELETE FROM effect WHERE key = 'app_1:charge:1'", true},
	}
	for _, as := range []struct{ name, url string }{{"owner", ownerURL}, {"role", appURL}} {
		t.Run(as.name, func(t *testing.T) {
			if err := open(t, g.adminURL, nil).EffectLoad(ctx, []reconcile.Effect{appEffect("app_1:charge:1", reconcile.StatusAttempted, "", time.Now())}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { g.admin.Exec(context.WithoutCancel(ctx), "DELETE FROM effect") })
			try(t, connect(t, as.url), writes)
		})
	}
}

// Every call a `run --apply` makes, and the on-call commands', works as the
// job's role through Open: ingest, matching with confirmations, findings,
// a compensation claimed with its row and settled with its confirmation,
// a superseded success recorded as an orphan, escalations, a resolution.
// The admin reads back what each write changed: a policy that hid rows
// would make an update change nothing without an error.
func TestGrantsLetTheJobRun(t *testing.T) {
	g := grantedLedger(t)
	ctx := context.Background()
	clock := ledgerdbtest.NewClock()
	t0 := clock.Now().Add(-time.Hour)
	if err := open(t, g.adminURL, nil).EffectLoad(ctx, []reconcile.Effect{
		appEffect("app_1:charge:0", reconcile.StatusAttempted, "", t0), // confirmed by the matching
		appEffect("app_1:charge:1", reconcile.StatusConfirmed, "pi_1", t0),
		appEffect("app_1:charge:2", reconcile.StatusAttempted, "", t0), // confirmed by the findings
		appEffect("app_1:charge:3", reconcile.StatusAttempted, "", t0), // abandoned by a person
		appEffect("app_1:charge:4", reconcile.StatusAttempted, "", t0), // confirmed by a person
	}); err != nil {
		t.Fatal(err)
	}
	s := open(t, g.roleURL, clock.Now)
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s as the job's role: %v", what, err)
		}
	}
	must("CheckSchema", s.SchemaCheck(ctx))
	// The role does not own evidence: it keeps its indexes up, and leaves
	// those the tables' owner deferred to it.
	if ok, err := s.IndexesDefer(ctx, 1<<30); err != nil || ok {
		t.Errorf("IndexesDefer as the job's role = %v, %v; want them kept", ok, err)
	}
	admin := open(t, g.adminURL, nil)
	if ok, err := admin.IndexesDefer(ctx, 1<<30); err != nil || !ok {
		t.Fatalf("IndexesDefer as the tables' owner = %v, %v", ok, err)
	}
	if pending, err := s.IndexesBuild(ctx); err != nil || len(pending) != 2 {
		t.Errorf("IndexesBuild as the job's role = %q, %v; want the 2 left", pending, err)
	}
	if pending, err := admin.IndexesBuild(ctx); err != nil || len(pending) > 0 {
		t.Fatalf("IndexesBuild as the tables' owner = %q, %v", pending, err)
	}
	_, err := s.RunStart(ctx, &ledgerdb.StartRunParams{ID: "run_1", Args: json.RawMessage(`{"apply": true}`)})
	must("StartRun", err)
	if _, err := s.SourceFind(ctx, "h1", "etag1"); !errors.Is(err, reconcile.ErrNotFound) {
		t.Fatalf("FindSource as the job's role: %v, want ErrNotFound", err)
	}
	ev := func(id, key, intent string) reconcile.Evidence {
		return reconcile.Evidence{Provider: "stripe", TxID: id, Kind: reconcile.KindCharge, RawKind: "charge", Time: t0, URI: "report.csv",
			Amount: reconcile.Money{Minor: 1000, Currency: "EUR"}, EffectKey: key, PaymentIntent: intent, Raw: id}
	}
	evidence := []reconcile.Evidence{ev("ch_0", "app_1:charge:0", "pi_0"), ev("ch_1a", "app_1:charge:1", "pi_1"), ev("ch_1b", "app_1:charge:1", "pi_1b")}
	in, err := s.SourceIngest(ctx, &ledgerdb.IngestParams{URI: "report.csv", ETag: "etag1"},
		func(w ledgerdb.SourceWriter) (*ledgerdb.SourceRecord, error) {
			for i := range evidence {
				evidence[i].Line = i + 2
				if err := w.Evidence(&evidence[i]); err != nil {
					return nil, err
				}
			}
			if err := w.Reject(&reconcile.Rejected{URI: "report.csv", Line: 5, Reason: "no amount", Raw: "x"}); err != nil {
				return nil, err
			}
			return &ledgerdb.SourceRecord{SourceAccount: reconcile.SourceAccount{Format: "test", Hash: "h1", Rows: 4, Evidence: 3, Rejected: 1}}, nil
		})
	must("IngestSource", err)
	_, err = s.SourceList(ctx)
	must("Sources", err)
	_, _, _, err = s.SourceGetRows(ctx, in.SourceID)
	must("SourceRows", err)
	_, err = s.RejectedListBySource(ctx, in.SourceID, 0)
	must("RejectedRows", err)
	_, err = s.CoverageList(ctx, []int64{in.SourceID})
	must("Coverage", err)
	_, err = s.EvidenceListLinked(ctx, &ledgerdb.LinkParams{Keys: []string{"app_1:charge:1"}, IDs: []string{"pi_1"}})
	must("LinkedEvidence", err)

	kinds := map[string]reconcile.Kind{"charge": reconcile.KindCharge, "compensate": reconcile.KindRefund}
	sum, err := s.PartitionMatch(ctx, &ledgerdb.MatchParams{RunID: "run_1", Sources: []int64{in.SourceID}, Kinds: kinds, MarkBeside: true},
		func(p *ledgerdb.Partition) ([]ledgerdb.Confirmation, error) {
			var out []ledgerdb.Confirmation
			for _, e := range p.Effects {
				if e.Key == "app_1:charge:0" {
					out = append(out, ledgerdb.Confirmation{Key: e.Key, ExternalID: "pi_0"})
				}
			}
			return out, nil
		})
	must("MatchPartitions", err)
	must("MatchPartitions' mark", sum.Marked())
	if sum.Confirmed != 1 {
		t.Errorf("MatchPartitions as the job's role confirmed %d effects, want 1", sum.Confirmed)
	}
	_, results, err := s.PartitionDistribute(ctx, &ledgerdb.MatchParams{RunID: "run_1", Sources: []int64{in.SourceID}, Kinds: kinds},
		&ledgerdb.Distribution{Workers: 1, Worker: "w1", Input: []byte(`{}`),
			Match: func([]byte, *ledgerdb.Partition) ([]ledgerdb.Confirmation, []byte, error) {
				return nil, []byte(`{}`), nil
			}})
	must("PartitionDistribute", err)
	if len(results) != 1 {
		t.Errorf("PartitionDistribute as the job's role gave %d results, want 1", len(results))
	}
	tx := func(id string) reconcile.Transaction {
		return reconcile.Transaction{Provider: "stripe", ID: id, Kind: reconcile.KindCharge, Amount: reconcile.Money{Minor: 1000, Currency: "EUR"}}
	}
	const compKey = "app_1:charge:1:compensate:ch_1b"
	fres, err := s.FindingRecord(ctx, &ledgerdb.FindingsParams{RunID: "run_1", Discrepancies: []reconcile.Discrepancy{
		{Class: reconcile.ClassConfirmed, EffectKey: "app_1:charge:2", Provider: "stripe", Transactions: []reconcile.Transaction{tx("ch_2")}},
		{Class: reconcile.ClassDuplicated, EffectKey: "app_1:charge:1", Provider: "stripe", Currency: "EUR", ExpectedMinor: 1000, ObservedMinor: 2000,
			Transactions: []reconcile.Transaction{tx("ch_1a"), tx("ch_1b")},
			Actions:      []reconcile.Action{{Kind: reconcile.ActionCompensate, Key: compKey, Target: "ch_1b", Outcome: reconcile.OutcomeApplied}}},
	}})
	must("RecordFindings", err)
	if fres.Confirmed != 1 {
		t.Errorf("RecordFindings as the job's role confirmed %d effects, want 1", fres.Confirmed)
	}
	_, err = s.FindingListByRun(ctx, "run_1")
	must("Findings", err)
	_, err = s.FindingListByEffect(ctx, "app_1:charge:1")
	must("EffectFindings", err)
	_, err = s.EffectStateGetMany(ctx, []string{"app_1:charge:1"})
	must("EffectStates", err)

	// The compensation: its claim and row in one transaction, then its
	// settlement and confirmation in one.
	comp := &ledgerdb.RecordParams{Key: compKey, RunID: "app_1", Step: "compensate", Provider: "stripe", ParentKey: "app_1:charge:1", Depth: 1,
		Request: json.RawMessage(`{"amount": 1000, "currency": "eur", "charge": "ch_1b", "metadata": {"effect_key": "` + compKey + `", "compensates": "app_1:charge:1"}}`)}
	c, err := s.ClaimAcquire(ctx, &ledgerdb.ClaimParams{Key: compKey, Owner: "job", TTL: time.Minute, Effect: comp})
	must("Claim with a compensation row", err)
	_, err = s.ClaimRenew(ctx, &ledgerdb.RenewParams{Key: compKey, Fence: c.Claim.Fence, TTL: time.Minute})
	must("Renew", err)
	_, err = s.ClaimSettle(ctx, &ledgerdb.SettleParams{Key: compKey, Fence: c.Claim.Fence, Owner: "job", Success: true, Result: json.RawMessage(`{"refund": "re_1"}`),
		Confirm: &ledgerdb.ConfirmParams{Key: compKey, ExternalID: "re_1", Response: json.RawMessage(`{"id": "re_1"}`)}})
	must("Settle with a confirmation", err)
	// A success settled after another owner took the lease over: an orphan.
	old, err := s.ClaimAcquire(ctx, &ledgerdb.ClaimParams{Key: "run-lease", Owner: "a", TTL: time.Minute})
	must("Claim", err)
	clock.Advance(2 * time.Minute)
	_, err = s.ClaimAcquire(ctx, &ledgerdb.ClaimParams{Key: "run-lease", Owner: "b", TTL: time.Minute})
	must("Claim over an expired lease", err)
	w, err := s.ClaimSettle(ctx, &ledgerdb.SettleParams{Key: "run-lease", Fence: old.Claim.Fence, Owner: "a", Success: true, Result: json.RawMessage(`{}`)})
	must("Settle superseded", err)
	if w.Orphan == nil {
		t.Errorf("a superseded success settled as the job's role recorded no orphan: %+v", w)
	}
	_, err = s.OrphanList(ctx)
	must("Orphans", err)
	_, err = s.ClaimGet(ctx, compKey)
	must("ClaimOf", err)
	_, err = s.ClaimGetMany(ctx, []string{compKey, "run-lease"})
	must("ClaimsByKey", err)
	_, err = s.ClaimListByEffect(ctx, "app_1:charge:1")
	must("ClaimsOf", err)

	esc, err := s.EscalationOpen(ctx, &ledgerdb.EscalateParams{Key: "app_1:charge:3:escalate:missing", Subject: "app_1:charge:3", Class: reconcile.ClassMissing,
		Reason: "no charge", RunID: "run_1"})
	must("Escalate", err)
	must("MarkPaged", s.EscalationMarkPaged(ctx, &ledgerdb.MarkPagedParams{Key: esc.Escalation.Key, Generation: esc.Escalation.Generation}))
	_, err = s.EscalationList(ctx, &ledgerdb.EscalationsParams{Open: true})
	must("Escalations", err)
	_, err = s.EscalationAcknowledge(ctx, &ledgerdb.AcknowledgeParams{Key: esc.Escalation.Key, By: "alice"})
	must("Acknowledge", err)
	_, err = s.EffectResolve(ctx, &ledgerdb.ResolveParams{EffectKey: "app_1:charge:3", As: reconcile.ResolutionAbandoned, Note: "never sent", By: "alice"})
	must("Resolve as abandoned", err)
	_, err = s.EffectResolve(ctx, &ledgerdb.ResolveParams{EffectKey: "app_1:charge:4", As: reconcile.ResolutionConfirmed, Note: "seen", By: "alice", ExternalID: "pi_4"})
	must("Resolve as confirmed", err)
	_, err = s.RunFinish(ctx, &ledgerdb.FinishRunParams{ID: "run_1", Status: reconcile.RunStatusSucceeded, Result: json.RawMessage(`{"ok": true}`)})
	must("FinishRun", err)
	_, err = s.RunGet(ctx, "run_1")
	must("Run", err)

	for _, want := range []struct {
		key    string
		status reconcile.Status
		id     string
	}{
		{"app_1:charge:0", reconcile.StatusConfirmed, "pi_0"},
		{"app_1:charge:2", reconcile.StatusConfirmed, "ch_2"},
		{"app_1:charge:3", reconcile.StatusAbandoned, ""},
		{"app_1:charge:4", reconcile.StatusConfirmed, "pi_4"},
		{compKey, reconcile.StatusConfirmed, "re_1"},
	} {
		e, err := admin.EffectGet(ctx, want.key)
		if err != nil {
			t.Fatalf("effect %s: %v", want.key, err)
		}
		if e.Status != want.status || e.ExternalID != want.id {
			t.Errorf("effect %s is %s %q after the job's run, want %s %q", want.key, e.Status, e.ExternalID, want.status, want.id)
		}
	}
	if r, err := admin.RunGet(ctx, "run_1"); err != nil || r.Status != reconcile.RunStatusSucceeded {
		t.Errorf("run_1 = %+v, %v; want succeeded", r, err)
	}
}

// A role that may not use the ledger's schema is told so: without USAGE,
// PostgreSQL skips the schema in the search path, and the job once said
// the ledger needed every migration.
func TestARoleWithoutUsageOfTheSchemaIsToldSo(t *testing.T) {
	ctx := context.Background()
	adminURL := pgtest.Schema(t)
	if _, err := open(t, adminURL, nil).SchemaMigrate(ctx); err != nil {
		t.Fatal(err)
	}
	admin := connect(t, adminURL)
	_, roleURL := newRole(t, admin, adminURL, "nousage")
	s, err := postgres.Open(ctx, roleURL, ledgerdb.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.SchemaCheck(ctx)
	if err == nil || !strings.Contains(err.Error(), "USAGE") || strings.Contains(err.Error(), "migration") {
		t.Errorf("CheckSchema as a role without USAGE = %v, want it to say the role may not use the schema", err)
	}
}
