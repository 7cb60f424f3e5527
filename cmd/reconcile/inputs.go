package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"reconcile/ingest"
	"reconcile/ingest/csvmap"
	"reconcile/report"
)

// inputFlags are the flags of every command that reads provider files.
type inputFlags struct {
	format       string
	stripeTZ     string
	adyenZones   []string
	adyenDefault string
	mapping      string
	s3PathStyle  bool
	livemode     bool
	decimalComma bool
	maxInput     int64
}

func (f *inputFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.format, "format", "", "input format, for every input (default: detect each one): "+strings.Join(ingest.FormatNames(), ", "))
	fl.StringVar(&f.stripeTZ, "stripe-tz", "UTC", "IANA time zone of Stripe reports' local-time columns (the zone the report was run in)")
	fl.StringArrayVar(&f.adyenZones, "adyen-zone", nil, "IANA time zone of an Adyen merchant account, as ACCOUNT=ZONE (repeatable)")
	fl.StringVar(&f.adyenDefault, "adyen-default-zone", "", "IANA time zone of Adyen merchant accounts not named by --adyen-zone")
	fl.StringVar(&f.mapping, "mapping", "", "mapping file for --format csv (see docs/FORMATS.md)")
	fl.BoolVar(&f.decimalComma, "decimal-comma", false, "read the amounts of every semicolon-delimited input with a decimal comma (1.250,00 is 1250), as a spreadsheet in a European locale re-saves a report; "+
		"without it a semicolon-delimited report's amounts are read so only where the report tells")
	fl.Int64Var(&f.maxInput, "max-input-bytes", ingest.DefaultMaxInputBytes, "refuse an input whose content, once decompressed, is more than this many bytes (20 GiB), "+
		"as a small gzip that expands to terabytes is")
	fl.BoolVar(&f.livemode, "livemode", true, "read Stripe's live events as evidence and ignore test-mode ones (\"livemode\": false); "+
		"--livemode=false does the opposite, for a Stripe test account or the sandbox")
	fl.BoolVar(&f.s3PathStyle, "s3-path-style", os.Getenv("RECONCILE_S3_PATH_STYLE") == "true",
		"address S3 buckets by path, as S3-compatible servers want (env RECONCILE_S3_PATH_STYLE=true); endpoint from AWS_ENDPOINT_URL_S3")
}

// options turns the flags into ingest options, or a usage error.
func (f *inputFlags) options() (*ingest.Options, error) {
	opt := &ingest.Options{Format: f.format, StripeTestMode: !f.livemode, DecimalComma: f.decimalComma, MaxInputBytes: f.maxInput}
	if f.maxInput < 0 { // 0, as a runFlags made without its flags has, is the default
		return nil, usageError("--max-input-bytes %d: want a positive number of bytes", f.maxInput)
	}
	var err error
	if opt.StripeLocation, err = time.LoadLocation(f.stripeTZ); err != nil {
		return nil, usageError("--stripe-tz %q: %v", f.stripeTZ, err)
	}
	if f.adyenDefault != "" {
		if opt.AdyenDefaultZone, err = time.LoadLocation(f.adyenDefault); err != nil {
			return nil, usageError("--adyen-default-zone %q: %v", f.adyenDefault, err)
		}
	}
	for _, z := range f.adyenZones {
		account, zone, ok := strings.Cut(z, "=")
		loc, err := time.LoadLocation(zone)
		if !ok || account == "" || err != nil {
			return nil, usageError("--adyen-zone %q: want ACCOUNT=ZONE with an IANA zone such as Europe/Amsterdam", z)
		}
		if opt.AdyenZones == nil {
			opt.AdyenZones = map[string]*time.Location{}
		}
		opt.AdyenZones[account] = loc
	}
	if f.mapping != "" {
		m, err := os.Open(f.mapping)
		if err != nil {
			return nil, usageError("--mapping: %v", err)
		}
		defer m.Close()
		if opt.Mapping, err = csvmap.LoadMapping(m); err != nil {
			return nil, usageError("--mapping %s: %v", f.mapping, err)
		}
		if opt.Format == "" {
			opt.Format = "csv"
		}
	}
	if opt.Format == "csv" && opt.Mapping == nil {
		return nil, usageError("--format csv needs --mapping FILE")
	}
	return opt, nil
}

// sources expands the command line's inputs, creating an S3 client only
// when an input names S3, and warns of each directory entry not read.
func (f *inputFlags) sources(ctx context.Context, args []string, stdin io.Reader, log *slog.Logger) ([]ingest.Source, error) {
	var s3 *ingest.S3
	for _, a := range args {
		if strings.HasPrefix(a, "s3://") {
			var err error
			if s3, err = ingest.NewS3(ctx, ingest.S3Options{PathStyle: f.s3PathStyle, Log: log}); err != nil {
				return nil, err
			}
			break
		}
	}
	srcs, skipped, err := ingest.ExpandWithSkipped(ctx, args, stdin, s3)
	for _, s := range skipped {
		log.Warn("input not read", "path", s.Path, "reason", s.Reason)
	}
	return srcs, err
}

// writeJSON writes v as indented JSON to path, "-" meaning stdout.
func (a *app) writeJSON(path string, v any) error {
	return a.writeOut(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	})
}

// writeResult writes a run's result as indented JSON to path, "-" meaning
// stdout.
func (a *app) writeResult(path string, res *report.Result) error {
	return a.writeOut(path, func(w io.Writer) error { return report.WriteJSON(w, res, true) })
}

func (a *app) writeOut(path string, write func(io.Writer) error) error {
	var err error
	if path == "-" {
		err = write(a.stdout)
	} else {
		err = writeWith(path, write)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
