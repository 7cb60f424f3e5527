package stripe

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"reconcile"
	"reconcile/ingest/tabular"
)

// EventsOptions configures ParseEvents. The zero value reads live events.
type EventsOptions struct {
	// TestMode takes the events of Stripe's test mode ("livemode": false)
	// as evidence and ignores live ones, rather than the other way round.
	TestMode bool
}

// maxLine bounds one line of a JSON Lines dump, and maxEvent one event of
// a JSON array or of events one after another: the bound every reader has
// on one row (tabular.MaxLine). An event with every object expanded stays
// far below it.
const maxLine = tabular.MaxLine

var maxEvent int64 = maxLine // a variable, for tests

// errEventTooLong stops a streamed event that runs past maxEvent, before
// the decoder holds it.
var errEventTooLong = errors.New("the event starting here is longer than the bound on one event (64 MiB): the file is corrupt, or not a webhook dump")

// DetectEvents reports whether a file looks like a dump of Stripe webhook
// events: JSON objects or an array of them, mentioning an event object or a
// webhook log's "body".
func DetectEvents(name string, head []byte) bool {
	head = bytes.TrimLeft(bytes.TrimPrefix(head, bom), " \t\r\n")
	if len(head) == 0 || (head[0] != '{' && head[0] != '[') {
		return false
	}
	if bytes.Contains(head, []byte(`"object": "event"`)) || bytes.Contains(head, []byte(`"object":"event"`)) {
		return true
	}
	for rest := head; ; {
		i := bytes.Index(rest, []byte(`"body"`))
		if i < 0 {
			return false
		}
		rest = bytes.TrimLeft(rest[i+len(`"body"`):], " \t\r\n")
		if len(rest) > 0 && rest[0] == ':' {
			return true
		}
	}
}

// ParseEvents reads Stripe webhook events and sends one outcome per event to
// sink. It accepts JSON Lines (one event, or one {"received_at", "body"}
// wrapper, per line), a JSON array of events, and events pretty-printed one
// after another (as the Stripe CLI prints them). In JSON Lines a line that is
// not JSON is rejected and reading goes on; in the other two forms a syntax
// error cannot be stepped over and stops the parse with the line.
func ParseEvents(ctx context.Context, r io.Reader, opt EventsOptions, sink reconcile.RowSink) error {
	br := bufio.NewReaderSize(r, 64<<10)
	if b, err := br.Peek(len(bom)); err == nil && bytes.Equal(b, bom) {
		br.Discard(len(bom))
	}
	head, err := br.Peek(br.Size())
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return fmt.Errorf("line 1: %w", err)
	}
	p := &eventParser{sink: sink, seen: newSeenIDs(), currencies: map[string]string{}, testMode: opt.TestMode}
	start := bytes.TrimLeft(head, " \t\r\n")
	if len(start) == 0 {
		if len(head) < br.Size() {
			return nil // nothing but space: no events that day
		}
		return p.lines(ctx, br)
	}
	line := 1 + bytes.Count(head[:len(head)-len(start)], []byte("\n"))
	switch {
	case start[0] == '[':
		return p.stream(ctx, br, true)
	case start[0] != '{':
		return fmt.Errorf("line %d: not a Stripe event dump: it starts with %q, not a JSON object or array", line, start[0])
	case bytes.Equal(bytes.TrimSpace(firstLine(start)), []byte("{")):
		// A line that is only "{" is no JSON Lines record: the events are
		// pretty-printed.
		return p.stream(ctx, br, false)
	}
	return p.lines(ctx, br)
}

// lines reads JSON Lines, one value per line.
func (p *eventParser) lines(ctx context.Context, r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	sc.Split(p.splitLines)
	line, rows := 0, 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		if err := cancelled(ctx, rows); err != nil {
			return err
		}
		rows++
		if err := p.value(line, string(text)); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("line %d: line longer than %d bytes: %w", line+1, maxLine, err)
		}
		return fmt.Errorf("line %d: %w", line+1, err)
	}
	return nil
}

