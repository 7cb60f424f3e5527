package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"reconcile"
)

// maxListed is how many actions and rejected rows the summary lists.
const maxListed = 25

// Summary writes the summary for people: inputs, counts and money per class
// and currency, and the actions. Text from inputs and the ledger goes
// through Printable: an id or a file name cannot draw on the terminal.
func Summary(w io.Writer, r *Result) {
	p := Printable
	mode := "plan only: nothing was changed outside the ledger"
	if r.Applied {
		mode = "applied"
	}
	fmt.Fprintf(w, "run %s, as of %s (%s)\n\n", p(r.RunID), p(r.AsOf), mode)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "INPUT\tFORMAT\tROWS\tEVIDENCE\tREJECTED\tIGNORED\t")
	for _, in := range r.Inputs {
		note := ""
		if in.AlreadyIngested {
			note = "(ingested before)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\n", p(in.URI), p(in.Format), in.Rows, in.Evidence, in.Rejected, in.Ignored, note)
	}
	tw.Flush()

	type key struct {
		class reconcile.Class
		cur   string
	}
	money := map[key]int64{}
	for _, d := range r.Discrepancies {
		money[key{d.Class, d.Currency}], _ = reconcile.AddMinor(money[key{d.Class, d.Currency}], d.Money())
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "CLASS\tCOUNT\tMONEY\t")
	for _, c := range reconcile.Classes {
		var amounts []string
		for k, v := range money {
			if k.class == c {
				amounts = append(amounts, p(reconcile.Money{Minor: v, Currency: k.cur}.String()))
			}
		}
		sort.Strings(amounts)
		fmt.Fprintf(tw, "%s\t%d\t%s\t\n", c, r.Counts[string(c)], strings.Join(amounts, ", "))
	}
	tw.Flush()
	if r.OutOfScope > 0 {
		fmt.Fprintf(w, "out of scope: %d effects (no evidence of their kind in these inputs)\n", r.OutOfScope)
	}
	var acts []string
	outcomes := map[reconcile.Outcome]int{}
	for _, d := range r.Discrepancies {
		for _, x := range d.Actions {
			outcomes[x.Outcome]++
			line := fmt.Sprintf("  %-10s %-10s %s", p(string(x.Outcome)), p(string(x.Kind)), p(x.Key))
			switch {
			case x.Made != "":
				line += " -> " + p(x.Made)
			case x.Note != "" && x.Outcome != reconcile.OutcomePlanned:
				line += ": " + p(truncate(x.Note, 100))
			}
			acts = append(acts, line)
		}
	}
	if len(acts) > 0 {
		var counts []string
		for _, o := range []reconcile.Outcome{reconcile.OutcomePlanned, reconcile.OutcomeApplied, reconcile.OutcomeSkipped, reconcile.OutcomeDeferred,
			reconcile.OutcomeEscalated, reconcile.OutcomeSuperseded, reconcile.OutcomeRefused} {
			if outcomes[o] > 0 {
				counts = append(counts, fmt.Sprintf("%d %s", outcomes[o], o))
			}
		}
		if len(acts) > maxListed {
			acts = append(acts[:maxListed], fmt.Sprintf("  ... %d more (see --json or --xlsx)", len(acts)-maxListed))
		}
		fmt.Fprintf(w, "\nactions (%s):\n%s\n", strings.Join(counts, ", "), strings.Join(acts, "\n"))
	}
	for _, o := range r.Orphans {
		fmt.Fprintf(w, "\nORPHAN: %s was made by %s (fence %d) after the action moved to %s (fence %d): %s. Check it by hand.\n",
			p(o.Key), p(o.StaleOwner), o.StaleFence, p(o.CurrentOwner), o.CurrentFence, p(o.StaleResult))
	}
	if len(r.Rejected) > 0 {
		fmt.Fprintf(w, "\n%d rejected rows (see --json for all):\n", len(r.Rejected))
		for i, x := range r.Rejected {
			if i == maxListed {
				fmt.Fprintf(w, "  ...\n")
				break
			}
			fmt.Fprintf(w, "  %s:%d: %s\n", p(x.URI), x.Line, p(x.Reason))
		}
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
