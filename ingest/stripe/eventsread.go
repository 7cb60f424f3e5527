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
	"unicode/utf8"

	"reconcile"
	"reconcile/ingest/tabular"
)

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
	p := &eventParser{sink: sink, seen: map[string]int{}, currencies: map[string]string{}, testMode: opt.TestMode}
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

// jsonScan reads one JSON value held in a string, for decodeFast. It checks
// the syntax as strictly as encoding/json does, or more so: once it meets
// anything it is unsure of, it sets failed and finds the end of the text
// wherever it reads next.
type jsonScan struct {
	s      string
	i      int // the next byte to read
	depth  int // objects and arrays open
	failed bool
}

// maxScanDepth bounds the nesting jsonScan reads, far below encoding/json's
// limit of 10000: deeper text is left to encoding/json.
const maxScanDepth = 100

func (d *jsonScan) fail() {
	d.failed = true
	d.i = len(d.s)
}

// peek skips white space and returns the next byte, 0 at the end.
func (d *jsonScan) peek() byte {
	for ; d.i < len(d.s); d.i++ {
		switch c := d.s[d.i]; c {
		case ' ', '\t', '\n', '\r':
		default:
			return c
		}
	}
	return 0
}

// end checks that nothing but white space follows.
func (d *jsonScan) end() {
	if d.peek(); d.i != len(d.s) {
		d.fail()
	}
}

// open reads the '{' or '[' that starts an object or array and reports
// whether a member or element follows; of an empty one it reads the end
// too. A loop over the members reads each and calls next:
//
//	for more := d.open('{'); more; more = d.next('}') { d.key(); d.value() }
func (d *jsonScan) open(c byte) bool {
	if d.peek() != c {
		d.fail()
		return false
	}
	d.i++
	if d.depth++; d.depth > maxScanDepth {
		d.fail()
		return false
	}
	end := byte('}')
	if c == '[' {
		end = ']'
	}
	if d.peek() == end {
		d.i++
		d.depth--
		return false
	}
	return true
}

// next reads what follows a member or element: a comma, reporting true, or
// the end of the object or array, reporting false.
func (d *jsonScan) next(end byte) bool {
	switch d.peek() {
	case ',':
		d.i++
		return true
	case end:
		d.i++
		d.depth--
		return false
	}
	d.fail()
	return false
}

// key reads a member's key and the colon after it, and returns the key as
// written between its quotes.
func (d *jsonScan) key() string {
	k, _ := d.str()
	if d.peek() != ':' {
		d.fail()
		return ""
	}
	d.i++
	return k
}

// null reads a null, if that is what follows.
func (d *jsonScan) null() bool {
	if d.peek() != 'n' {
		return false
	}
	d.literal("null")
	return true
}

// value reads a value of any kind and returns its text.
func (d *jsonScan) value() string {
	c := d.peek()
	start := d.i
	switch {
	case c == '"':
		d.str()
	case c == '{':
		for more := d.open('{'); more; more = d.next('}') {
			d.key()
			d.value()
		}
	case c == '[':
		for more := d.open('['); more; more = d.next(']') {
			d.value()
		}
	case c == 't':
		d.literal("true")
	case c == 'f':
		d.literal("false")
	case c == 'n':
		d.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		d.number()
	default:
		d.fail()
	}
	return d.s[start:d.i]
}

func (d *jsonScan) literal(word string) {
	if !strings.HasPrefix(d.s[d.i:], word) {
		d.fail()
		return
	}
	d.i += len(word)
}

// number reads a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *jsonScan) number() {
	s, i := d.s, d.i
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		i = digits(s, i)
	default:
		d.fail()
		return
	}
	if i < len(s) && s[i] == '.' {
		if i++; i == len(s) || !isDigit(s[i]) {
			d.fail()
			return
		}
		i = digits(s, i)
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		if i++; i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i == len(s) || !isDigit(s[i]) {
			d.fail()
			return
		}
		i = digits(s, i)
	}
	d.i = i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// digits returns the index of the first byte from i on that is no digit.
func digits(s string, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

// str reads a string and returns the text between its quotes, and whether
// that is plain: ASCII without escapes, so the text is the string.
func (d *jsonScan) str() (string, bool) {
	if d.peek() != '"' {
		d.fail()
		return "", false
	}
	s := d.s
	start := d.i + 1
	plain := true
	for i := start; i < len(s); {
		if plainByte[s[i]] {
			i++
			continue
		}
		switch c := s[i]; {
		case c == '"':
			d.i = i + 1
			return s[start:i], plain
		case c == '\\':
			plain = false
			if i+1 == len(s) {
				d.fail()
				return "", false
			}
			switch s[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(s) || !isHex(s[i+2]) || !isHex(s[i+3]) || !isHex(s[i+4]) || !isHex(s[i+5]) {
					d.fail()
					return "", false
				}
				i += 6
			default:
				d.fail()
				return "", false
			}
		case c < ' ':
			d.fail() // control characters must be escaped
			return "", false
		default: // the bytes of a multi-byte character, checked when decoded
			plain = false
			i++
		}
	}
	d.fail()
	return "", false
}

func isHex(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// plainByte holds the bytes a string may hold as they are: printable ASCII
// but the quote and the backslash.
var plainByte = func() (t [256]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()