// splitLines is bufio.ScanLines, noting whether the line it gives ends the
// input without a line terminator: the last line of a dump that may still
// be being written.
func (p *eventParser) splitLines(data []byte, atEOF bool) (int, []byte, error) {
	n, line, err := bufio.ScanLines(data, atEOF)
	p.cut = line != nil && (n == 0 || data[n-1] != '\n')
	return n, line, err
}

// cutEvent is the error for the event on the unterminated last line of a
// dump, which the parser rejects: JSON that ends too early is cut off.
func cutEvent(line int, raw string, rej rejection) error {
	what := "the last line has no line terminator and its event is rejected (" + string(rej) + ")"
	if err := json.NewDecoder(strings.NewReader(raw)).Decode(new(json.RawMessage)); errors.Is(err, io.ErrUnexpectedEOF) {
		what = "the last line is cut in the middle of an event (no line terminator, incomplete JSON)"
	}
	return &tabular.CutError{Line: line, What: what}
}

// stream reads a JSON array of events, or events one after another, with a
// json.Decoder; lines are worked out from the decoder's input offset.
func (p *eventParser) stream(ctx context.Context, r io.Reader, array bool) error {
	lc := &lineCounter{r: r, line: 1, limit: maxEvent}
	dec := json.NewDecoder(lc)
	if array {
		if _, err := dec.Token(); err != nil { // the '[' seen already
			return p.streamError(dec, lc, err)
		}
	}
	for rows := 0; dec.More(); rows++ {
		if err := cancelled(ctx, rows); err != nil {
			return err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return p.streamError(dec, lc, err)
		}
		lc.mark = dec.InputOffset()
		line := lc.lineAt(dec.InputOffset() - int64(len(raw)))
		if err := p.value(line, string(raw)); err != nil {
			return err
		}
	}
	if array {
		if _, err := dec.Token(); err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("line %d: the array of events is not closed with ']': the file looks truncated", lc.lineAt(dec.InputOffset()))
			}
			return p.streamError(dec, lc, err)
		}
	}
	if tok, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return p.streamError(dec, lc, err)
		}
		return fmt.Errorf("line %d: unexpected %v after the events", lc.lineAt(dec.InputOffset()), tok)
	}
	return nil
}

// streamError turns the decoder's error into one that names the line of the
// error and of the event it is in. The decoder's own syntax error offsets
// count only the bytes of values, so the failing value is decoded again on
// its own to find the error in it.
func (p *eventParser) streamError(dec *json.Decoder, lc *lineCounter, err error) error {
	rest, _ := io.ReadAll(dec.Buffered())
	trimmed := bytes.TrimLeft(rest, " \t\r\n")
	start := dec.InputOffset() + int64(len(rest)-len(trimmed))
	at := start
	var se *json.SyntaxError
	if errors.As(json.NewDecoder(bytes.NewReader(trimmed)).Decode(new(json.RawMessage)), &se) {
		at += se.Offset
	}
	startLine := lc.lineAt(start)
	errLine := lc.lineAt(at)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("line %d: the event starting here is cut off; the file looks truncated: %w", startLine, err)
	case errors.As(err, &se) && errLine != startLine:
		return fmt.Errorf("line %d: malformed JSON in the event starting on line %d: %w", errLine, startLine, err)
	case errors.As(err, &se):
		return fmt.Errorf("line %d: malformed JSON: %w", errLine, err)
	}
	return fmt.Errorf("line %d: %w", startLine, err)
}

// lineCounter passes reads through and notes where the line ends are, so
// that an input offset can be turned into a line number. Offsets must be
// asked for in increasing order; line ends behind the last one asked for
// are forgotten.
type lineCounter struct {
	r   io.Reader
	off int64 // bytes read so far
	// limit bounds what may be read past mark, the end of the last value
	// decoded: 0 is no bound.
	limit, mark int64
	ends        []int64 // offsets of the line ends read
	next        int     // the first of ends not yet passed
	line        int     // the line at the last offset asked for
}

func (c *lineCounter) Read(b []byte) (int, error) {
	if c.limit > 0 && c.off-c.mark > c.limit {
		return 0, errEventTooLong
	}
	n, err := c.r.Read(b)
	for i := 0; i < n; {
		j := bytes.IndexByte(b[i:n], '\n')
		if j < 0 {
			break
		}
		c.ends = append(c.ends, c.off+int64(i+j))
		i += j + 1
	}
	c.off += int64(n)
	return n, err
}

