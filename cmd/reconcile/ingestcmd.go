package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"reconcile"
	"reconcile/ingest"
	"reconcile/ledgerdb"
	"reconcile/report"
)

func (a *app) ingestCommand() *cobra.Command {
	var (
		in       inputFlags
		check    bool
		jsonPath string
	)
	cmd := &cobra.Command{
		Use:   "ingest [--check] [flags] INPUT...",
		Short: "Read provider files into the ledger as evidence (--check: parse and validate only)",
		Long: `ingest reads each input (a file, a directory, a glob, - for stdin, or s3://bucket/prefix; gzip
is read transparently), detects its format, and accounts for every row: evidence, rejected (with
the line and the reason) or ignored (with the reason). It writes each input's evidence and
rejected rows to the ledger in one transaction, so an input that turns out unreadable halfway
leaves nothing behind. Content already ingested (the same SHA-256, or the same S3 ETag) is
skipped. With --check it writes nothing and needs no ledger.

Exit status: 0 when every input could be read (rejected rows are reported, not fatal), 2 when an
input cannot be read at all (the others are still read).

Examples:
  reconcile ingest --check settlements/2026-11-28.itemized.csv
  reconcile ingest --ledger postgres://reconcile@db/payments s3://finance/stripe/2026/11/
  reconcile ingest --check --adyen-zone ShopNL=Europe/Amsterdam --json - adyen/`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			opt, err := in.options()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			srcs, err := in.sources(ctx, args, os.Stdin, a.log)
			if err != nil {
				return inputFailure(err)
			}
			if err := checkOverwrite("--json", jsonPath, srcs, isJSONResult); err != nil {
				return err
			}
			var store ledgerdb.Store
			if !check {
				if store, _, err = openLedger(ctx, a.ledgerURL, ledgerdb.Config{}); err != nil {
					return err
				}
				defer store.Close()
			}
			res := checkResult{Inputs: []*ingest.Input{}}
			var (
				failed   []error
				rejected rejectedList
			)
			for i, src := range srcs {
				c := rejected.collect(i)
				var input *ingest.Input
				stop := a.ingestProgress("reading", src, opt)
				if check {
					input, err = ingest.Read(ctx, src, opt, c)
				} else {
					input, _, err = persist(ctx, store, src, "", opt, c)
				}
				stop()
				if err != nil {
					if ctx.Err() != nil {
						return err
					}
					failed = append(failed, err)
					continue
				}
				res.Inputs = append(res.Inputs, input)
			}
			res.Rejected, res.Unlisted = rejected.listed()
			if jsonPath != "" {
				if err := a.writeJSON(jsonPath, res); err != nil {
					return err
				}
			}
			if jsonPath != "-" {
				printCheck(a.stdout, &res)
			}
			if err := errors.Join(failed...); err != nil {
				return inputFailure(err)
			}
			return nil
		},
	}
	in.add(cmd)
	a.addLedgerFlag(cmd)
	cmd.Flags().BoolVar(&check, "check", false, "parse and validate only; write nothing")
	cmd.Flags().StringVar(&jsonPath, "json", "", "also write the result as JSON to FILE (- for stdout, which then gets only the JSON)")
	return cmd
}

// persist ingests one source into the ledger, unless its content is there
// already, and returns its account and its id in the manifest. hash is the
// content's hash when the caller knows it, else "". Rejected rows also go to
// c, for the report.
func persist(ctx context.Context, store ledgerdb.Store, src ingest.Source, hash string, opt *ingest.Options, c *collectRejected) (*ingest.Input, int64, error) {
	if hash == "" && src.Local() {
		var err error
		if hash, err = src.Hash(ctx); err != nil {
			return nil, 0, err
		}
	}
	already := func(rec *ledgerdb.SourceRecord) (*ingest.Input, int64, error) {
		return &ingest.Input{URI: src.URI, Format: rec.Format, Hash: rec.Hash, ETag: src.ETag, Bytes: rec.Bytes, Rows: rec.Rows,
			Evidence: rec.Evidence, Rejected: rec.Rejected, Ignored: rec.Ignored, AlreadyIngested: true, Totals: []ingest.Total{}}, rec.ID, nil
	}
	rec, err := store.FindSource(ctx, hash, src.ETag)
	if err == nil {
		return already(rec)
	}
	if !errors.Is(err, reconcile.ErrNotFound) {
		return nil, 0, err
	}
	var input *ingest.Input
	res, err := store.IngestSource(ctx, &ledgerdb.IngestParams{URI: src.URI, ETag: src.ETag},
		func(w ledgerdb.SourceWriter) (*ledgerdb.SourceRecord, error) {
			var err error
			input, err = ingest.Read(ctx, src, opt, teeRejected{w, c})
			if err != nil {
				return nil, err
			}
			return &ledgerdb.SourceRecord{Format: input.Format, Hash: input.Hash, Bytes: input.Bytes, Rows: input.Rows,
				Evidence: input.Evidence, Rejected: input.Rejected, Ignored: input.Ignored}, nil
		})
	if err != nil {
		return nil, 0, err
	}
	if res.Duplicate { // another process ingested the same content meanwhile
		c.reset()
		if rec, err = store.FindSource(ctx, input.Hash, src.ETag); err != nil {
			return nil, 0, err
		}
		return already(rec)
	}
	return input, res.SourceID, nil
}

