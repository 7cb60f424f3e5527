//go:build !failpoints

package job

import (
	"testing"

	"reconcile/clock"
)

// The binary deployed has no failpoints: RECONCILE_TEST_CRASH_AT does
// nothing to it, nor RECONCILE_TEST_CLOCK_OFFSET to its clock.
func TestProductionBuildHasNoCrashHook(t *testing.T) {
	t.Setenv("RECONCILE_TEST_CRASH_AT", "run:acted")
	t.Setenv("RECONCILE_TEST_CLOCK_OFFSET", "1h")
	crash("run:acted") // would kill the test process
	if c := SystemClock(); c != (clock.System{}) {
		t.Errorf("SystemClock() = %#v, want the machine's", c)
	}
}
