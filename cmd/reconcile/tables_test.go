package main

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/ledgerdbtest"
)

// The on-call tables fit a terminal: a long reason is cut, and no line
// ends in padding.
func TestOnCallTablesFitATerminal(t *testing.T) {
	l := ledgerdbtest.New(t, "sqlite")
	store := l.Open(t, nil)
	long := strings.Repeat("the provider answered something long and detailed; ", 12)
	if _, err := store.EscalationOpen(context.Background(), &ledgerdb.EscalateParams{Key: "shop:charge:1:escalate:mismatched", Subject: "shop:charge:1",
		Class: reconcile.ClassMismatched, Reason: long, RunID: "rec_1"}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := reconcileCmd(t, "escalations", "--ledger", l.URL)
	if code != 0 || !strings.Contains(out, "shop:charge:1") {
		t.Fatalf("escalations = exit %d: %s%s", code, out, errOut)
	}
	for _, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n > 160 {
			t.Errorf("a line of %d columns: %q", n, line)
		}
		if strings.TrimRight(line, " ") != line {
			t.Errorf("trailing padding: %q", line)
		}
	}
}
