package adyen

import (
	"fmt"
	"strings"
	"time"
)

// fixedZones are the TimeZone abbreviations that mean one UTC offset
// wherever Adyen writes them: without a configured zone, a row's Creation
// Date is read at its abbreviation's offset. The list is kept short on
// purpose: an abbreviation with a second meaning (see ambiguousZones) or one
// that changed its offset in recent years (MSK, KST) is not in it, and a row
// that carries one needs the merchant account's zone.
var fixedZones = offsets(map[string]int{
	"UTC": 0, "GMT": 0, "WET": 0, "WEST": 60, "BST": 60,
	"CET": 60, "CEST": 120, "EET": 120, "EEST": 180, "SAST": 120,
	"EST": -300, "EDT": -240, "MST": -420, "MDT": -360, "PST": -480, "PDT": -420,
	"AKST": -540, "AKDT": -480, "HST": -600,
	"AEST": 600, "AEDT": 660, "ACST": 570, "ACDT": 630, "AWST": 480, "NZST": 720, "NZDT": 780,
	"JST": 540, "HKT": 480, "SGT": 480,
})

// ambiguousZones are abbreviations known to mean more than one offset, with
// their meanings, for the rejection reason.
var ambiguousZones = map[string]string{
	"IST": "India +05:30, Ireland +01:00 or Israel +02:00",
	"CST": "US Central -06:00, China +08:00 or Cuba -05:00",
	"CDT": "US Central -05:00 or Cuba -04:00",
	"AST": "Atlantic -04:00 or Arabia +03:00",
	"ADT": "Atlantic -03:00 or Arabia +04:00",
	"GST": "Gulf +04:00 or South Georgia -02:00",
	"SST": "Samoa -11:00, Singapore +08:00 or Solomon Islands +11:00",
	"KST": "Korea +09:00, or North Korea +08:30 in 2015-2018",
	"MSK": "Moscow +03:00, or +04:00 in 2011-2014",
	"WIT": "Jayapura +09:00, or Jakarta +07:00 in older Java names",
}

// offsets makes a fixed zone of each abbreviation's offset in minutes.
func offsets(minutes map[string]int) map[string]*time.Location {
	m := make(map[string]*time.Location, len(minutes))
	for name, n := range minutes {
		m[name] = time.FixedZone(name, n*60)
	}
	return m
}

// zone returns the zone to read a row's Creation Date in: the merchant
// account's configured zone, else the default zone, else the fixed offset
// of the row's TimeZone abbreviation. When there is none, it returns the
// reason the row is rejected.
func (p *parser) zone(account, abbrev string) (*time.Location, string) {
	if z := p.opt.Zones[account]; z != nil {
		return z, ""
	}
	if p.opt.DefaultZone != nil {
		return p.opt.DefaultZone, ""
	}
	upper := strings.ToUpper(abbrev)
	if z := fixedZones[upper]; z != nil {
		return z, ""
	}
	var what string
	switch meanings := ambiguousZones[upper]; {
	case abbrev == "":
		what = "TimeZone is empty"
	case meanings != "":
		what = fmt.Sprintf("TimeZone %q means more than one offset (%s)", abbrev, meanings)
	default:
		what = fmt.Sprintf("TimeZone %q is not an abbreviation with one known offset", abbrev)
	}
	return nil, fmt.Sprintf("%s, so the instant of Creation Date is unknown; configure the zone of merchant account %q: "+
		"--adyen-zone %s=ZONE, with ZONE an IANA name such as Europe/Amsterdam", what, account, account)
}
