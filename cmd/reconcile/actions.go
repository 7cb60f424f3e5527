package main

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"reconcile"
	"reconcile/compensate"
	"reconcile/escalate"
	"reconcile/stripeapi"
)

// actionFlags are the flags that govern what a run may do: the provider,
// the pager, leases and the blast-radius limits.
type actionFlags struct {
	apiKey          string // from STRIPE_API_KEY, never a flag: secrets stay out of process lists
	providerURL     string
	providerTimeout time.Duration
	pagerURL        string
	pagerWebhook    string
	lease           time.Duration
	grace           time.Duration
	deferredPage    time.Duration
	maxActions      int
	maxRefund       []string
	pageUnexpected  []string
}

func (f *actionFlags) add(cmd *cobra.Command) {
	f.apiKey = os.Getenv("STRIPE_API_KEY")
	fl := cmd.Flags()
	fl.StringVar(&f.providerURL, "provider-url", envOr("RECONCILE_STRIPE_URL", "https://api.stripe.com"),
		"base URL of the Stripe-compatible API (env RECONCILE_STRIPE_URL); the key comes from STRIPE_API_KEY")
	fl.DurationVar(&f.providerTimeout, "provider-timeout", 30*time.Second, "timeout of one provider call; a call that times out is in doubt, never failed")
	f.addPager(cmd)
	fl.DurationVar(&f.lease, "lease", 5*time.Minute, "how long an action's claim, and the run lease, last before another run may take them over; must outlast --provider-timeout")
	fl.Duration("key-ttl", 24*time.Hour, "")
	fl.MarkDeprecated("key-ttl", "every missing effect is now looked up at the provider before it is redelivered; the flag is ignored")
	fl.DurationVar(&f.grace, "grace", time.Hour, "how long a compensation may stay in doubt before a person is paged")
	fl.DurationVar(&f.deferredPage, "deferred-page-after", 72*time.Hour, "page a person about an effect deferred for longer than this")
	fl.IntVar(&f.maxActions, "max-actions", 1000, "above this many refunds and redeliveries in one run, make none and page (negative: no limit)")
	fl.StringArrayVar(&f.maxRefund, "max-refund", nil, "above this refund total in a currency, make no action and page, as CUR=AMOUNT, e.g. EUR=5000.00 (repeatable)")
	fl.StringArrayVar(&f.pageUnexpected, "page-unexpected", nil, "page for unexpected money of at least CUR=AMOUNT, e.g. EUR=1000.00 (repeatable)")
}

// addPager adds the flags that choose the pager.
func (f *actionFlags) addPager(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.pagerURL, "pager-url", os.Getenv("RECONCILE_PAGER_URL"),
		"PagerDuty Events API v2 endpoint, e.g. https://events.pagerduty.com/v2/enqueue (env RECONCILE_PAGER_URL); routing key from RECONCILE_PAGER_ROUTING_KEY")
	fl.StringVar(&f.pagerWebhook, "pager-webhook", os.Getenv("RECONCILE_PAGER_WEBHOOK"),
		"URL that gets each page as a JSON POST instead (env RECONCILE_PAGER_WEBHOOK); with no pager, pages are logged on stderr")
}

// checkDurations refuses the duration flags that make no sense, before
// anything is taken: a lease, or a timeout of zero or less
// has no deadline, and a negative wait none at all.
func (f *actionFlags) checkDurations() error {
	for _, d := range []struct {
		name   string
		v      time.Duration
		zeroOK bool
	}{{"--lease", f.lease, false}, {"--provider-timeout", f.providerTimeout, false}, {"--grace", f.grace, true}, {"--deferred-page-after", f.deferredPage, true}} {
		if d.v < 0 || d.v == 0 && !d.zeroOK {
			return usageError("%s %s: want a positive duration such as 5m", d.name, d.v)
		}
	}
	return nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// amounts parses CUR=AMOUNT flags into minor units per currency.
func amounts(flag string, vals []string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, v := range vals {
		cur, amount, ok := strings.Cut(v, "=")
		c, err := reconcile.NormalizeCurrency(cur)
		if !ok || err != nil {
			return nil, usageError("%s %q: want CUR=AMOUNT, e.g. EUR=5000.00", flag, v)
		}
		exp, err := reconcile.Exponent("", c)
		if err != nil {
			return nil, usageError("%s %q: %v", flag, v, err)
		}
		minor, err := reconcile.ParseMinor(amount, exp, '.')
		if err != nil || minor < 0 {
			return nil, usageError("%s %q: %q is not an amount in %s", flag, v, amount, c)
		}
		out[c] = minor
	}
	return out, nil
}

// options are the actions' limits, from the flags.
func (f *actionFlags) options(apply bool) (compensate.Options, error) {
	maxRefund, err := amounts("--max-refund", f.maxRefund)
	if err != nil {
		return compensate.Options{}, err
	}
	if apply && f.lease <= f.providerTimeout {
		return compensate.Options{}, usageError("--lease %s must outlast --provider-timeout %s: a call must not outlive its claim", f.lease, f.providerTimeout)
	}
	grace := f.grace
	if grace == 0 {
		grace = -1 // --grace 0: page at once
	}
	return compensate.Options{Lease: f.lease, Grace: grace, DeferredPageAfter: f.deferredPage, MaxActions: f.maxActions,
		MaxRefund: maxRefund}, nil
}

// providers are the providers' APIs by name, for a run that applies; nil
// otherwise. Stripe's is the one there is.
func (f *actionFlags) providers(apply bool) (map[string]compensate.Provider, error) {
	if !apply {
		return nil, nil
	}
	if f.apiKey == "" {
		return nil, usageError("--apply needs the provider's API key in STRIPE_API_KEY")
	}
	return map[string]compensate.Provider{"stripe": stripeapi.New(stripeapi.Config{BaseURL: f.providerURL, APIKey: f.apiKey, Timeout: f.providerTimeout})}, nil
}

// owner names this process in claims: host:pid.
func owner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

// pager is the configured pager: PagerDuty (whose incidents link to
// clientURL), a webhook, or the log.
func (a *app) pager(f *actionFlags, clientURL string) escalate.Pager {
	host, _ := os.Hostname()
	client := &http.Client{Timeout: 30 * time.Second}
	switch {
	case f.pagerURL != "":
		return &escalate.PagerDuty{URL: f.pagerURL, RoutingKey: os.Getenv("RECONCILE_PAGER_ROUTING_KEY"), Source: host, Client: client,
			ClientURL: clientURL}
	case f.pagerWebhook != "":
		return &escalate.Webhook{URL: f.pagerWebhook, Client: client}
	}
	return &escalate.Log{W: a.stderr}
}
