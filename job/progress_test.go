package job

import (
	"testing"
	"time"
)

func TestProgressLineSaysOfHowMuchAndHowFast(t *testing.T) {
	got := progressLine("ingesting", "s3://b/k", 50<<20, 200<<20, 1234, 2*time.Second)
	if want := "ingesting s3://b/k: 50.0 MiB of 200.0 MiB (25%), 1234 rows, 25.0 MiB/s"; got != want {
		t.Errorf("progressLine = %q, want %q", got, want)
	}
	if got := progressLine("reading", "-", 10, -1, 1, 0); got != "reading -: 10 B, 1 rows" {
		t.Errorf("progressLine of an unknown size = %q", got)
	}
}
