package stripe

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"reconcile"
)

// An event of a JSON array (or of events one after another, pretty
// printed) may not run past the bound on one row: a gzip bomb that expands
// to one endless event must stop with the line, not take every byte of
// memory. The JSON Lines reader has had the bound on a line all along.
func TestStreamedEventOverTheBoundStops(t *testing.T) {
	defer func(old int64) { maxEvent = old }(maxEvent)
	maxEvent = 1 << 20
	// An event of 8 MiB in an array: it would be read whole; with the
	// bound at 1 MiB it stops there.
	r := io.MultiReader(strings.NewReader("[\n"+`{"id":"evt_1","object":"event","type":"charge.succeeded","data":{"object":{"description":"`),
		io.LimitReader(xs{}, 8<<20), strings.NewReader(`"}}}]`))
	err := ParseEvents(context.Background(), r, EventsOptions{}, &discard{})
	if !errors.Is(err, errEventTooLong) || !strings.HasPrefix(err.Error(), "line 2: ") {
		t.Errorf("ParseEvents(an 8 MiB event) = %v, want the bound, on the line the event starts", err)
	}
}

// xs is a description that goes on.
type xs struct{}

func (xs) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = 'x'
	}
	return len(b), nil
}

type discard struct{}

func (*discard) Evidence(*reconcile.Evidence) error { return nil }
func (*discard) Reject(int, string, string) error   { return nil }
func (*discard) Ignore(int, string) error           { return nil }
