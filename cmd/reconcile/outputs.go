package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"reconcile"
	"reconcile/ingest"
	"reconcile/ledgerdb"
	"reconcile/report"
)

// outputFlags say where a run's result goes besides the summary on stdout.
type outputFlags struct {
	jsonPath    string
	xlsxPath    string
	metricsFile string
	metricsPush string
	metricsJob  string
}

func (f *outputFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.jsonPath, "json", "", "write the JSON result to FILE (- for stdout, which then gets only the JSON)")
	fl.StringVar(&f.xlsxPath, "xlsx", "", "write the discrepancy spreadsheet for finance to FILE (.xlsx)")
	fl.StringVar(&f.metricsFile, "metrics-file", os.Getenv("RECONCILE_METRICS_FILE"),
		"write the run's metrics for node_exporter's textfile collector to FILE (env RECONCILE_METRICS_FILE)")
	fl.StringVar(&f.metricsPush, "metrics-push", os.Getenv("RECONCILE_METRICS_PUSH"),
		"push the run's metrics to the Prometheus Pushgateway at URL (env RECONCILE_METRICS_PUSH)")
	fl.StringVar(&f.metricsJob, "metrics-job", "reconcile", "the Pushgateway job name")
}

// checkOverwrite refuses outputs that would overwrite an input or a file
// that is not an earlier output of their kind, before anything runs.
func (f *outputFlags) checkOverwrite(inputs []ingest.Source) error {
	if err := checkOverwrite("--json", f.jsonPath, inputs, isJSONResult); err != nil {
		return err
	}
	return checkOverwrite("--xlsx", f.xlsxPath, inputs, isWorkbook)
}

// writeOutputs writes a finished run's JSON result, spreadsheet and metrics;
// the JSON result is put in its place when it was written already.
func (a *app) writeOutputs(ctx context.Context, store ledgerdb.Store, f *outputFlags, res *report.Result, result *written) error {
	switch {
	case result != nil:
		if err := result.keep(); err != nil {
			return fmt.Errorf("write %s: %w", f.jsonPath, err)
		}
	case f.jsonPath != "":
		if err := a.writeResult(f.jsonPath, res); err != nil {
			return err
		}
	}
	if f.xlsxPath != "" {
		if err := writeSpreadsheet(ctx, store, f.xlsxPath, res); err != nil {
			return err
		}
		a.log.Info("spreadsheet written", "file", f.xlsxPath)
	}
	return a.writeMetrics(ctx, f, res)
}

func (a *app) writeMetrics(ctx context.Context, f *outputFlags, res *report.Result) error {
	var errs []error
	if f.metricsFile != "" {
		errs = append(errs, report.WriteMetricsFile(f.metricsFile, res))
	}
	if f.metricsPush != "" {
		errs = append(errs, report.PushMetrics(ctx, f.metricsPush, f.metricsJob, res))
	}
	return errors.Join(errs...)
}

// writeSpreadsheet writes the spreadsheet of res, with the escalations
// still open, to path: through a temporary file, so that a reader never
// sees half a workbook.
func writeSpreadsheet(ctx context.Context, store ledgerdb.Store, path string, res *report.Result) error {
	open, err := store.EscalationList(ctx, &ledgerdb.EscalationsParams{Open: true})
	if err != nil {
		return err
	}
	if err := writeWith(path, func(w io.Writer) error { return report.WriteXLSX(w, res, escalations(open)) }); err != nil {
		return fmt.Errorf("spreadsheet %s: %w", path, err)
	}
	return nil
}

func escalations(es []reconcile.Escalation) []report.Escalation {
	out := make([]report.Escalation, 0, len(es))
	for i := range es {
		out = append(out, report.EscalationOf(&es[i]))
	}
	return out
}

func (a *app) exportCommand() *cobra.Command {
	var (
		runID string
		out   outputFlags
	)
	cmd := &cobra.Command{
		Use:   "export --run ID|latest --xlsx FILE",
		Short: "Write the spreadsheet (or JSON result) of an earlier run",
		Long: `export writes what an earlier run found, as recorded in the ledger: the discrepancy spreadsheet
for finance (--xlsx), the JSON result (--json) and the run's metrics. The run's findings are as they were
recorded; the escalations are those open now. --run latest takes the newest run that finished
(see ` + "`reconcile runs`" + `).

Example:
  reconcile export --run rec_20261129T043000Z_1f2e3d --xlsx november-29.xlsx --ledger postgres://reconcile@db/payments
  reconcile export --run latest --json last-night.json`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runID == "" || (out.xlsxPath == "" && out.jsonPath == "" && out.metricsFile == "" && out.metricsPush == "") {
				return usageError("export needs --run ID and at least one of --xlsx, --json, --metrics-file, --metrics-push")
			}
			if err := out.checkOverwrite(nil); err != nil {
				return err
			}
			ctx := cmd.Context()
			store, _, err := a.openLedger(ctx)
			if err != nil {
				return err
			}
			defer store.Close()
			if runID == "latest" {
				if runID, err = latestRun(ctx, store); err != nil {
					return err
				}
			}
			run, err := store.RunGet(ctx, runID)
			if errors.Is(err, reconcile.ErrNotFound) {
				return usageError("no run %q in the ledger", runID)
			}
			if err != nil {
				return err
			}
			if run.Status != reconcile.RunStatusSucceeded || len(run.Result) == 0 {
				return usageError("run %s is %s: it has no result to export", runID, run.Status)
			}
			var res report.Result
			if err := json.Unmarshal(run.Result, &res); err != nil {
				return fmt.Errorf("run %s: recorded result unreadable: %w", runID, err)
			}
			return a.writeOutputs(ctx, store, &out, &res, nil)
		},
	}
	cmd.Flags().StringVar(&runID, "run", "", "the run's id, as the summary, the JSON result and reconcile runs name it; latest: the newest run that finished")
	out.add(cmd)
	a.addLedgerFlag(cmd)
	return cmd
}
