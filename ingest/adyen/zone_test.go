package adyen

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// wideHeader is the layout of current reports: the 30 classic columns, then
// the ones Adyen has appended since, ARN among them.
const wideHeader = "Company Account,Merchant Account,Psp Reference,Merchant Reference,Payment Method,Creation Date,TimeZone,Type," +
	"Modification Reference,Gross Currency,Gross Debit (GC),Gross Credit (GC),Exchange Rate,Net Currency,Net Debit (NC)," +
	"Net Credit (NC),Commission (NC),Markup (NC),Scheme Fees (NC),Interchange (NC),Payment Method Variant," +
	"Modification Merchant Reference,Batch Number,Reserved4,Reserved5,Reserved6,Reserved7,Reserved8,Reserved9,Reserved10," +
	"Booking Date,Booking Date TimeZone,Metadata,Balance Currency,Net Debit (BC),Net Credit (BC),Payment Fees (NC)," +
	"DCC Markup (NC),Funds Destination,Balance Platform Debit,Balance Platform Credit,Shopper Country,Clearing Network," +
	"Merchant Order Reference,Dispute Reference,ARN,Settlement Flow,Authorisation Code,Gross Fees (NC)\n"

// wideRow builds a data row of wideHeader from column values.
func wideRow(v map[string]string) string {
	names := strings.Split(strings.TrimSuffix(wideHeader, "\n"), ",")
	rec := make([]string, len(names))
	for i, n := range names {
		rec[i] = v[n]
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write(rec)
	w.Flush()
	return b.String()
}

// wideSettled is a valid Settled row of a US account in wideHeader's layout.
func wideSettled(over map[string]string) map[string]string {
	v := map[string]string{
		"Company Account": "AcmeCo", "Merchant Account": "ShopUS_ACCOUNT", "Psp Reference": "WQ5RT7YU9IO1PA3S",
		"Merchant Reference": "order-77", "Payment Method": "mc", "Creation Date": "2024-02-01 10:00:00", "TimeZone": "PST",
		"Type": "Settled", "Modification Reference": "WQ5RT7YU9IO1PA4D", "Gross Currency": "USD", "Gross Credit (GC)": "20.00",
		"Exchange Rate": "1", "Net Currency": "USD", "Net Credit (NC)": "19.50", "Commission (NC)": "0.50", "Batch Number": "12",
		"Booking Date": "2024-02-01 11:00:00", "Booking Date TimeZone": "PST", "Balance Currency": "USD",
		"Net Credit (BC)": "19.50", "Shopper Country": "US", "ARN": "24011340000000000001234", "Authorisation Code": "58213",
		"Gross Fees (NC)": "0.50",
	}
	for k, x := range over {
		v[k] = x
	}
	return v
}

// at is a row of wideHeader created at date in abbreviation tz, with its
// own references.
func at(n, date, tz string) string {
	return wideRow(wideSettled(map[string]string{"Creation Date": date, "TimeZone": tz,
		"Psp Reference": "WQ5RT7YU9IO1P" + n, "Modification Reference": "MD5RT7YU9IO1P" + n, "Merchant Reference": "order-" + n}))
}

// Without configuration, each row's TimeZone says the offset of its Creation
// Date; a row whose abbreviation names no single offset is rejected alone.
func TestTimeZoneColumn(t *testing.T) {
	in := wideHeader +
		at("101", "2024-01-15 09:30:00", "CET") +
		at("102", "2024-07-15 14:30:00", "CEST") +
		at("103", "2024-01-15 12:00:00", "GMT") +
		at("104", "2024-06-04 10:20:40", "IST") +
		at("105", "2024-02-01 10:00:00", "PST") +
		at("106", "2024-06-06 15:17:57", "PDT") +
		at("107", "2024-07-15 14:30:00", "CET") + // the standard abbreviation in summer: read as written
		at("108", "2024-06-04 10:20:40", "PST") +
		at("109", "2024-03-01 09:00:00", "") +
		at("110", "2024-03-01 09:00:00", "XST") +
		at("111", "2024-03-01 09:00:00", "cst") +
		at("112", "2024-08-01 12:00:00", "aest")
	calls, err := parseString(in, Options{})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	type outcome struct {
		Call string
		Line int
		Time string // evidence: the instant in UTC
	}
	want := []outcome{
		{"evidence", 2, "2024-01-15T08:30:00Z"},
		{"evidence", 3, "2024-07-15T12:30:00Z"},
		{"evidence", 4, "2024-01-15T12:00:00Z"},
		{"reject", 5, ""},
		{"evidence", 6, "2024-02-01T18:00:00Z"},
		{"evidence", 7, "2024-06-06T22:17:57Z"},
		{"evidence", 8, "2024-07-15T13:30:00Z"},
		{"evidence", 9, "2024-06-04T18:20:40Z"},
		{"reject", 10, ""},
		{"reject", 11, ""},
		{"reject", 12, ""},
		{"evidence", 13, "2024-08-01T02:00:00Z"},
	}
	var got []outcome
	for _, c := range calls {
		o := outcome{Call: c.Call, Line: c.Line}
		if c.Evidence != nil {
			o.Time = c.Evidence.Time.Format(time.RFC3339)
			if c.Evidence.Time.Location() != time.UTC {
				t.Errorf("line %d: time %v is not UTC", c.Line, c.Evidence.Time)
			}
		}
		got = append(got, o)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Parse(no options) outcomes (-want +got):\n%s", diff)
	}
	reasons := map[int][]string{
		5:  {`TimeZone "IST"`, "India", "Ireland", "Israel", `merchant account "ShopUS_ACCOUNT"`, "--adyen-zone ShopUS_ACCOUNT=ZONE"},
		10: {"TimeZone is empty", `merchant account "ShopUS_ACCOUNT"`, "--adyen-zone ShopUS_ACCOUNT=ZONE"},
		11: {`TimeZone "XST"`, `merchant account "ShopUS_ACCOUNT"`, "--adyen-zone ShopUS_ACCOUNT=ZONE"},
		12: {`TimeZone "cst"`, "China", `merchant account "ShopUS_ACCOUNT"`, "--adyen-zone ShopUS_ACCOUNT=ZONE"},
	}
	for _, c := range calls {
		for _, part := range reasons[c.Line] {
			if !strings.Contains(c.Reason, part) {
				t.Errorf("line %d: reason %q does not contain %q", c.Line, c.Reason, part)
			}
		}
	}
}

// A configured zone, for the account or by default, is read instead of the
// column, also where the two disagree.
func TestConfiguredZoneOverridesColumn(t *testing.T) {
	la, ams, kolkata := mustZone(t, "America/Los_Angeles"), mustZone(t, "Europe/Amsterdam"), mustZone(t, "Asia/Kolkata")
	tests := []struct {
		name              string
		opt               Options
		account, date, tz string
		want              string
	}{
		{"PST written in June is read in the account's zone", Options{Zones: map[string]*time.Location{"ShopUS_ACCOUNT": la}},
			"ShopUS_ACCOUNT", "2024-06-04 10:20:40", "PST", "2024-06-04T17:20:40Z"},
		{"an ambiguous abbreviation is read in the account's zone", Options{Zones: map[string]*time.Location{"ShopIN_ACCOUNT": kolkata}},
			"ShopIN_ACCOUNT", "2024-06-04 10:00:00", "IST", "2024-06-04T04:30:00Z"},
		{"an empty abbreviation is read in the account's zone", Options{Zones: map[string]*time.Location{"ShopUS_ACCOUNT": la}},
			"ShopUS_ACCOUNT", "2024-02-01 10:00:00", "", "2024-02-01T18:00:00Z"},
		{"the default zone wins over GMT", Options{DefaultZone: ams},
			"ShopUS_ACCOUNT", "2024-02-01 10:00:00", "GMT", "2024-02-01T09:00:00Z"},
		{"the account's zone wins over the default zone", Options{Zones: map[string]*time.Location{"ShopUS_ACCOUNT": la}, DefaultZone: ams},
			"ShopUS_ACCOUNT", "2024-02-01 10:00:00", "CET", "2024-02-01T18:00:00Z"},
		{"another account's zone leaves the column in charge", Options{Zones: map[string]*time.Location{"ShopEU_ACCOUNT": ams}},
			"ShopUS_ACCOUNT", "2024-02-01 10:00:00", "PST", "2024-02-01T18:00:00Z"},
		{"the repeated autumn hour keeps the abbreviation's choice", Options{Zones: map[string]*time.Location{"ShopUS_ACCOUNT": la}},
			"ShopUS_ACCOUNT", "2024-11-03 01:30:00", "PST", "2024-11-03T09:30:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := wideHeader + wideRow(wideSettled(map[string]string{"Merchant Account": tt.account, "Creation Date": tt.date, "TimeZone": tt.tz}))
			c := only(t, in, tt.opt)
			if c.Call != "evidence" {
				t.Fatalf("Parse(%s %s) = %s %q, want evidence", tt.date, tt.tz, c.Call, c.Reason)
			}
			if got := c.Evidence.Time.Format(time.RFC3339); got != tt.want {
				t.Errorf("Parse(%s %s) time = %s, want %s", tt.date, tt.tz, got, tt.want)
			}
		})
	}
}

