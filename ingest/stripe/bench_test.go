package stripe

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"reconcile"
	"reconcile/ingest/ingesttest"
)

const benchRows = 100_000

// countSink counts outcomes and keeps nothing, so that the benchmarks
// measure the parser.
type countSink struct{ evidence, rejected, ignored int }

func (s *countSink) Evidence(*reconcile.Evidence) error { s.evidence++; return nil }
func (s *countSink) Reject(int, string, string) error   { s.rejected++; return nil }
func (s *countSink) Ignore(int, string) error           { s.ignored++; return nil }

// benchItemized writes an itemized "balance change from activity" report
// with n rows: mostly charges, some refunds, fees and a payout now and then.
func benchItemized(n int) []byte {
	var b bytes.Buffer
	b.WriteString("balance_transaction_id,created_utc,created,available_on_utc,available_on,currency,gross,fee,net,reporting_category,source_id,description,customer_facing_amount,customer_facing_currency,automatic_payout_id,automatic_payout_effective_at_utc,customer_id,customer_email,charge_id,payment_intent_id,charge_created_utc,invoice_id,payment_method_type,card_brand,card_funding,card_country,dispute_reason,connected_account_id,payment_metadata[effect_key],payment_metadata[order_ref],refund_metadata[effect_key]\n")
	t0 := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		at := t0.Add(time.Duration(i) * 7 * time.Second).Format("2006-01-02 15:04:05")
		cents := 500 + i%100_000
		switch {
		case i%50 == 49:
			fmt.Fprintf(&b, "txn_1Bench%08dFee,%s,%s,%s,%s,usd,-%d.%02d,0.00,-%d.%02d,fee,,Radar (%s): Fraud teams,,,po_1Bench%04d,%s,,,,,,,,,,,,,,,\n",
				i, at, at, at, at, cents/100, cents%100, cents/100, cents%100, at[:10], i/10000, at)
		case i%10 == 9:
			fmt.Fprintf(&b, "txn_1Bench%08dRe,%s,%s,%s,%s,usd,-%d.%02d,0.00,-%d.%02d,refund,re_1Bench%08d,Refund for order %d,-%d.%02d,usd,po_1Bench%04d,%s,cus_Bench%06d,donor%d@example.org,ch_1Bench%08d,pi_1Bench%08d,%s,,card,visa,credit,US,,,eff-%08d,ord-%d,eff-re-%08d\n",
				i, at, at, at, at, cents/100, cents%100, cents/100, cents%100, i, i, cents/100, cents%100, i/10000, at, i%5000, i, i-1, i-1, at, i-1, i, i)
		default:
			fee := cents*29/1000 + 30
			fmt.Fprintf(&b, "txn_1Bench%08dCh,%s,%s,%s,%s,usd,%d.%02d,%d.%02d,%d.%02d,charge,ch_1Bench%08d,\"Donation, order %d\",%d.%02d,usd,po_1Bench%04d,%s,cus_Bench%06d,donor%d@example.org,ch_1Bench%08d,pi_1Bench%08d,%s,,card,visa,credit,US,,,eff-%08d,ord-%d,\n",
				i, at, at, at, at, cents/100, cents%100, fee/100, fee%100, (cents-fee)/100, (cents-fee)%100, i, i, cents/100, cents%100, i/10000, at, i%5000, i, i, i, at, i, i)
		}
	}
	return b.Bytes()
}

func BenchmarkParseItemized(b *testing.B) {
	benchParse(b, benchItemized(benchRows), func(r io.Reader, s reconcile.RowSink) error {
		return ParseItemized(context.Background(), r, ItemizedOptions{}, s)
	})
}

// benchParse runs parse over data into a countSink and checks that every
// row became evidence.
func benchParse(b *testing.B, data []byte, parse func(io.Reader, reconcile.RowSink) error) {
	ingesttest.Bench(b, data, func(r io.Reader) error {
		var s countSink
		if err := parse(r, &s); err != nil {
			return err
		}
		if s.evidence != benchRows {
			return fmt.Errorf("%d records, want %d (%d rejected)", s.evidence, benchRows, s.rejected)
		}
		return nil
	})
}

