//go:build !failpoints

package main

import "testing"

// The binary deployed has no failpoints: RECONCILE_TEST_CRASH_AT does
// nothing to it.
func TestProductionBuildHasNoCrashHook(t *testing.T) {
	t.Setenv("RECONCILE_TEST_CRASH_AT", "run:acted")
	crashHook()("run:acted") // would kill the test process
}