// Every abbreviation of the table has the offset the IANA zones give it.
func TestFixedZonesMatchIANA(t *testing.T) {
	tests := []struct{ abbrev, zone, date string }{
		{"UTC", "UTC", "2024-01-15"}, {"GMT", "Europe/London", "2024-01-15"}, {"BST", "Europe/London", "2024-07-15"},
		{"WET", "Europe/Lisbon", "2024-01-15"}, {"WEST", "Europe/Lisbon", "2024-07-15"},
		{"CET", "Europe/Amsterdam", "2024-01-15"}, {"CEST", "Europe/Amsterdam", "2024-07-15"},
		{"EET", "Europe/Helsinki", "2024-01-15"}, {"EEST", "Europe/Helsinki", "2024-07-15"},
		{"SAST", "Africa/Johannesburg", "2024-01-15"},
		{"EST", "America/New_York", "2024-01-15"}, {"EDT", "America/New_York", "2024-07-15"},
		{"MST", "America/Denver", "2024-01-15"}, {"MDT", "America/Denver", "2024-07-15"},
		{"PST", "America/Los_Angeles", "2024-01-15"}, {"PDT", "America/Los_Angeles", "2024-07-15"},
		{"AKST", "America/Anchorage", "2024-01-15"}, {"AKDT", "America/Anchorage", "2024-07-15"},
		{"HST", "Pacific/Honolulu", "2024-01-15"},
		{"AEST", "Australia/Sydney", "2024-07-15"}, {"AEDT", "Australia/Sydney", "2024-01-15"},
		{"ACST", "Australia/Adelaide", "2024-07-15"}, {"ACDT", "Australia/Adelaide", "2024-01-15"},
		{"AWST", "Australia/Perth", "2024-01-15"},
		{"NZST", "Pacific/Auckland", "2024-07-15"}, {"NZDT", "Pacific/Auckland", "2024-01-15"},
		{"JST", "Asia/Tokyo", "2024-01-15"}, {"HKT", "Asia/Hong_Kong", "2024-01-15"},
		{"SGT", "Asia/Singapore", "2024-01-15"}, // tzdata writes +08
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		seen[tt.abbrev] = true
		d, err := time.ParseInLocation(time.DateOnly, tt.date, mustZone(t, tt.zone))
		if err != nil {
			t.Fatal(err)
		}
		name, want := d.Zone()
		if tt.abbrev != "SGT" && name != tt.abbrev {
			t.Errorf("%s on %s is %s, not %s: fix the test", tt.zone, tt.date, name, tt.abbrev)
		}
		loc := fixedZones[tt.abbrev]
		if loc == nil {
			t.Errorf("fixedZones[%q] = nil, want the offset of %s", tt.abbrev, tt.zone)
			continue
		}
		if _, got := d.In(loc).Zone(); got != want {
			t.Errorf("fixedZones[%q] offset = %ds, want %ds (%s on %s)", tt.abbrev, got, want, tt.zone, tt.date)
		}
	}
	for abbrev := range fixedZones {
		if !seen[abbrev] {
			t.Errorf("fixedZones[%q] is not checked against an IANA zone here", abbrev)
		}
		if ambiguousZones[abbrev] != "" {
			t.Errorf("%q is both fixed and ambiguous", abbrev)
		}
	}
}