// teeRejected writes to the ledger and keeps rejected rows for the report.
type teeRejected struct {
	w ledgerdb.SourceWriter
	c *collectRejected
}

func (t teeRejected) Evidence(e *reconcile.Evidence) error { return t.w.Evidence(e) }
func (t teeRejected) Reject(r *reconcile.Rejected) error {
	t.c.Reject(r)
	return t.w.Reject(r)
}

// inputFailure gives an unreadable input exit status 2.
func inputFailure(err error) error {
	var ie *ingest.InputError
	if errors.As(err, &ie) {
		return &exitError{code: exitUsage, err: err}
	}
	return err
}

type checkResult struct {
	Inputs   []*ingest.Input   `json:"inputs"`
	Rejected []report.Rejected `json:"rejected"`
	// Unlisted counts the rejected rows beyond maxListedRejected.
	Unlisted int `json:"rejected_unlisted,omitempty"`
}

// A result lists at most maxListedRejected rejected rows, each with at
// most maxListedRaw bytes of its raw text, and counts the rest: the counts
// per input stay exact and a run keeps every rejected row whole in the
// ledger, but a file of a million bad rows is not held in memory.
const maxListedRejected, maxListedRaw = 1000, 1024

// rejectedList is what a result lists of the rejected rows of all its
// inputs.
type rejectedList struct {
	rows     [][]report.Rejected // per input
	unlisted []int               // per input
	n        int                 // rows listed
}

// collect returns the sink that lists input i's rejected rows.
func (l *rejectedList) collect(i int) *collectRejected {
	for len(l.rows) <= i {
		l.rows, l.unlisted = append(l.rows, nil), append(l.unlisted, 0)
	}
	return &collectRejected{list: l, i: i}
}

// listed returns the rows listed, in input order, and how many more there
// are.
func (l *rejectedList) listed() ([]report.Rejected, int) {
	out := slices.Concat(l.rows...)
	if out == nil {
		out = []report.Rejected{}
	}
	n := 0
	for _, u := range l.unlisted {
		n += u
	}
	return out, n
}

// collectRejected lists an input's rejected rows and drops the evidence.
type collectRejected struct {
	list *rejectedList
	i    int
}

func (c *collectRejected) Evidence(*reconcile.Evidence) error { return nil }
func (c *collectRejected) Reject(r *reconcile.Rejected) error {
	l := c.list
	if l.n >= maxListedRejected {
		l.unlisted[c.i]++
		return nil
	}
	raw := r.Raw
	if len(raw) > maxListedRaw {
		raw = strings.ToValidUTF8(raw[:maxListedRaw], "") + fmt.Sprintf("… (%d bytes in all)", len(r.Raw))
	}
	l.rows[c.i] = append(l.rows[c.i], report.Rejected{URI: r.URI, Line: r.Line, Reason: r.Reason, Raw: raw})
	l.n++
	return nil
}

// reset forgets what was listed of the input: it is reported otherwise.
func (c *collectRejected) reset() {
	l := c.list
	l.n -= len(l.rows[c.i])
	l.rows[c.i], l.unlisted[c.i] = nil, 0
}

func printCheck(w io.Writer, res *checkResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "INPUT\tFORMAT\tROWS\tEVIDENCE\tREJECTED\tIGNORED")
	for _, in := range res.Inputs {
		if in.AlreadyIngested {
			fmt.Fprintf(tw, "%s\t(already ingested)\t\t\t\t\n", report.Printable(in.URI))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\n", report.Printable(in.URI), in.Format, in.Rows, in.Evidence, in.Rejected, in.Ignored)
	}
	tw.Flush()
	for _, in := range res.Inputs {
		if len(in.Totals) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s\n", report.Printable(in.URI))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "CURRENCY\tKIND\tCOUNT\tGROSS\t")
		for _, t := range in.Totals {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t\n", report.Printable(t.Currency), report.Printable(string(t.Kind)), t.Count,
				reconcile.Money{Minor: t.AmountMinor, Currency: t.Currency}.String())
		}
		tw.Flush()
	}
	if len(res.Rejected) > 0 {
		fmt.Fprintf(w, "\nrejected rows:\n")
		for _, r := range res.Rejected {
			fmt.Fprintf(w, "  %s:%d: %s\n", report.Printable(r.URI), r.Line, report.Printable(r.Reason))
		}
		if res.Unlisted > 0 {
			fmt.Fprintf(w, "  ... and %d more\n", res.Unlisted)
		}
	}
}

// discard drops what a read gives: a read for the content's hash alone.
type discard struct{}

func (discard) Evidence(*reconcile.Evidence) error { return nil }
func (discard) Reject(*reconcile.Rejected) error   { return nil }
