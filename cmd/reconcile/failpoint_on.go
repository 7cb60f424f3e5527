//go:build failpoints

package main

import (
	"os"
	"syscall"
)

// failpoints is true in a binary built with -tags failpoints: the crash
// matrix's, never the one deployed.
const failpoints = true

// crashHook returns the hook the crash tests use: when
// RECONCILE_TEST_CRASH_AT names a point (such as "compensate:called" or
// "run:acted"), the process kills itself there with SIGKILL, as a power cut
// would; it does nothing otherwise.
func crashHook() func(point string) {
	at := os.Getenv("RECONCILE_TEST_CRASH_AT")
	return func(point string) {
		if at != "" && point == at {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	}
}
