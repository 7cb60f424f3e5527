package ingest

import "slices"

// webhookFormats are the formats whose records are the provider's webhook
// events: evidence that does not corroborate a transaction by itself
// (reconcile.Evidence.Webhook).
var webhookFormats = []string{"stripe-events"}

// WebhookFormats lists the formats whose records are webhook events.
func WebhookFormats() []string { return slices.Clone(webhookFormats) }
