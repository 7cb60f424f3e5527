package job

import (
	"fmt"
	"runtime"
	"time"

	"reconcile/ingest"
)

// phase starts timing one phase of a run; the function it returns logs
// the phase's time and the heap at its end, at debug level.
func (j *Job) phase(name string) (done func()) {
	start := j.now()
	return func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		j.log().Debug("phase done", "phase", name, "elapsed", j.now().Sub(start).Round(time.Millisecond),
			"heap_mb", ms.HeapAlloc>>20, "heap_sys_mb", ms.HeapSys>>20)
	}
}

// ingestProgress shows the bytes and rows read of one input.
func (j *Job) ingestProgress(verb string, src ingest.Source, opt *ingest.Options) (stop func()) {
	p := &ingest.Progress{}
	opt.Progress = p
	start := j.now()
	return j.progress(func() string {
		return progressLine(verb, src.URI, p.Bytes.Load(), src.Size, p.Rows.Load(), j.now().Sub(start))
	})
}

// progressLine says how far a read is: of how much, in percent, and how
// fast, when the size is known.
func progressLine(verb, uri string, done, total, rows int64, elapsed time.Duration) string {
	line := fmt.Sprintf("%s %s: %s", verb, uri, size(done))
	if total > 0 {
		line += fmt.Sprintf(" of %s (%d%%)", size(total), min(100, done*100/total))
	}
	line += fmt.Sprintf(", %d rows", rows)
	if s := elapsed.Seconds(); s >= 1 {
		line += fmt.Sprintf(", %s/s", size(int64(float64(done)/s)))
	}
	return line
}

// size writes a byte count for people.
func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
