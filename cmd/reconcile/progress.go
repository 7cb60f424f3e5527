package main

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/mattn/go-isatty"

	"reconcile/report"
)

// showProgress redraws line() on one line of stderr every 200 ms while a
// step works, when stderr is a terminal; elsewhere (cron, CI, a pipe) it
// draws nothing. The line is made Printable: it names inputs, whose names
// must not draw on the terminal. It returns the function that ends the
// display.
func (a *app) showProgress(line func() string) (stop func()) {
	f, ok := a.stderr.(*os.File)
	if !ok || !isatty.IsTerminal(f.Fd()) {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				fmt.Fprint(f, "\r\033[K")
				return
			case <-t.C:
				fmt.Fprintf(f, "\r\033[K%s", report.Printable(line()))
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}
