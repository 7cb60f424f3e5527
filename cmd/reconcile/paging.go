package main

import (
	"os"

	"github.com/spf13/cobra"

	"reconcile"
	"reconcile/escalate"
)

// pageRetry is how a run tries again a page the pager did not take: the
// Raiser's defaults (3 tries over at most 30 seconds). Tests shorten it.
var pageRetry escalate.Retry

// pageFlags say how a run's pages look: the link they carry, and when
// they are critical.
type pageFlags struct {
	clientURL string
	critical  []string
}

func (f *pageFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.clientURL, "client-url", os.Getenv("RECONCILE_CLIENT_URL"),
		"the runbook or dashboard a PagerDuty incident links to, as its client_url (env RECONCILE_CLIENT_URL)")
	fl.StringArrayVar(&f.critical, "page-critical", nil,
		"page with severity critical when the money at risk of the finding is at least CUR=AMOUNT, e.g. EUR=10000.00 (repeatable); else error")
}

// pagerSecrets are what a pager's error must never show: the routing key
// and the secrets of the pager's URLs.
func pagerSecrets(f *actionFlags) []string {
	out := []string{os.Getenv("RECONCILE_PAGER_ROUTING_KEY")}
	for _, u := range []string{f.pagerURL, f.pagerWebhook} {
		if u != "" {
			out = append(out, reconcile.URLSecrets(u)...)
		}
	}
	return out
}
