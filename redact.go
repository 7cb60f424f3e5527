package reconcile

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"sort"
	"strings"
)

// Redacted is what RedactURL and Scrub put in place of a secret.
const Redacted = "xxxxx"

// minSecret is the length below which Scrub leaves a secret in the text: a
// query value such as "1" or "en" is no secret, and hiding every "1" of a
// message would garble it.
const minSecret = 4

// RedactURL returns raw with every part that may carry a secret replaced by
// xxxxx, so that it can be logged, put in an error or stored. The rule is
// the same for every URL the job is given (ledger, pager, webhook,
// Pushgateway):
//
//   - the password is hidden; so is the whole user info when the user name
//     looks like a token (16 characters or more, or 8 or more with a digit),
//     as in https://TOKEN@host or an API key given as the user;
//   - every query value is hidden (the names stay), and the fragment;
//   - for any scheme but postgres and postgresql the whole path is hidden:
//     a webhook carries its secret there (Slack's /services/T…/B…/SECRET).
//     A database URL's path is the database's name and stays.
//
// What does not parse as a URL with a host is not shown at all.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		if scheme, _, ok := strings.Cut(raw, "://"); ok && !strings.ContainsAny(scheme, "/@?#") {
			return scheme + "://" + Redacted
		}
		return Redacted
	case u.Opaque != "":
		return u.Scheme + ":" + Redacted
	case u.Scheme == "" || u.Host == "":
		return Redacted
	}
	var b strings.Builder
	b.WriteString(u.Scheme + "://")
	if u.User != nil {
		name := u.User.Username()
		_, hasPass := u.User.Password()
		switch {
		case name == "" || tokenLike(name):
			b.WriteString(Redacted)
		case hasPass:
			b.WriteString(url.PathEscape(name) + ":" + Redacted)
		default:
			b.WriteString(url.PathEscape(name))
		}
		b.WriteString("@")
	}
	b.WriteString(u.Host)
	switch {
	case databaseScheme(u.Scheme):
		b.WriteString(u.EscapedPath())
	case u.Path != "" && u.Path != "/":
		b.WriteString("/" + Redacted)
	default:
		b.WriteString(u.Path)
	}
	if u.RawQuery != "" || u.ForceQuery {
		parts := strings.Split(u.RawQuery, "&")
		for i, p := range parts {
			if name, _, ok := strings.Cut(p, "="); ok {
				parts[i] = name + "=" + Redacted
			} else {
				parts[i] = Redacted
			}
		}
		b.WriteString("?" + strings.Join(parts, "&"))
	}
	if u.Fragment != "" {
		b.WriteString("#" + Redacted)
	}
	return b.String()
}

// URLSecrets returns the parts of raw that RedactURL hides, as written in
// raw and decoded, for Scrub to hide in text that quotes the URL (an HTTP
// library's error, a server's answer that echoes the request).
func URLSecrets(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" {
		return []string{raw}
	}
	var out []string
	if u.User != nil {
		if name := u.User.Username(); tokenLike(name) {
			out = append(out, name)
		}
		if pass, ok := u.User.Password(); ok {
			out = append(out, pass)
		}
		// An HTTP client sends the user info as basic auth, which a server
		// may echo.
		out = append(out, base64.StdEncoding.EncodeToString([]byte(u.User.String())))
		if dec, err := url.PathUnescape(u.User.String()); err == nil {
			out = append(out, base64.StdEncoding.EncodeToString([]byte(dec)))
		}
	}
	if !databaseScheme(u.Scheme) {
		for _, seg := range strings.Split(u.EscapedPath(), "/") {
			dec, _ := url.PathUnescape(seg)
			out = append(out, seg, dec)
		}
	}
	for _, p := range strings.Split(u.RawQuery, "&") {
		_, v, ok := strings.Cut(p, "=")
		if !ok {
			v = p
		}
		dec, _ := url.QueryUnescape(v)
		out = append(out, v, dec)
	}
	return append(out, u.Fragment)
}

// Scrub replaces in s every secret, and its URL- and JSON-escaped forms, by
// xxxxx. Secrets shorter than four bytes are left alone.
func Scrub(s string, secrets ...string) string {
	var forms []string
	for _, secret := range secrets {
		if len(secret) < minSecret {
			continue
		}
		j, _ := json.Marshal(secret)
		forms = append(forms, secret, url.QueryEscape(secret), url.PathEscape(secret), string(j[1:len(j)-1]))
	}
	// The longest first, so that no part of a longer secret survives the
	// replacement of a shorter one inside it.
	sort.Slice(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
	for _, f := range forms {
		s = strings.ReplaceAll(s, f, Redacted)
	}
	return s
}

// tokenLike says whether a user name looks like a generated token rather
// than a name a person chose.
func tokenLike(s string) bool {
	return len(s) >= 16 || len(s) >= 8 && strings.ContainsAny(s, "0123456789")
}

func databaseScheme(scheme string) bool {
	return scheme == "postgres" || scheme == "postgresql"
}
