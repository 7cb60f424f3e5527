package camt

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// entryTime returns when an entry happened: its booking date (BookgDt), else
// its value date (ValDt), else the statement's own date: the end of its
// period, else its creation, else the message's creation. The schema makes
// BookgDt optional and some banks leave out both dates; note then says which
// date the time is, for the evidence's Metadata. valueDate is the entry's
// value date, or zero.
func entryTime(st *statement, e *entry) (when, valueDate time.Time, note string, err error) {
	if e.ValDt != nil {
		if valueDate, err = parseDate(e.ValDt, "Ntry/ValDt"); err != nil {
			return time.Time{}, time.Time{}, "", err
		}
	}
	switch {
	case e.BookgDt != nil:
		when, err = parseDate(e.BookgDt, "Ntry/BookgDt")
		return when, valueDate, "", err
	case e.ValDt != nil:
		return valueDate, valueDate, "no BookgDt: time is the value date (ValDt)", nil
	}
	for _, d := range []struct{ text, path, what string }{
		{st.periodEnd, "Stmt/FrToDt/ToDtTm", "the statement's end"},
		{st.created, "Stmt/CreDtTm", "the statement's creation"},
		{st.msgCreated, "GrpHdr/CreDtTm", "the message's creation"},
	} {
		s := strings.TrimSpace(d.text)
		if s == "" {
			continue
		}
		if when, err = parseDateTime(s, d.path); err != nil {
			return time.Time{}, time.Time{}, "", fmt.Errorf("entry has no booking or value date, and the statement's %w", err)
		}
		return when, time.Time{}, "no BookgDt or ValDt: time is " + d.what + " (" + d.path + ")", nil
	}
	return time.Time{}, time.Time{}, "", errors.New("entry has no booking date (Ntry/BookgDt) or value date (Ntry/ValDt), and the statement has no date (Stmt/FrToDt/ToDtTm, Stmt/CreDtTm or GrpHdr/CreDtTm)")
}

// parseDate reads a Dt (a date, taken as 00:00 UTC; a time zone written after
// it is ignored) or a DtTm (see parseDateTime).
func parseDate(d *date, path string) (time.Time, error) {
	if s := strings.TrimSpace(d.Dt); s != "" {
		if len(s) >= 10 {
			day, err := time.Parse(time.DateOnly, s[:10])
			zone := s[10:]
			if err == nil && (zone == "" || isZone(zone)) {
				return day, nil
			}
		}
		return time.Time{}, fmt.Errorf("%s/Dt %q is not a date (YYYY-MM-DD)", path, s)
	}
	if s := strings.TrimSpace(d.DtTm); s != "" {
		return parseDateTime(s, path+"/DtTm")
	}
	return time.Time{}, fmt.Errorf("%s has neither Dt nor DtTm", path)
}

// parseDateTime reads an ISO date and time: with an offset it is converted to
// UTC; without one it is read as UTC, since the statement does not say which
// zone the bank meant.
func parseDateTime(s, path string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse("2006-01-02T15:04:05.999999999", s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%s %q is not a date and time (YYYY-MM-DDThh:mm:ss)", path, s)
}

// isZone reports whether s is a time zone as XML Schema writes it after a
// date: "Z" or "+01:00".
func isZone(s string) bool {
	_, err := time.Parse("Z07:00", s)
	return err == nil
}
