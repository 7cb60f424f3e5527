package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"reconcile"
	"reconcile/job"
	"reconcile/ledgerdb"
	"reconcile/report"
)

func (a *app) showCommand() *cobra.Command {
	var jsonPath string
	cmd := &cobra.Command{
		Use:   "show KEY",
		Short: "Show one effect: its row, evidence, actions, escalations and history",
		Long: `show prints what the ledger knows of one effect: the application's row, the job's state for
it, every evidence record that names it, the actions taken on it (claims, with their fences and
results), its compensations, the escalations about it, and the findings of every run.

Example:
  reconcile show run_8f3c1a:charge:0 --ledger postgres://reconcile@db/payments`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOverwrite("--json", jsonPath, nil, isOnCallJSON); err != nil {
				return err
			}
			ctx := cmd.Context()
			store, _, err := a.openLedger(ctx)
			if err != nil {
				return err
			}
			defer store.Close()
			key := args[0]
			res, err := job.Show(ctx, store, key)
			if errors.Is(err, reconcile.ErrNotFound) {
				return usageError("no effect %q in the ledger", key)
			} else if err != nil {
				return err
			}
			if jsonPath != "" {
				if err := a.writeJSON(jsonPath, showOut(res)); err != nil {
					return err
				}
			}
			if jsonPath != "-" {
				var buf bytes.Buffer
				printShow(&buf, res)
				report.WriteTrimmed(a.stdout, buf.Bytes())
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&jsonPath, "json", "", "also write it as JSON to FILE (- for stdout, which then gets only the JSON)")
	a.addLedgerFlag(cmd)
	return cmd
}

// printShow writes what the ledger knows of an effect for people. Every
// text from the ledger goes through report.Printable: an id, a reason or
// a provider's error cannot draw on the terminal.
func printShow(w io.Writer, r *job.EffectView) {
	p := report.Printable
	e := r.Effect
	fmt.Fprintf(w, "effect %s\n  step %s at %s, %s", p(e.Key), p(e.Step), p(e.Provider), p(string(e.Status)))
	if e.ExternalID != "" {
		fmt.Fprintf(w, " as %s", p(e.ExternalID))
	}
	fmt.Fprintf(w, "\n  created %s", stamp(e.CreatedAt))
	if !e.ConfirmedAt.IsZero() {
		fmt.Fprintf(w, ", confirmed %s", stamp(e.ConfirmedAt))
	}
	if e.Depth > 0 {
		fmt.Fprintf(w, "\n  compensates %s (depth %d)", p(e.ParentKey), e.Depth)
	}
	fmt.Fprintf(w, "\n  request %s\n", p(string(e.Request)))
	if r.State != nil {
		fmt.Fprintf(w, "  reconciliation: %s since %s (run %s)", p(string(r.State.Class)), stamp(r.State.Since), p(r.State.RunID))
		if r.State.Final {
			fmt.Fprint(w, ", final")
		}
		fmt.Fprintln(w)
	}
	section(w, "evidence", len(r.Evidence), func(tw io.Writer) {
		fmt.Fprintln(tw, "  TIME\tKIND\tTRANSACTION\tAMOUNT\tSOURCE\t")
		for _, ev := range r.Evidence {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s:%d\t\n", stamp(ev.Time), p(string(ev.Kind)), p(ev.TxID), p(ev.Amount.String()), p(ev.URI), ev.Line)
		}
	})
	section(w, "actions", len(r.Claims), func(tw io.Writer) {
		fmt.Fprintln(tw, "  KEY\tSTATE\tFENCE\tOWNER\tRESULT\t")
		for _, c := range r.Claims {
			out := string(c.Result)
			if c.Error != "" {
				out = c.Error
			}
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\t%s\t\n", p(c.Key), p(string(c.State)), c.Fence, p(c.Owner), p(out))
		}
	})
	section(w, "compensations", len(r.Compensations), func(tw io.Writer) {
		for _, c := range r.Compensations {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t\n", p(c.Key), p(string(c.Status)), p(c.ExternalID))
		}
	})
	section(w, "escalations", len(r.Escalations), func(tw io.Writer) {
		printEscalations(tw, r.Escalations)
	})
	section(w, "history", len(r.History), func(tw io.Writer) {
		fmt.Fprintln(tw, "  RUN\tCLASS\tREASON\t")
		for _, f := range r.History {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t\n", p(f.RunID), p(string(f.Class)), p(f.Reason))
			for _, x := range f.Actions {
				fmt.Fprintf(tw, "  \t  %s %s\t%s %s\t\n", p(string(x.Outcome)), p(string(x.Kind)), p(x.Key), p(x.Note))
			}
		}
	})
}

// section prints a titled table, or says there is nothing.
func section(w io.Writer, title string, n int, rows func(io.Writer)) {
	if n == 0 {
		fmt.Fprintf(w, "%s: none\n", title)
		return
	}
	fmt.Fprintf(w, "%s:\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	rows(tw)
	tw.Flush()
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// printEscalations writes the escalations table, its text made Printable.
// A page the pager did not take reads "FAILED", with the pager's answer
// under the reason.
func printEscalations(tw io.Writer, es []job.EscalationView) {
	p := report.Printable
	fmt.Fprintln(tw, "  OPENED\tSTATUS\tCLASS\tSUBJECT\tPAGED\tREASON\t")
	for _, e := range es {
		status := string(e.Status)
		switch e.Status {
		case reconcile.EscalationStatusResolved:
			status += " by " + e.ResolvedBy
		case reconcile.EscalationStatusAcknowledged:
			status += " by " + e.AcknowledgedBy
		}
		paged := stamp(e.PagedAt)
		if e.PageFailed {
			paged = "FAILED"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t\n", stamp(e.OpenedAt), p(status), p(string(e.Class)), report.Truncate(p(e.Subject), 60), paged,
			report.Truncate(p(e.Reason), 70))
		if e.PageFailed {
			fmt.Fprintf(tw, "  \t\t\t\t\tpage failed: %s; the next run with --apply sends it again\t\n", report.Truncate(p(e.PageError), 70))
		}
	}
}

func (a *app) escalationsCommand() *cobra.Command {
	var (
		all           bool
		ack, by, path string
		pager         actionFlags
	)
	cmd := &cobra.Command{
		Use:   "escalations",
		Short: "List the escalations a person has to look at",
		Long: `escalations lists what the job handed to a person and is not resolved yet: compensations in
doubt, mismatched effects, refused actions, unexpected money above the threshold, runs held back
by the blast-radius limits. An escalation whose page the pager did not take reads FAILED in the
PAGED column, with the pager's answer; the next run with --apply sends it again. --ack KEY records that you took one in hand (and acknowledges the
page); close it with ` + "`reconcile resolve`" + `.

Example:
  reconcile escalations --ledger postgres://reconcile@db/payments
  reconcile escalations --ack run_8f3c1a:charge:0:escalate:mismatched --by ana
  reconcile escalations --all --json -`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOverwrite("--json", path, nil, isOnCallJSON); err != nil {
				return err
			}
			ctx := cmd.Context()
			store, _, err := a.openLedger(ctx)
			if err != nil {
				return err
			}
			defer store.Close()
			if ack != "" {
				e, err := job.Acknowledge(ctx, store, a.pager(&pager, ""), a.log, ack, by)
				if errors.Is(err, reconcile.ErrNotFound) || errors.Is(err, reconcile.ErrInvalidTransition) {
					return usageError("--ack %s: %v", ack, err)
				}
				if e != nil {
					fmt.Fprintf(a.stdout, "%s acknowledged by %s at %s\n", report.Printable(e.Key), report.Printable(e.AcknowledgedBy), stamp(e.AcknowledgedAt))
				}
				return err
			}
			list, err := store.EscalationList(ctx, &ledgerdb.EscalationsParams{Open: !all})
			if err != nil {
				return err
			}
			es, err := job.WithPages(ctx, store, list)
			if err != nil {
				return err
			}
			if path != "" {
				if err := a.writeJSON(path, map[string]any{"escalations": escalationsOut(es)}); err != nil {
					return err
				}
				if path == "-" {
					return nil
				}
			}
			if len(es) == 0 {
				fmt.Fprintln(a.stdout, "no open escalations")
				return nil
			}
			var buf bytes.Buffer
			tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
			printEscalations(tw, es)
			if err := tw.Flush(); err != nil {
				return err
			}
			report.WriteTrimmed(a.stdout, buf.Bytes())
			if n := countFailed(es); n > 0 {
				fmt.Fprintf(a.stdout, "%d pages were not delivered: the pager did not take them (see above); check --pager-url and the routing key\n", n)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&all, "all", false, "list resolved escalations too")
	fl.StringVar(&path, "json", "", "also write them as JSON to FILE (- for stdout, which then gets only the JSON)")
	fl.StringVar(&ack, "ack", "", "acknowledge the escalation with this key instead of listing")
	fl.StringVar(&by, "by", whoami(), "who acknowledges (default $USER, else the OS user)")
	pager.addPager(cmd)
	a.addLedgerFlag(cmd)
	return cmd
}

func (a *app) resolveCommand() *cobra.Command {
	var (
		as, note, by, extID string
		pager               actionFlags
	)
	cmd := &cobra.Command{
		Use:   "resolve KEY --as confirmed|abandoned|compensated --note TEXT",
		Short: "Record a person's decision on an effect and close its escalations",
		Long: `resolve records what a person decided about an effect, with who and when: confirmed (it
happened once, as it should), abandoned (it will not happen, and that is right; an attempted row
becomes abandoned) or compensated (made right by hand). The effect is then final: no run reads it
again unless new evidence names it. Every open escalation about it and its compensations is
closed, and the pager's incidents are resolved.

Example:
  reconcile resolve run_8f3c1a:charge:0:compensate:ch_3PqR --as compensated \
    --note "refunded by hand in the dashboard, re_3PqS" --ledger postgres://reconcile@db/payments`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			res := reconcile.Resolution(as)
			if res != reconcile.ResolutionConfirmed && res != reconcile.ResolutionAbandoned && res != reconcile.ResolutionCompensated {
				return usageError("--as %q: want confirmed, abandoned or compensated", as)
			}
			if strings.TrimSpace(note) == "" {
				return usageError("--note is required: say what was decided and why")
			}
			ctx := cmd.Context()
			store, _, err := a.openLedger(ctx)
			if err != nil {
				return err
			}
			defer store.Close()
			out, err := job.Resolve(ctx, store, a.pager(&pager, ""), a.log,
				&ledgerdb.ResolveParams{EffectKey: args[0], As: res, Note: note, By: by, ExternalID: extID})
			if errors.Is(err, reconcile.ErrNotFound) {
				return usageError("no effect %q in the ledger", args[0])
			}
			if out != nil {
				fmt.Fprintf(a.stdout, "%s resolved as %s by %s; the effect is %s\n", report.Printable(args[0]), res, report.Printable(by), out.Effect.Status)
				for _, e := range out.Closed {
					fmt.Fprintf(a.stdout, "  closed escalation %s\n", report.Printable(e.Key))
				}
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&as, "as", "", "the decision: confirmed, abandoned or compensated")
	fl.StringVar(&note, "note", "", "what was decided and why (required)")
	fl.StringVar(&by, "by", whoami(), "who decided (default $USER, else the OS user)")
	fl.StringVar(&extID, "external-id", "", "with --as confirmed: the provider's id, to confirm an attempted effect with")
	pager.addPager(cmd)
	a.addLedgerFlag(cmd)
	return cmd
}

func countFailed(es []job.EscalationView) int {
	n := 0
	for _, e := range es {
		if e.PageFailed {
			n++
		}
	}
	return n
}

// whoami names the person at the keyboard: $USER, else the OS account
// (cron and containers often have no $USER), else its uid.
func whoami() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "uid " + strconv.Itoa(os.Getuid())
}
