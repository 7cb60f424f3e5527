package job

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"reconcile/ledgerdb/ledgerdbtest"
)

func TestDbgAlone(t *testing.T) {
	nights := writeNights(t, 0)
	a := runNights(t, ledgerdbtest.New(t, "sqlite"), nights, nightRuns{size: 1})
	b := runNights(t, ledgerdbtest.New(t, "sqlite"), nights, nightRuns{size: 1, alone: true})
	c := runNights(t, ledgerdbtest.New(t, "postgres"), nights, nightRuns{size: 1, alone: true})
	for i := range nights {
		t.Logf("night %d sqlite normal vs alone:\n%s", i+1, cmp.Diff(a[i], b[i]))
		t.Logf("night %d alone sqlite vs postgres:\n%s", i+1, cmp.Diff(b[i], c[i]))
	}
}
