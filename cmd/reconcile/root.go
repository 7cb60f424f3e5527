package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"reconcile/clock"
	"reconcile/job"
	"reconcile/report"
)

// Exit statuses, as DESIGN section 8 fixes them.
const (
	exitOK      = 0 // reconciled, nothing needs a person
	exitFailure = 1 // any other failure
	exitUsage   = 2 // usage or unreadable input; nothing changed
	exitPerson  = 3 // reconciled, and something needs a person
)

// exitError carries an exit status out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// app is what every command shares: the output streams and global flags.
type app struct {
	stdout, stderr io.Writer
	log            *slog.Logger
	logFormat      string
	logLevel       string
	ledgerURL      string
	clock          clock.Clock // the machine's
	// benchWorkers is how many processes match the bench's runs'
	// partitions (bench --workers); 0 leaves them to the run alone.
	benchWorkers int
}

// Main runs the command line args and returns the exit status.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := &app{stdout: stdout, stderr: stderr, clock: job.SystemClock()}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	code := exitFailure
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	if a.log != nil && a.logFormat == "json" {
		// Every line on stderr is a record, the verdict too.
		a.log.Error(err.Error(), "exit", code)
	} else {
		printError(stderr, err)
	}
	return code
}

// printError writes err on stderr for people, one line per joined error,
// each made Printable: a file name or an id in it cannot draw on the
// terminal nor forge a line.
func printError(w io.Writer, err error) {
	if ee, ok := err.(*exitError); ok {
		err = ee.err
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		fmt.Fprintf(w, "reconcile: %s\n", report.Printable(e.Error()))
	}
}

// usageArgs makes a positional-argument check's error a usage error.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return &exitError{code: exitUsage, err: fmt.Errorf("%s: %w", cmd.CommandPath(), err)}
		}
		return nil
	}
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "reconcile",
		Short: "Prove every recorded side effect happened exactly once at the provider, and repair it when not",
		Long: `reconcile matches the effect ledger (what the application intended) against the providers'
own account (settlement files, reports, webhook dumps) and classifies every effect: confirmed,
duplicated (compensate the extras), missing (redeliver under the original key), or in doubt
(page a human).

Start with ` + "`reconcile demo`" + `, which shows the whole loop in a few seconds.

Environment (each is the fallback of a flag; secrets are only read from the environment):
  RECONCILE_LEDGER             --ledger: postgres://... or sqlite:PATH (default: the embedded SQLite file)
  STRIPE_API_KEY               the provider's API key, for --apply (never printed)
  RECONCILE_STRIPE_URL         --provider-url
  RECONCILE_PAGER_URL          --pager-url (PagerDuty Events API v2)
  RECONCILE_PAGER_ROUTING_KEY  the PagerDuty routing key (never printed)
  RECONCILE_PAGER_WEBHOOK      --pager-webhook
  RECONCILE_METRICS_FILE       --metrics-file
  RECONCILE_METRICS_PUSH       --metrics-push
  RECONCILE_S3_PATH_STYLE      --s3-path-style; with the AWS chain (AWS_ENDPOINT_URL_S3, AWS_REGION, ...)`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(), // --version, as `reconcile version`
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError("unknown command %q: see `reconcile help`", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return a.setupLogging()
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.logFormat, "log-format", "text", "log format on stderr: text or json")
	pf.StringVar(&a.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	root.AddCommand(a.migrateCommand(), a.ingestCommand(), a.runCommand(), a.exportCommand(), a.runsCommand(), a.showCommand(), a.escalationsCommand(), a.resolveCommand(),
		a.scheduleCommand(), a.workerCommand(), a.sandboxCommand(), a.benchCommand(), a.demoCommand(), a.versionCommand())
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &exitError{code: exitUsage, err: fmt.Errorf("%s: %w", cmd.CommandPath(), err)}
	})
	return root
}

func (a *app) setupLogging() error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(a.logLevel)); err != nil {
		return usageError("--log-level %q: want debug, info, warn or error", a.logLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch a.logFormat {
	case "text":
		a.log = slog.New(slog.NewTextHandler(a.stderr, opts))
	case "json":
		opts.ReplaceAttr = seconds
		a.log = slog.New(slog.NewJSONHandler(a.stderr, opts))
	default:
		return usageError("--log-format %q: want text or json", a.logFormat)
	}
	return nil
}

// seconds writes durations as seconds, as people and log queries read
// them, not as the nanoseconds slog's JSON gives.
func seconds(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.Float64(a.Key, a.Value.Duration().Seconds())
	}
	return a
}

// addLedgerFlag adds --ledger, falling back to RECONCILE_LEDGER.
func (a *app) addLedgerFlag(cmd *cobra.Command) {
	cmd.Flags().StringVar(&a.ledgerURL, "ledger", os.Getenv("RECONCILE_LEDGER"),
		"ledger URL: postgres://..., postgresql://..., sqlite:PATH or a file path (env RECONCILE_LEDGER; default the embedded SQLite file)")
}
