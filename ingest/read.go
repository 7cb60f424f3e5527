package ingest

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"path"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"reconcile"
	"reconcile/ingest/paypal"
	"reconcile/ingest/tabular"
)

// Sink receives what Read makes of a source: evidence and rejected rows,
// with their provenance set.
type Sink interface {
	Evidence(e *reconcile.Evidence) error
	Reject(r *reconcile.Rejected) error
}

// Total is the count and signed gross sum of one currency and kind.
type Total struct {
	Provider    string
	Currency    string
	Kind        reconcile.Kind
	Count       int
	AmountMinor int64
	FeeMinor    int64 // the fees, positive as a cost; 0 where the input gives none
	// Overflow is set when the sum went past int64: AmountMinor is then
	// the bound it saturated at, never a wrapped total.
	Overflow bool
}

// Input is what reading one source gave: its account, why rows were
// ignored and what its evidence adds up to (report.InputOf is how the
// outputs show it). A webhook event that carries several refunds is one row
// per refund.
type Input struct {
	reconcile.SourceAccount
	Ignores map[string]int // reason → rows
	Totals  []Total
	// AlreadyIngested is set by callers that found the same content in the
	// ledger's manifest and so read nothing.
	AlreadyIngested bool
}

// MaxClockSkew is how much later than the run's clock evidence may be
// dated: the providers' clocks and ours differ by a little, and a row dated
// later than that is no account of anything that has happened yet.
const MaxClockSkew = 5 * time.Minute

// maxIgnoreReasons bounds Input.Ignores; further reasons count as "other".
const maxIgnoreReasons = 50

// headSize is how much of an input format detection looks at.
const headSize = 64 << 10

// Read parses one source and hands its evidence and rejected rows to out.
// An input that cannot be read at all (missing, of no known format,
// truncated, corrupt) fails with an *InputError; out may then have been
// given rows, so a caller that writes them must do so in a transaction it
// can roll back.
func Read(ctx context.Context, src Source, opt *Options, out Sink) (*Input, error) {
	rc, err := src.Open(ctx)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	raw := &hashingReader{r: rc, h: sha256.New(), prog: opt.Progress}
	in := &Input{SourceAccount: reconcile.SourceAccount{URI: src.URI, ETag: src.ETag}}

	stored := bufio.NewReaderSize(raw, headSize)
	var content io.Reader = stored
	name := path.Base(src.URI)
	if magic, _ := stored.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		gz, err := gzip.NewReader(stored)
		if err != nil {
			return nil, inputErr(src.URI, "bad gzip header: %v", err)
		}
		content = gz
		name = strings.TrimSuffix(name, ".gz")
	}
	limit := opt.MaxInputBytes
	if limit == 0 {
		limit = DefaultMaxInputBytes
	}
	bounded := &boundedReader{r: content, left: limit}
	body := bufio.NewReaderSize(bounded, headSize)
	tooLarge := func() error {
		return inputErr(src.URI, "more than %s once decompressed (--max-input-bytes): no provider writes a file that large, "+
			"so it is most likely a gzip bomb or the wrong file; raise --max-input-bytes to read it", tabular.FormatBytes(limit))
	}
	head, err := body.Peek(headSize)
	if bounded.over {
		return nil, tooLarge()
	}
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, inputErr(src.URI, "%v", err)
	}
	f, err := choose(src.URI, name, head, opt)
	if err != nil {
		return nil, err
	}
	in.Format = f.Name
	if len(bytes.TrimSpace(head)) > 0 {
		now := time.Now
		if opt.Now != nil {
			now = opt.Now
		}
		cs := &countingSink{in: in, out: out, uri: src.URI, totals: map[totalKey]*Total{}, prog: opt.Progress, clock: now().UTC(),
			webhook: slices.Contains(webhookFormats, f.Name)}
		if err := f.Parse(ctx, body, opt, cs); err != nil {
			if ctx.Err() != nil || cs.sinkErr != nil {
				return nil, err // not the input's fault
			}
			if bounded.over {
				return nil, tooLarge()
			}
			return nil, &InputError{URI: src.URI, Err: fmt.Errorf("%s: %w", f.Name, err)}
		}
		in.Totals = cs.sortedTotals()
	}
	// Read to the end, through the gzip trailer, so that a truncated file
	// fails and the hash covers every byte.
	if _, err := io.Copy(io.Discard, body); err != nil {
		if bounded.over {
			return nil, tooLarge()
		}
		return nil, inputErr(src.URI, "truncated or corrupt: %v", err)
	}
	if _, err := io.Copy(io.Discard, raw); err != nil {
		return nil, inputErr(src.URI, "%v", err)
	}
	in.Hash = hex.EncodeToString(raw.h.Sum(nil))
	in.Bytes = raw.n
	return in, nil
}

