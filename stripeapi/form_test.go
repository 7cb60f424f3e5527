package stripeapi

import (
	"encoding/json"
	"testing"
)

func TestPaymentFormSendsTheRecordedRequestExactly(t *testing.T) {
	for _, tc := range []struct {
		name, request, want string
	}{
		{"minimal", `{"amount": 1420000, "currency": "eur"}`,
			"amount=1420000&confirm=true&currency=eur&metadata[effect_key]=k1"},
		{"numbers as written, never through float64", `{"amount": 9007199254740993, "application_fee_amount": 1e2, "x": 0.10}`,
			"amount=9007199254740993&application_fee_amount=1e2&confirm=true&metadata[effect_key]=k1&x=0.10"},
		{"nested objects, arrays of objects, booleans, null and empties",
			`{"amount": 5, "currency": "usd", "shipping": {"address": {"line1": "1 Rue X", "city": "Paris"}, "name": "Ana"},
			  "payment_method_types": ["card", "sepa_debit"], "items": [{"price": "p_1", "qty": 2}],
			  "off_session": false, "description": null, "payment_method_options": {}, "tags": []}`,
			"amount=5&confirm=true&currency=usd&description=&items[0][price]=p_1&items[0][qty]=2&metadata[effect_key]=k1" +
				"&off_session=false&payment_method_options=&payment_method_types[0]=card&payment_method_types[1]=sepa_debit" +
				"&shipping[address][city]=Paris&shipping[address][line1]=1+Rue+X&shipping[name]=Ana&tags="},
		{"recorded metadata kept, effect key equal", `{"amount": 5, "currency": "usd", "metadata": {"effect_key": "k1", "order": "A&B=1"}}`,
			"amount=5&confirm=true&currency=usd&metadata[effect_key]=k1&metadata[order]=A%26B%3D1"},
		{"confirm is always true", `{"amount": 5, "currency": "usd", "confirm": false}`,
			"amount=5&confirm=true&currency=usd&metadata[effect_key]=k1"},
	} {
		got, err := paymentForm("k1", json.RawMessage(tc.request))
		if err != nil {
			t.Errorf("%s: paymentForm: %v", tc.name, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s: paymentForm(%s) =\n%s\nwant\n%s", tc.name, tc.request, got, tc.want)
		}
	}
}

func TestPaymentFormRefusesWhatItCannotSendExactly(t *testing.T) {
	for _, request := range []string{`null`, `[]`, `"x"`, `{`, `{} {}`, `{"metadata": []}`, `{"metadata": {"effect_key": "other"}}`, `{"metadata": {"effect_key": 1}}`} {
		if got, err := paymentForm("k1", json.RawMessage(request)); err == nil {
			t.Errorf("paymentForm(%s) = %s, want an error", request, got)
		}
	}
}

func TestSearchQueryQuotesTheKey(t *testing.T) {
	for key, want := range map[string]string{
		"run_8f3c1a:charge:0": `metadata['effect_key']:'run_8f3c1a:charge:0'`,
		`o'brien\x`:           `metadata['effect_key']:'o\'brien\\x'`,
	} {
		if got := SearchQuery(key); got != want {
			t.Errorf("SearchQuery(%q) = %s, want %s", key, got, want)
		}
	}
}
