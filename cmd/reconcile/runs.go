package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/report"
)

// runRow is one run as `reconcile runs` lists it. Times are UTC; a time
// not known yet is null. What a run found (counts, money, exit status) is
// read from its recorded result: null while it runs, and for one that
// failed, which recorded none.
type runRow struct {
	RunID      string           `json:"run_id"`
	Status     string           `json:"status"` // running, succeeded or failed
	StartedAt  *time.Time       `json:"started_at"`
	FinishedAt *time.Time       `json:"finished_at"`
	Applied    bool             `json:"applied"`
	AsOf       *string          `json:"as_of"`
	Counts     map[string]int   `json:"counts"`
	AtRisk     map[string]int64 `json:"money_at_risk"` // minor units per currency
	// PagesFailed counts the pages the pager did not take.
	PagesFailed int `json:"pages_failed"`
	// ExitStatus is the status the run exited with, as its result gives
	// it (DESIGN section 8): null while it runs.
	ExitStatus *int `json:"exit_status"`
}

// runsList is the JSON `reconcile runs --json` writes.
type runsList struct {
	Runs []runRow `json:"runs"`
}

func (a *app) runsCommand() *cobra.Command {
	var (
		limit    int
		jsonPath string
	)
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List the latest runs: when, applied or not, what they found, and how they exited",
		Long: `runs lists the latest runs recorded in the ledger, newest first: each run's id, when it started
and finished, whether it applied its actions, its findings per class, its money at risk per
currency, the pages the pager did not take, and its exit status (0 nothing needs a person, 3
something does, 1 failed or a page not delivered). A run skipped because another held the run
lease records nothing and is not listed. Use an id with ` + "`reconcile export --run`" + `.

Example:
  reconcile runs --limit 7 --ledger postgres://reconcile@db/payments
  reconcile runs --json - | jq '.runs[] | select(.exit_status != 0)'`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 {
				return usageError("--limit %d: want 1 or more", limit)
			}
			if err := checkOverwrite("--json", jsonPath, nil, isRunsList); err != nil {
				return err
			}
			ctx := cmd.Context()
			store, _, err := a.openLedger(ctx)
			if err != nil {
				return err
			}
			defer store.Close()
			rows, err := listRuns(ctx, store, limit)
			if err != nil {
				return err
			}
			if jsonPath != "" {
				if err := a.writeJSON(jsonPath, &runsList{Runs: rows}); err != nil {
					return err
				}
			}
			if jsonPath != "-" {
				printRuns(a.stdout, rows)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&limit, "limit", 10, "list at most this many runs")
	fl.StringVar(&jsonPath, "json", "", "also write the list as JSON to FILE (- for stdout, which then gets only the JSON)")
	a.addLedgerFlag(cmd)
	return cmd
}

// listRuns reads the latest runs and what their results say. Each result
// is read whole, one at a time: --limit bounds the work.
func listRuns(ctx context.Context, store ledgerdb.Store, limit int) ([]runRow, error) {
	runs, err := store.RunList(ctx, &ledgerdb.RunsParams{Limit: limit})
	if err != nil {
		return nil, err
	}
	rows := make([]runRow, 0, len(runs))
	for _, r := range runs {
		row := runRow{RunID: r.ID, Status: string(r.Status), StartedAt: report.NullTime(r.StartedAt), FinishedAt: report.NullTime(r.FinishedAt)}
		var args struct {
			Apply bool `json:"apply"`
		}
		json.Unmarshal(r.Args, &args) // what a run was asked; nothing when unreadable
		row.Applied = args.Apply
		switch r.Status {
		case reconcile.RunStatusFailed:
			row.ExitStatus = intPtr(exitFailure)
		case reconcile.RunStatusSucceeded:
			full, err := store.RunGet(ctx, r.ID)
			if err != nil {
				return nil, err
			}
			var res report.Result
			if err := json.Unmarshal(full.Result, &res); err != nil {
				return nil, fmt.Errorf("run %s: recorded result unreadable: %w", r.ID, err)
			}
			row.Applied, row.AsOf, row.Counts, row.AtRisk, row.PagesFailed = res.Applied, &res.AsOf, res.Counts, res.AtRisk, len(res.PagesFailed)
			switch {
			case len(res.PagesFailed) > 0:
				row.ExitStatus = intPtr(exitFailure)
			case res.NeedsPerson():
				row.ExitStatus = intPtr(exitPerson)
			default:
				row.ExitStatus = intPtr(exitOK)
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// latestRun is the id of the newest run that finished, or a usage error
// when there is none.
func latestRun(ctx context.Context, store ledgerdb.Store) (string, error) {
	runs, err := store.RunList(ctx, &ledgerdb.RunsParams{})
	if err != nil {
		return "", err
	}
	for _, r := range runs {
		if r.Status != reconcile.RunStatusRunning {
			return r.ID, nil
		}
	}
	return "", usageError("--run latest: no run has finished in this ledger")
}

// printRuns writes the runs table for people, its text made Printable.
func printRuns(w io.Writer, rows []runRow) {
	if len(rows) == 0 {
		fmt.Fprintln(w, "no runs recorded")
		return
	}
	p := report.Printable
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTARTED\tFINISHED\tSTATUS\tAPPLIED\tEXIT\tFINDINGS\tAT RISK\t")
	for _, r := range rows {
		applied, exit := "no", "-"
		if r.Applied {
			applied = "yes"
		}
		if r.ExitStatus != nil {
			exit = fmt.Sprint(*r.ExitStatus)
		}
		findings := findingsText(r.Counts)
		if r.PagesFailed > 0 {
			findings += fmt.Sprintf("; %d pages failed", r.PagesFailed)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", p(r.RunID), stampOf(r.StartedAt), stampOf(r.FinishedAt), p(r.Status), applied, exit,
			p(findings), p(moneyText(r.AtRisk)))
	}
	tw.Flush()
}

// findingsText is the counts of a run other than zero, in class order.
func findingsText(counts map[string]int) string {
	if counts == nil {
		return "-"
	}
	var parts []string
	for _, c := range reconcile.Classes {
		if n := counts[string(c)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, c))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// moneyText is money per currency, in currency order.
func moneyText(m map[string]int64) string {
	var parts []string
	for _, cur := range slices.Sorted(maps.Keys(m)) {
		if m[cur] != 0 {
			parts = append(parts, reconcile.Money{Minor: m[cur], Currency: cur}.String())
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func stampOf(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return stamp(*t)
}

func intPtr(n int) *int { return &n }
