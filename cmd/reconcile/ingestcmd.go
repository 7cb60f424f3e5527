package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"reconcile"
	"reconcile/ingest"
	"reconcile/job"
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
skipped. The first run given an input ingested here reports all it holds, as if it had read it
itself; later runs read it as earlier evidence. With --check it writes nothing and needs no ledger.

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
			j := &job.Job{Clock: a.clock, Log: a.log, Progress: a.showProgress}
			if !check {
				if j.Store, _, err = a.openLedger(ctx); err != nil {
					return err
				}
				defer j.Store.Close()
			}
			res := checkResult{Inputs: []report.Input{}}
			var (
				failed   []error
				rejected job.RejectedList
			)
			for i, src := range srcs {
				input, err := j.Ingest(ctx, src, opt, check, rejected.Collect(i))
				if err != nil {
					if ctx.Err() != nil {
						return err
					}
					failed = append(failed, err)
					continue
				}
				res.Inputs = append(res.Inputs, report.InputOf(input))
			}
			res.Rejected, res.Unlisted = rejected.Listed()
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

// inputFailure gives an unreadable input exit status 2.
func inputFailure(err error) error {
	var ie *ingest.InputError
	if errors.As(err, &ie) {
		return &exitError{code: exitUsage, err: err}
	}
	return err
}

type checkResult struct {
	Inputs   []report.Input    `json:"inputs"`
	Rejected []report.Rejected `json:"rejected"`
	// Unlisted counts the rejected rows beyond maxListedRejected.
	Unlisted int `json:"rejected_unlisted,omitempty"`
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
