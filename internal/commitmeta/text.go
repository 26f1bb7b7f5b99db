package commitmeta

import "net/url"

// The text of the reports (a stall's member and reason, a dead letter's
// error class) is printable ASCII, query-escaped on the wire.

// appendText appends url.QueryEscape(printable(s, n)) to b without building
// either string: each byte of s up to n is made printable as printable
// does, then written as itself (A-Z, a-z, 0-9 and -_.~), '+' (a space) or
// %XX, as QueryEscape writes it.
func appendText(b []byte, s string, n int) []byte {
	if len(s) > n {
		s = s[:n]
	}
	for i := 0; i < len(s); i++ {
		c := printableByte(s[i])
		switch {
		case unreserved(c):
			b = append(b, c)
		case c == ' ':
			b = append(b, '+')
		default:
			b = append(b, '%', upperHex[c>>4], upperHex[c&15])
		}
	}
	return b
}

// textLen returns len(appendText(nil, s, n)).
func textLen(s string, n int) int {
	if len(s) > n {
		s = s[:n]
	}
	l := len(s)
	for i := 0; i < len(s); i++ {
		if c := printableByte(s[i]); c != ' ' && !unreserved(c) {
			l += 2
		}
	}
	return l
}

const upperHex = "0123456789ABCDEF"

// unreserved reports whether url.QueryEscape writes c as itself.
func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '_' || c == '.' || c == '~'
}

// printableByte is what printable makes of c.
func printableByte(c byte) byte {
	switch {
	case c < ' ' || c == 0x7f:
		return ' '
	case c > '~':
		return '?'
	}
	return c
}

// printable returns s with every byte outside printable ASCII replaced (a
// control byte by a space, any other by '?'), cut to at most n bytes. Every
// byte is ASCII afterwards, so any cut is on a character boundary.
func printable(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	clean := true
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		b[i] = printableByte(c)
	}
	return string(b)
}

// unescapeText reads back a text field appendText wrote with limit n: the
// query-unescaped value, which must be printable ASCII of at most n bytes.
// It refuses a value longer than 3n before any work (an escape is at most
// three bytes a byte), so its cost does not grow with a hostile value.
func unescapeText(v string, n int) (string, bool) {
	if len(v) > 3*n {
		return "", false
	}
	u, err := url.QueryUnescape(v)
	if err != nil || len(u) > n || printable(u, n) != u {
		return "", false
	}
	return u, true
}
