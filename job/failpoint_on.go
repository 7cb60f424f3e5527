//go:build failpoints

package job

import (
	"os"
	"syscall"
	"time"

	"reconcile/clock"
)

// Failpoints is true in a binary built with -tags failpoints: the crash
// matrix's, never the one deployed.
const Failpoints = true

// crash is the hook the crash tests use: when RECONCILE_TEST_CRASH_AT names
// a point (such as "compensate:called" or "run:acted"), the process kills
// itself there with SIGKILL, as a power cut would; it does nothing
// otherwise.
func crash(point string) {
	if at := os.Getenv("RECONCILE_TEST_CRASH_AT"); at != "" && point == at {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}

// SystemClock is the machine's clock, moved forward by
// RECONCILE_TEST_CLOCK_OFFSET (a duration) when it is set: the crash
// matrix lets a killed run's leases run out by starting the next run
// later, instead of waiting for them.
func SystemClock() clock.Clock {
	d, err := time.ParseDuration(os.Getenv("RECONCILE_TEST_CLOCK_OFFSET"))
	if err != nil || d == 0 {
		return clock.System{}
	}
	return shifted{d}
}

// shifted is the machine's clock, moved by a fixed duration.
type shifted struct{ by time.Duration }

func (s shifted) Now() time.Time                         { return time.Now().Add(s.by) }
func (s shifted) After(d time.Duration) <-chan time.Time { return time.After(d) }