// A spreadsheet-mangled value in a column the parser does not read keeps the
// row and flags it; in a column it reads, it rejects the row.
func TestMangledColumns(t *testing.T) {
	tests := []struct {
		name    string
		over    map[string]string
		mangled string // evidence: the flag; "" for a rejection
		reason  string // rejection: a part of the reason
	}{
		{name: "ARN", over: map[string]string{"ARN": "1.2302025304E+022"}, mangled: "ARN"},
		{name: "batch number and ARN", over: map[string]string{"Batch Number": "1E+3", "ARN": "2.4011E+22"}, mangled: "Batch Number, ARN"},
		{name: "payment method variant", over: map[string]string{"Payment Method Variant": "4.1E+5"}, mangled: "Payment Method Variant"},
		{name: "an appended amount column", over: map[string]string{"Gross Fees (NC)": "5E-01"}, mangled: "Gross Fees (NC)"},
		{name: "psp reference", over: map[string]string{"Psp Reference": "8.81566E+15"},
			reason: `column Psp Reference holds "8.81566E+15", a number in scientific notation`},
		{name: "merchant reference", over: map[string]string{"Merchant Reference": "2.06543E+08"},
			reason: `column Merchant Reference holds "2.06543E+08", a number in scientific notation`},
		{name: "modification merchant reference", over: map[string]string{"Type": "Refunded", "Modification Merchant Reference": "1.2E+7"},
			reason: "column Modification Merchant Reference holds"},
		{name: "gross credit", over: map[string]string{"Gross Credit (GC)": "1.8137E+15"}, reason: "column Gross Credit (GC) holds"},
		{name: "a read column and an unread one", over: map[string]string{"ARN": "1.2302025304E+022", "Modification Reference": "3.3E+15"},
			reason: "column Modification Reference holds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := wideHeader + wideRow(wideSettled(tt.over))
			c := only(t, in, Options{})
			if tt.reason != "" {
				if c.Call != "reject" || !strings.Contains(c.Reason, tt.reason) {
					t.Fatalf("Parse(%v) = %s %q, want a rejection containing %q", tt.over, c.Call, c.Reason, tt.reason)
				}
				return
			}
			if c.Call != "evidence" {
				t.Fatalf("Parse(%v) = %s %q, want evidence", tt.over, c.Call, c.Reason)
			}
			e := c.Evidence
			if got := e.Metadata["mangled"]; got != tt.mangled {
				t.Errorf("Parse(%v) Metadata[mangled] = %q, want %q", tt.over, got, tt.mangled)
			}
			if e.TxID != "WQ5RT7YU9IO1PA3S/WQ5RT7YU9IO1PA4D" || e.EffectKey != "order-77" || e.Amount.Minor != 2000 || e.Fee != 50 {
				t.Errorf("Parse(%v) = %+v, want the row's charge", tt.over, e)
			}
		})
	}
	c := only(t, wideHeader+wideRow(wideSettled(nil)), Options{})
	if _, ok := c.Evidence.Metadata["mangled"]; c.Call != "evidence" || ok {
		t.Errorf("Parse(a clean row) = %+v, want evidence without a mangled flag", c)
	}
}

// The classic layout's unread columns are flagged as well.
func TestMangledBatchNumber(t *testing.T) {
	c := only(t, header+row(settled(map[string]string{"Batch Number": "1E+3"})), testOptions(t))
	if c.Call != "evidence" || c.Evidence.Metadata["mangled"] != "Batch Number" {
		t.Fatalf("Parse(mangled batch number) = %s %q %v, want evidence flagged mangled: Batch Number", c.Call, c.Reason, c.Evidence)
	}
}