// choose picks the format named in opt, or the first that recognises head.
// An empty input has format "empty" and no rows.
func choose(uri, name string, head []byte, opt *Options) (Format, error) {
	if opt.Format != "" {
		f, ok := formatByName(opt.Format)
		if !ok {
			return Format{}, inputErr(uri, "unknown format %q (known: %s)", opt.Format, strings.Join(FormatNames(), ", "))
		}
		return f, nil
	}
	if len(bytes.TrimSpace(head)) == 0 {
		return Format{Name: "empty"}, nil
	}
	for _, f := range Formats {
		if f.Detect(name, head) {
			return f, nil
		}
	}
	// A head shorter than headSize is the whole input: Peek stopped at its end.
	if why := paypal.Headless(name, head, len(head) < headSize); why != "" {
		return Format{}, inputErr(uri, "%s", why)
	}
	first, _, _ := bytes.Cut(head, []byte("\n"))
	if len(first) > 120 {
		first = first[:120]
	}
	return Format{}, inputErr(uri, "unrecognized format (it starts %q); pass --format with one of %s, or --format csv with --mapping FILE",
		strings.TrimSpace(string(first)), strings.Join(FormatNames(), ", "))
}

// DefaultMaxInputBytes bounds an input's decompressed content when
// Options sets no bound: 20 GiB, far more than a day of any provider's
// reports, and far less than a gzip bomb of a few megabytes expands to.
const DefaultMaxInputBytes = 20 << 30

// errTooLarge is what a boundedReader returns past its bound.
var errTooLarge = errors.New("input over --max-input-bytes")

// boundedReader reads at most left bytes of r: past them it fails, and
// goes on failing, with errTooLarge. A negative left sets no bound.
type boundedReader struct {
	r    io.Reader
	left int64
	over bool
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.over {
		return 0, errTooLarge
	}
	n, err := b.r.Read(p)
	if b.left < 0 {
		return n, err
	}
	if int64(n) > b.left {
		n, b.over = int(b.left), true
		err = errTooLarge
	}
	b.left -= int64(n)
	return n, err
}

// hashingReader hashes and counts the bytes read through it.
type hashingReader struct {
	r    io.Reader
	h    hash.Hash
	n    int64
	prog *Progress
}

func (r *hashingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.h.Write(p[:n])
	r.n += int64(n)
	if r.prog != nil {
		r.prog.Bytes.Add(int64(n))
	}
	return n, err
}

// Progress is what Read has done so far, for a progress display: it is
// updated as Read goes and may be read from another goroutine.
type Progress struct {
	Bytes atomic.Int64 // read from the source, compressed as stored
	Rows  atomic.Int64 // rows accounted for: evidence, rejected and ignored
}

func (p *Progress) row() {
	if p != nil {
		p.Rows.Add(1)
	}
}

type totalKey struct {
	provider, cur string
	kind          reconcile.Kind
}

// countingSink accounts for every row a parser reports, sets provenance,
// and passes evidence and rejections on.
type countingSink struct {
	webhook bool // the format's records are webhook events
	prog    *Progress
	in      *Input
	out     Sink
	uri     string
	clock   time.Time // the run's, when the read began
	totals  map[totalKey]*Total
	sinkErr error // set when out failed, so the parse error is not the input's
}

func (s *countingSink) pass(err error) error {
	if err != nil {
		s.sinkErr = err
	}
	return err
}

func (s *countingSink) Evidence(e *reconcile.Evidence) error {
	if why := textFault(e); why != "" {
		// PostgreSQL's text holds neither a NUL byte nor bytes that are
		// not UTF-8 (SQLite stores both): a row with one would fail the
		// whole input on one ledger and not on the other.
		return s.Reject(e.Line, e.Raw, fmt.Sprintf("line %d%s", e.Line, why))
	}
	if y := e.Time.Year(); !e.Time.IsZero() && (y < 1970 || y > 9999) {
		// A parser took a date it should have refused; no ledger can store
		// it and no payment happened then.
		return s.Reject(e.Line, e.Raw, fmt.Sprintf("date %s is out of range", e.Time.Format(time.RFC3339)))
	}
	if e.Time.After(s.clock.Add(MaxClockSkew)) {
		// No provider reports what has not happened yet: the row is
		// corrupt, or its zone misread, and would stretch the coverage.
		return s.Reject(e.Line, e.Raw, fmt.Sprintf("dated %s, later than this run's clock (%s) plus %d minutes",
			e.Time.UTC().Format(time.RFC3339), s.clock.Format(time.RFC3339), MaxClockSkew/time.Minute))
	}
	s.in.Rows++
	s.prog.row()
	s.in.Evidence++
	e.URI, e.Webhook = s.uri, s.webhook
	k := totalKey{e.Provider, e.Amount.Currency, e.Kind}
	t := s.totals[k]
	if t == nil {
		t = &Total{Provider: k.provider, Currency: k.cur, Kind: k.kind}
		s.totals[k] = t
	}
	t.FeeMinor, _ = reconcile.AddMinor(t.FeeMinor, e.Fee)
	t.Count++
	var ok bool
	if t.AmountMinor, ok = reconcile.AddMinor(t.AmountMinor, e.Amount.Minor); !ok {
		t.Overflow = true
	}
	return s.pass(s.out.Evidence(e))
}

