package main

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/xuri/excelize/v2"

	"reconcile/ledgerdb/ledgerdbtest"
)

// appTimestamps are the ways an application writes created_at and
// confirmed_at with plain SQL (DESIGN section 4): its database's own clock
// and the text forms drivers produce, with a space or a T, a fraction or
// none, a zone written every way or (SQLite) none, which means UTC.
var appTimestamps = map[string][]string{
	"sqlite": {"CURRENT_TIMESTAMP", "datetime('now', '-3 days')", "'2026-11-28 10:00:00'", "'2026-11-28 10:00:00.123'",
		"'2026-11-28T10:00:00+01:00'", "'2026-11-28 09:00:00+00:00'", "'2026-11-28 09:00:00-0130'", "'2026-11-28T09:00:00.5Z'",
		"strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-2 days')"},
	"postgres": {"CURRENT_TIMESTAMP", "now() - interval '3 days'", "'2026-11-28 10:00:00+00'", "'2026-11-28T10:00:00.123456Z'",
		"'2026-11-28 11:00:00+01:00'", "'2026-11-28 09:00:00-01:30'", "timestamptz '2026-11-28 10:00:00 UTC'"},
}

// appDB is the application's own connection to its ledger: plain SQL,
// nothing of ours.
func appDB(t *testing.T, l *ledgerdbtest.Ledger) func(query string, args ...any) {
	t.Helper()
	ctx := context.Background()
	if path, ok := strings.CutPrefix(l.URL, "sqlite:"); ok {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dollar := regexp.MustCompile(`\$\d+`)
		return func(query string, args ...any) {
			t.Helper()
			if _, err := db.ExecContext(ctx, dollar.ReplaceAllString(query, "?"), args...); err != nil {
				t.Fatalf("%s: %v", query, err)
			}
		}
	}
	conn, err := pgx.Connect(ctx, l.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.WithoutCancel(ctx)) })
	return func(query string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, query, args...); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}
}

// An application writes its ledger the ordinary way, with plain SQL and
// its database's clock or its driver's text forms. A run with --apply
// repairs what needs repairing on it, once, and show and export read every
// row, on both ledgers.
func TestApplyShowAndExportOnALedgerWrittenByAnApplication(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		h := newHostile(t, l)
		exec := appDB(t, l)
		insert := func(key, status, extID, form, request string) {
			confirmed := "NULL"
			if status == "confirmed" {
				confirmed = form
			}
			var ext any
			if extID != "" {
				ext = extID
			}
			exec(`INSERT INTO effect (key, run_id, step, provider, status, external_id, request, created_at, confirmed_at)
				VALUES ($1, 'app', 'charge', 'stripe', $2, $3, $4, `+form+`, `+confirmed+`)`, key, status, ext, request)
		}
		forms := appTimestamps[l.Driver]
		var keys []string
		for i, form := range forms {
			key := fmt.Sprintf("app:charge:%d", i)
			pi, _ := h.charge(key, key, 1000+int64(i))
			insert(key, "confirmed", pi, form, chargeReq(key, 1000+int64(i)))
			keys = append(keys, key)
		}
		// Charged twice, and never charged: the job repairs both.
		pi, _ := h.charge("d", "app:charge:dup", 5000)
		h.charge("d-retry", "app:charge:dup", 5000)
		insert("app:charge:dup", "confirmed", pi, forms[1], chargeReq("app:charge:dup", 5000))
		insert("app:charge:lost", "attempted", "", forms[1], chargeReq("app:charge:lost", 4000))
		keys = append(keys, "app:charge:dup", "app:charge:lost")

		report := h.report("itemized.csv", nil)
		code, r, errOut := h.run([]string{report})
		if r == nil || code != 0 {
			t.Fatalf("run --apply exited %d: %+v\n%s", code, r, errOut)
		}
		if r.Counts["confirmed"] != len(forms) || r.Counts["duplicated"] != 1 || r.Counts["missing"] != 1 {
			t.Errorf("counts %v, want %d confirmed, 1 duplicated, 1 missing", r.Counts, len(forms))
		}
		h.money(1, len(forms)+3) // one compensation; the lost charge made once
		if code, _, errOut := h.run([]string{report}); code != 0 {
			t.Errorf("second run exited %d: %s", code, errOut)
		}
		h.money(1, len(forms)+3)

		for _, key := range keys {
			if code, out, errOut := reconcileCmd(t, "show", key, "--ledger", l.URL); code != 0 || !strings.Contains(out, key) {
				t.Errorf("show %s exited %d: %s%s", key, code, out, errOut)
			}
		}
		xlsx := filepath.Join(t.TempDir(), "export.xlsx")
		if code, out, errOut := reconcileCmd(t, "export", "--run", r.RunID, "--xlsx", xlsx, "--ledger", l.URL); code != 0 {
			t.Fatalf("export exited %d: %s%s", code, out, errOut)
		}
		f, err := excelize.OpenFile(xlsx)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		found := false
		for _, sheet := range f.GetSheetList() {
			rows, _ := f.GetRows(sheet)
			for _, row := range rows {
				found = found || strings.Contains(strings.Join(row, " "), "app:charge:lost")
			}
		}
		if !found {
			t.Errorf("the export names no app:charge:lost")
		}
	})
}
