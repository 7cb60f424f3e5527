package report

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"reconcile"
)

// maxListed is how many actions and rejected rows the summary lists.
const maxListed = 25

// Summary writes the summary for people: inputs, counts and money per class
// and currency, and the actions. Text from inputs and the ledger goes
// through Printable: an id or a file name cannot draw on the terminal.
func Summary(out io.Writer, r *Result) {
	var buf bytes.Buffer
	w := &buf
	defer func() { WriteTrimmed(out, buf.Bytes()) }()
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

	money := map[reconcile.Class]map[string]int64{}
	open := 0 // findings first found by an earlier run
	for _, d := range r.Discrepancies {
		m := d.Money()
		if d.Class == reconcile.ClassDuplicated {
			m = d.ObservedMinor - d.ExpectedMinor // the extra money, not the gross of every transaction
		}
		if money[d.Class] == nil {
			money[d.Class] = map[string]int64{}
		}
		money[d.Class][d.Currency], _ = reconcile.AddMinor(money[d.Class][d.Currency], m)
		if !d.FirstFound.IsZero() && d.FirstFound.Before(r.StartedAt) {
			open++
		}
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "CLASS\tCOUNT\tMONEY\t")
	for _, c := range reconcile.Classes {
		fmt.Fprintf(tw, "%s\t%d\t%s\t\n", c, r.Counts[string(c)], amounts(money[c]))
	}
	tw.Flush()
	fmt.Fprintf(w, "money at risk: %s\n", cmp.Or(amounts(r.MoneyAtRisk()), "none"))
	if repaired := amounts(r.MoneyRepaired()); repaired != "" {
		fmt.Fprintf(w, "repaired by this run, awaiting the provider's report: %s\n", repaired)
	}
	if resolved := amounts(r.Resolved); resolved != "" {
		fmt.Fprintf(w, "resolved by a person since the last run: %s\n", resolved)
	}
	if open > 0 {
		fmt.Fprintf(w, "%d findings still open from earlier runs (first_found in the JSON result)\n", open)
	}
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
				line += ": " + p(x.Note)
			}
			acts = append(acts, Truncate(line, maxWidth))
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
	if n := len(r.Rejected) + r.RejectedUnlisted; n > 0 {
		fmt.Fprintf(w, "\n%d rejected rows (the ledger keeps them all):\n", n)
		for i, x := range r.Rejected {
			if i == maxListed {
				fmt.Fprintf(w, "  ...\n")
				break
			}
			fmt.Fprintln(w, Truncate(fmt.Sprintf("  %s:%d: %s", p(x.URI), x.Line, p(x.Reason)), maxWidth))
		}
	}
}

// maxWidth is how many columns a line of the summary may take.
const maxWidth = 160

// Truncate cuts s to n characters, marking the cut.
func Truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-3]) + "..."
}

// amounts writes money per currency for people, in currency order, with
// thousands separators, leaving out what is zero: "1,234.50 EUR, 20.00 USD".
func amounts(byCur map[string]int64) string {
	curs := make([]string, 0, len(byCur))
	for c, v := range byCur {
		if v != 0 {
			curs = append(curs, c)
		}
	}
	sort.Strings(curs)
	out := make([]string, 0, len(curs))
	for _, c := range curs {
		exp, err := reconcile.Exponent("", c)
		if err != nil {
			out = append(out, Printable(reconcile.Money{Minor: byCur[c], Currency: c}.String()))
			continue
		}
		out = append(out, groupThousands(reconcile.FormatMinor(byCur[c], exp))+" "+Printable(c))
	}
	return strings.Join(out, ", ")
}

// WriteTrimmed writes text without the spaces that pad the ends of lines
// (tabwriter pads every cell, the last of a line too).
func WriteTrimmed(w io.Writer, text []byte) {
	lines := bytes.Split(text, []byte("\n"))
	for i := range lines {
		lines[i] = bytes.TrimRight(lines[i], " ")
	}
	w.Write(bytes.Join(lines, []byte("\n")))
}