func (s *countingSink) Reject(line int, raw, reason string) error {
	s.in.Rows++
	s.prog.row()
	s.in.Rejected++
	return s.pass(s.out.Reject(&reconcile.Rejected{URI: s.uri, Line: line, Reason: escape(reason), Raw: escape(raw)}))
}

func (s *countingSink) Ignore(line int, reason string) error {
	s.in.Rows++
	s.prog.row()
	s.in.Ignored++
	reason = escape(reason)
	if s.in.Ignores == nil {
		s.in.Ignores = map[string]int{}
	}
	if _, ok := s.in.Ignores[reason]; !ok && len(s.in.Ignores) >= maxIgnoreReasons {
		reason = "other reasons"
	}
	s.in.Ignores[reason]++
	return nil
}

func (s *countingSink) sortedTotals() []Total {
	out := make([]Total, 0, len(s.totals))
	for _, t := range s.totals {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool {
		return cmp.Or(cmp.Compare(out[i].Currency, out[j].Currency), cmp.Compare(out[i].Kind, out[j].Kind),
			cmp.Compare(out[i].Provider, out[j].Provider)) < 0
	})
	return out
}

// textFault returns why e cannot be stored as text on every ledger, after
// its line ("" when it can): its raw row or one of the fields taken from
// the row holds a NUL byte or bytes that are not UTF-8.
func textFault(e *reconcile.Evidence) string {
	if c, at := badText(e.Raw); at >= 0 {
		return " " + textReason(c, at, "column")
	}
	fields := [...]struct{ name, v string }{
		{"provider", e.Provider}, {"transaction id", e.TxID}, {"kind", string(e.Kind)}, {"provider's kind", e.RawKind},
		{"currency", e.Amount.Currency}, {"effect key", e.EffectKey}, {"parent effect key", e.ParentEffectKey},
		{"payment intent", e.PaymentIntent}, {"parent transaction id", e.ParentTxID}, {"description", e.Description},
	}
	for _, f := range fields {
		if c, at := badText(f.v); at >= 0 {
			return ": its " + f.name + " " + textReason(c, at, "byte")
		}
	}
	var why, worst string // the first metadata key, in order, at fault
	for k, v := range e.Metadata {
		if worst != "" && k >= worst {
			continue
		}
		if c, at := badText(k); at >= 0 {
			why, worst = ": a metadata key "+textReason(c, at, "byte"), k
		} else if c, at := badText(v); at >= 0 {
			why, worst = fmt.Sprintf(": its metadata %q %s", k, textReason(c, at, "byte")), k
		}
	}
	return why
}

// textReason says what badText found: byte c at position at, counted as
// a column of the line or a byte of a field (unit).
func textReason(c byte, at int, unit string) string {
	if c == 0 {
		return fmt.Sprintf("holds a NUL byte (%s %d)", unit, at+1)
	}
	return fmt.Sprintf("is not valid UTF-8 (byte 0x%02X at %s %d)", c, unit, at+1)
}

// badText returns the first NUL byte of s, or the first byte that is not
// part of valid UTF-8, and its offset; the offset is -1 when there is none.
func badText(s string) (byte, int) {
	if strings.IndexByte(s, 0) < 0 && utf8.ValidString(s) {
		return 0, -1
	}
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if s[i] == 0 || r == utf8.RuneError && n == 1 {
			return s[i], i
		}
		i += n
	}
	return 0, -1
}

// escape returns s with every NUL byte, and every byte that is not part of
// valid UTF-8, written as \x and two lower-case hex digits, as Go's %q and
// the terminal table write them (NUL as \x00, a Latin-1 é as \xe9): the
// form in which a rejected row's raw text and reason are kept, since
// PostgreSQL's text stores neither. Other text, backslashes included, is
// kept as it is, so the form is for people to read, not to be decoded
// back; s is returned unchanged when it holds neither.
func escape(s string) string {
	if _, at := badText(s); at < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if s[i] == 0 || r == utf8.RuneError && n == 1 {
			fmt.Fprintf(&b, "\\x%02x", s[i])
			i++
			continue
		}
		b.WriteString(s[i : i+n])
		i += n
	}
	return b.String()
}
