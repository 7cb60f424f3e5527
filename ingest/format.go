package ingest

import (
	"context"
	"io"
	"sort"
	"time"

	"reconcile"
	"reconcile/ingest/adyen"
	"reconcile/ingest/camt"
	"reconcile/ingest/csvmap"
	"reconcile/ingest/paypal"
	"reconcile/ingest/stripe"
)

// Options tell how to read inputs: the format when it should not be
// detected, and what some formats need and cannot say themselves.
type Options struct {
	// Format forces one format for every input; empty detects each one.
	Format string
	// Progress, when set, counts the bytes and rows Read has done, for a
	// progress display.
	Progress *Progress
	// StripeLocation is the time zone a Stripe report was run in, for its
	// local-time columns; nil is UTC.
	StripeLocation *time.Location
	// AdyenZones gives the IANA zone of each Adyen merchant account, which
	// wins over the abbreviation in its reports' TimeZone column;
	// AdyenDefaultZone is for the accounts it does not list.
	AdyenZones       map[string]*time.Location
	AdyenDefaultZone *time.Location
	// Mapping reads a CSV that no built-in format covers (format "csv").
	Mapping *csvmap.Mapping
	// DecimalComma reads every amount of a semicolon-delimited report with
	// a decimal comma ("1.250,00" is 1250), as a spreadsheet in a European locale
	// writes them. Without it, a semicolon-delimited report's amounts are
	// read with a decimal comma where the report itself tells, and an
	// amount that reads two ways is rejected (see tabular.Amounts). PayPal's
	// STL has no decimal separators, and mapped CSVs name theirs.
	DecimalComma bool
	// StripeTestMode reads Stripe's test-mode events ("livemode": false)
	// as evidence and ignores live ones; the zero value reads live events,
	// as a run against the live account does.
	StripeTestMode bool
	// Now is the run's clock, which no evidence may be dated after by more
	// than MaxClockSkew; nil is time.Now.
	Now func() time.Time
	// MaxInputBytes bounds each input's content once decompressed: an
	// input with more is unreadable, so that a small gzip that expands to
	// terabytes is refused rather than read to the end. Zero is
	// DefaultMaxInputBytes; a negative value sets no bound.
	MaxInputBytes int64
}

// Format is one input format: how to recognise it and how to parse it.
type Format struct {
	Name    string
	Summary string
	Detect  func(name string, head []byte) bool
	Parse   func(ctx context.Context, r io.Reader, opt *Options, sink reconcile.RowSink) error
}

// Formats are the formats reconcile reads, in the order detection tries them.
var Formats = []Format{
	{"stripe-itemized", "Stripe itemized reports (balance change from activity, payout and ending balance reconciliation), CSV",
		stripe.DetectItemized, func(ctx context.Context, r io.Reader, o *Options, s reconcile.RowSink) error {
			return stripe.ParseItemized(ctx, r, stripe.ItemizedOptions{Location: o.StripeLocation, DecimalComma: o.DecimalComma}, s)
		}},
	{"stripe-events", "Stripe webhook event dumps: JSON Lines, wrapped lines or a JSON array",
		stripe.DetectEvents, func(ctx context.Context, r io.Reader, o *Options, s reconcile.RowSink) error {
			return stripe.ParseEvents(ctx, r, stripe.EventsOptions{TestMode: o.StripeTestMode}, s)
		}},
	{"adyen-settlement", "Adyen Settlement details report, CSV",
		adyen.Detect, func(ctx context.Context, r io.Reader, o *Options, s reconcile.RowSink) error {
			return adyen.Parse(ctx, r, adyen.Options{Zones: o.AdyenZones, DefaultZone: o.AdyenDefaultZone, DecimalComma: o.DecimalComma}, s)
		}},
	{"paypal-stl", "PayPal Settlement Report (STL), comma, semicolon or tab separated",
		paypal.Detect, func(ctx context.Context, r io.Reader, o *Options, s reconcile.RowSink) error {
			return paypal.Parse(ctx, r, paypal.Options{}, s)
		}},
	{"camt053", "ISO 20022 camt.053 bank statements (.001.02, .04, .08)",
		camt.Detect, func(ctx context.Context, r io.Reader, o *Options, s reconcile.RowSink) error {
			return camt.Parse(ctx, r, camt.Options{}, s)
		}},
	{"csv", "any other CSV, read through a mapping file (--mapping)",
		func(string, []byte) bool { return false }, func(ctx context.Context, r io.Reader, o *Options, s reconcile.RowSink) error {
			return csvmap.Parse(ctx, r, csvmap.Options{Mapping: o.Mapping}, s)
		}},
}

// FormatNames lists the names --format accepts.
func FormatNames() []string {
	var names []string
	for _, f := range Formats {
		names = append(names, f.Name)
	}
	sort.Strings(names)
	return names
}

func formatByName(name string) (Format, bool) {
	for _, f := range Formats {
		if f.Name == name {
			return f, true
		}
	}
	return Format{}, false
}