// lineAt returns the 1-based line on which the byte at off lies.
func (c *lineCounter) lineAt(off int64) int {
	for c.next < len(c.ends) && c.ends[c.next] < off {
		c.next++
		c.line++
	}
	if c.next >= 1024 && 2*c.next >= len(c.ends) {
		c.ends = append(c.ends[:0], c.ends[c.next:]...)
		c.next = 0
	}
	return c.line
}

// eventParser turns decoded JSON values into outcomes, remembering which
// event ids it has seen so that a redelivered event counts once.
type eventParser struct {
	sink       reconcile.RowSink
	seen       *seenIDs          // event id → line first seen
	currencies map[string]string // currency as written → its code, for those that passed
	testMode   bool              // read test-mode events, not live ones
	// cut says that the JSON Lines line being read ends the input without
	// a line terminator: an event on it must not be rejected, as it may be
	// cut off (see tabular.CutError).
	cut bool
}

// rejection is a row-level problem: the row is rejected with its text.
type rejection string

func (r rejection) Error() string { return string(r) }

func reject(format string, args ...any) error { return rejection(fmt.Sprintf(format, args...)) }

// value gives one JSON value, read from line, its outcome.
func (p *eventParser) value(line int, raw string) error {
	evs, ignore, err := p.outcome(line, raw)
	var rej rejection
	switch {
	case errors.As(err, &rej) && p.cut:
		return cutEvent(line, raw, rej)
	case errors.As(err, &rej):
		return p.sink.Reject(line, raw, string(rej))
	case err != nil:
		return err
	case ignore != "":
		return p.sink.Ignore(line, ignore)
	}
	for _, e := range evs {
		if err := p.sink.Evidence(e); err != nil {
			return err
		}
	}
	return nil
}

// outcome decodes one value: the evidence it gives, or why it is ignored,
// or a rejection.
func (p *eventParser) outcome(line int, raw string) ([]*reconcile.Evidence, string, error) {
	ev, err := decodeEvent(raw)
	if err != nil {
		return nil, "", err
	}
	// Stripe says livemode on every event: one that does not was written
	// by hand, and is taken for live, as an API call is unless told
	// otherwise.
	if live := ev.Livemode == nil || *ev.Livemode; live == p.testMode {
		if live {
			return nil, "live event (livemode true); this run reads test-mode events (--livemode=false)", nil
		}
		return nil, "test-mode event (livemode false); this run reads live events (--livemode=false reads test mode)", nil
	}
	if first, ok := p.seen.line(ev.ID); ok {
		return nil, fmt.Sprintf("duplicate of event %s (line %d)", ev.ID, first), nil
	}
	p.seen.add(ev.ID, line)
	switch {
	case !ev.Created.set:
		return nil, "", reject("event %s has no created time", ev.ID)
	case ev.Created.bad != "":
		return nil, "", reject("event %s: created %s is not a unix time in seconds", ev.ID, ev.Created.bad)
	}
	h, ok := eventHandlers[ev.Type]
	if !ok && strings.HasPrefix(ev.Type, "charge.dispute.") {
		h, ok = eventHandler{"dispute", (*eventParser).dispute}, true
	}
	if !ok {
		return nil, fmt.Sprintf("event type %s does not move money we track", ev.Type), nil
	}
	o := ev.Data.Object
	if te := ev.objectErr; te != nil {
		return nil, "", reject("event %s: data.object is not a %s: field %s is a JSON %s", ev.ID, h.object, te.Field, te.Value)
	}
	if o.Object != "" && o.Object != h.object {
		return nil, "", reject("event %s (%s) carries a %s object, not a %s", ev.ID, ev.Type, o.Object, h.object)
	}
	o.Object = h.object // for messages, when the dump left it out
	base := reconcile.Evidence{
		Provider: provider,
		RawKind:  ev.Type,
		Time:     time.Unix(ev.Created.v, 0).UTC(),
		Line:     line,
		Raw:      raw,
	}
	return h.fn(p, ev, o, base)
}
