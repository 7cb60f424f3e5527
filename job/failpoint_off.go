//go:build !failpoints

package job

import "reconcile/clock"

// Failpoints is false in the binary deployed: no environment variable can
// make it kill itself.
const Failpoints = false

// crash is the crash tests' hook, which a binary built without
// -tags failpoints does not have.
func crash(string) {}

// SystemClock is the machine's clock.
func SystemClock() clock.Clock { return clock.System{} }
