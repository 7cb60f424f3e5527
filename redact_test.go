package reconcile

import (
	"strings"
	"testing"
)

func TestRedactURL(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		// A webhook's path is its secret: all of it goes.
		{"https://hooks.example.com/services/T000/B000/XXXXSECRET", "https://hooks.example.com/xxxxx"},
		{"https://events.pagerduty.com/v2/enqueue", "https://events.pagerduty.com/xxxxx"},
		{"https://hooks.example.com/hook?token=s3cret&channel=ops", "https://hooks.example.com/xxxxx?token=xxxxx&channel=xxxxx"},
		{"http://127.0.0.1:8080/?SECRET", "http://127.0.0.1:8080/?xxxxx"},
		{"https://hooks.example.com/x#frag", "https://hooks.example.com/xxxxx#xxxxx"},
		// The password goes; a user name stays unless it looks like a token.
		{"https://user:pass@push.example/", "https://user:xxxxx@push.example/"},
		{"https://push.example:9091", "https://push.example:9091"},
		{"https://ghp_0123456789abcdefABCDEF@host.example/", "https://xxxxx@host.example/"},
		{"https://sk_test_4eC39HqLyjWDarjtT1zdp7dc:@api.example", "https://xxxxx@api.example"},
		{"https://AC0123456789:tok@api.example", "https://xxxxx@api.example"},
		// A database's path is its name: it stays.
		{"postgres://app:s3cret@db:5432/pay", "postgres://app:xxxxx@db:5432/pay"},
		{"postgres://app@db/pay", "postgres://app@db/pay"},
		{"postgresql://db/pay?sslmode=disable&password=s3cret", "postgresql://db/pay?sslmode=xxxxx&password=xxxxx"},
		// What does not parse is not shown.
		{"https://user:pa ss@host/%zz", "https://xxxxx"},
		{"hooks.example.com/services/T000/XXXXSECRET", "xxxxx"},
		{"mailto:ops@example.com", "mailto:xxxxx"},
	}
	for _, tc := range tests {
		if got := RedactURL(tc.in); got != tc.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestScrubHidesEveryFormOfASecret(t *testing.T) {
	raw := "https://ops:pa%2Fss@hooks.example.com/services/T000/B000/XXXXSECRET?token=a%2Bb%2Fc1234"
	secrets := append(URLSecrets(raw), "R0UTING\"KEY")
	tests := []struct {
		in   string
		hide []string
	}{
		{`{"url":"` + raw + `"}`, []string{"pa%2Fss", "XXXXSECRET", "a%2Bb%2Fc1234"}},
		{`got token a+b/c1234 and password pa/ss`, []string{"a+b/c1234", "pa/ss"}},
		{`{"routing_key":"R0UTING\"KEY"}`, []string{`R0UTING\"KEY`}},
		{`routing key R0UTING"KEY`, []string{`R0UTING"KEY`}},
	}
	for _, tc := range tests {
		got := Scrub(tc.in, secrets...)
		for _, s := range tc.hide {
			if strings.Contains(got, s) {
				t.Errorf("Scrub(%q) = %q, still shows %q", tc.in, got, s)
			}
		}
		if !strings.Contains(got, Redacted) {
			t.Errorf("Scrub(%q) = %q, want %s in place of the secrets", tc.in, got, Redacted)
		}
	}
	if got := Scrub("HTTP 400: bad request", "", "400", "a"); got != "HTTP 400: bad request" {
		t.Errorf("Scrub with empty and short secrets = %q, want the text unchanged", got)
	}
}
