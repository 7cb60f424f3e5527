package tabular

import "time"

// ParseDateTime reads the date and time at the start of s when they are
// written as in "2006-01-02 15:04:05": four digits of year, then two each of
// month, day, hour, minute and second, with dateSep between the parts of the
// date, mid between date and time and ':' between the parts of the time. It
// returns the time in loc and the rest of s. It reports false for anything
// else, a date that does not exist included; callers then use time.Parse,
// which reads what ParseDateTime accepts the same way, only slower.
func ParseDateTime(s string, dateSep, mid byte, loc *time.Location) (time.Time, string, bool) {
	if len(s) < 19 || s[4] != dateSep || s[7] != dateSep || s[10] != mid || s[13] != ':' || s[16] != ':' {
		return time.Time{}, s, false
	}
	hi, ok1 := two(s, 0)
	lo, ok2 := two(s, 2)
	month, ok3 := two(s, 5)
	day, ok4 := two(s, 8)
	hour, ok5 := two(s, 11)
	minute, ok6 := two(s, 14)
	sec, ok7 := two(s, 17)
	year := hi*100 + lo
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) ||
		month < 1 || month > 12 || day < 1 || day > daysIn(month, year) || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, s, false
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, 0, loc), s[19:], true
}

// ParseOffset reads a zone offset written "+hh:mm" (colon true) or "+hhmm",
// with '+' or '-', and nothing after it, as seconds east of UTC. It reports
// false for anything else, hours over 23 and minutes over 59 included.
func ParseOffset(s string, colon bool) (int, bool) {
	m := 3
	if colon {
		if len(s) != 6 || s[3] != ':' {
			return 0, false
		}
		m = 4
	} else if len(s) != 5 {
		return 0, false
	}
	h, ok1 := two(s, 1)
	mm, ok2 := two(s, m)
	if !ok1 || !ok2 || h > 23 || mm > 59 {
		return 0, false
	}
	off := (h*60 + mm) * 60
	switch s[0] {
	case '+':
		return off, true
	case '-':
		return -off, true
	}
	return 0, false
}

// two reads the two digits at s[i:].
func two(s string, i int) (int, bool) {
	a, b := s[i]-'0', s[i+1]-'0'
	return int(a)*10 + int(b), a <= 9 && b <= 9
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