// BenchmarkReadCSV only reads the same bytes with encoding/csv, as the
// floor ParseItemized is measured against.
func BenchmarkReadCSV(b *testing.B) {
	if n := ingesttest.BenchReadCSV(b, benchItemized(benchRows)); n != benchRows+1 {
		b.Fatalf("%d records", n)
	}
}

// benchEvents writes n webhook events as JSON lines, shaped like real
// charge.succeeded and refund.created events (trimmed of the fields no
// parser reads, which only make them longer).
func benchEvents(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		created := 1740787200 + i*7
		if i%10 == 9 {
			fmt.Fprintf(&b, `{"id":"evt_1Bench%08d","object":"event","api_version":"2024-06-20","created":%d,"data":{"object":{"id":"re_1Bench%08d","object":"refund","amount":%d,"balance_transaction":"txn_1Bench%08d","charge":"ch_1Bench%08d","created":%d,"currency":"usd","destination_details":{"card":{"reference_status":"pending","reference_type":"acquirer_reference_number","type":"refund"},"type":"card"},"metadata":{"effect_key":"eff-re-%08d"},"payment_intent":"pi_1Bench%08d","reason":"requested_by_customer","receipt_number":null,"source_transfer_reversal":null,"status":"succeeded","transfer_reversal":null}},"livemode":true,"pending_webhooks":1,"request":{"id":"req_Bench%08d","idempotency_key":"7d1f6a0e-%08d"},"type":"refund.created"}`,
				i, created, i, 500+i%1000, i, i-1, created, i, i-1, i, i)
		} else {
			fmt.Fprintf(&b, `{"id":"evt_1Bench%08d","object":"event","api_version":"2024-06-20","created":%d,"data":{"object":{"id":"ch_1Bench%08d","object":"charge","amount":%d,"amount_captured":%d,"amount_refunded":0,"application":null,"application_fee":null,"application_fee_amount":null,"balance_transaction":"txn_1Bench%08d","billing_details":{"address":{"city":"Springfield","country":"US","line1":null,"line2":null,"postal_code":"62701","state":"IL"},"email":"donor%d@example.org","name":"Donor %d","phone":null},"calculated_statement_descriptor":"EXAMPLE.ORG","captured":true,"created":%d,"currency":"usd","customer":"cus_Bench%06d","description":"Donation","disputed":false,"failure_code":null,"failure_message":null,"fraud_details":{},"livemode":true,"metadata":{"effect_key":"eff-%08d","order_ref":"ord-%d"},"outcome":{"network_status":"approved_by_network","reason":null,"risk_level":"normal","risk_score":12,"seller_message":"Payment complete.","type":"authorized"},"paid":true,"payment_intent":"pi_1Bench%08d","payment_method":"pm_1Bench%08d","payment_method_details":{"card":{"brand":"visa","checks":{"address_line1_check":null,"address_postal_code_check":"pass","cvc_check":"pass"},"country":"US","exp_month":8,"exp_year":2030,"fingerprint":"Xt5EWLLDS7FJjR1c","funding":"credit","last4":"4242","network":"visa","three_d_secure":null,"wallet":null},"type":"card"},"receipt_email":null,"refunded":false,"status":"succeeded"}},"livemode":true,"pending_webhooks":1,"request":{"id":"req_Bench%08d","idempotency_key":"3f9c2b1a-%08d"},"type":"charge.succeeded"}`,
				i, created, i, 500+i%1000, 500+i%1000, i, i, i, created, i%5000, i, i, i, i, i, i)
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func BenchmarkParseEvents(b *testing.B) {
	benchParse(b, benchEvents(benchRows), func(r io.Reader, s reconcile.RowSink) error {
		return ParseEvents(context.Background(), r, EventsOptions{}, s)
	})
}

// BenchmarkScanJSONLines only splits the same bytes into lines and checks
// each is valid JSON, as the floor ParseEvents is measured against.
func BenchmarkScanJSONLines(b *testing.B) {
	ingesttest.Bench(b, benchEvents(benchRows), func(r io.Reader) error {
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, maxLine)
		for sc.Scan() {
			if !json.Valid(sc.Bytes()) {
				return errors.New("invalid line")
			}
		}
		return sc.Err()
	})
}
