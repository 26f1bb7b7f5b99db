package commitmeta

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
	"time"
)

// The stall provenance keys, in the order Fields writes them.
const (
	keyStallFirst    = "sf"
	keyStallLast     = "sl"
	keyStallSince    = "ss"
	keyStallAttempts = "sa"
	keyStallMember   = "sm"
	keyStallReason   = "sr"
)

// Limits of a Stall's text fields, in bytes before escaping.
const (
	// MaxReasonLen bounds Stall.Reason: room for an error class, not a
	// whole error chain.
	MaxReasonLen = 120

	// MaxMemberLen bounds Stall.Member: a client ID and a host name of 40
	// bytes each and the "@" between them.
	MaxMemberLen = 81
)

// MaxStallFieldsLen is the longest Fields of a Stall that StallFromFields
// accepts: three offsets and a time of 19 digits, 10 digits of attempts, a
// member and a reason of which every byte is escaped to three, and the six
// keys with their separators. A writer that reserves it before the ranges
// never has the provenance cut.
const MaxStallFieldsLen = 6*len("sf=") + 5*len(" ") + 3*19 + 10 + 3*MaxMemberLen + 3*MaxReasonLen

// MaxStallMarkLen is the longest stall mark, sf= alone with 19 digits:
// what a commit carries of a stall when the whole provenance does not fit
// (see Stall.MarkOnly and MinCommitBudget).
const MaxStallMarkLen = len("sf=") + 19

// Stall is why a partition's watermark is stuck: the failed batch at its
// head. The input writes it with every commit of a stalled partition, so
// that anyone who can read the group's offsets (an admin tool, `watermark-
// connect status`) sees what holds the partition, since when, and who saw
// it, without the input's metrics or logs.
//
// A Stall is a value, safe for concurrent use.
type Stall struct {
	First, Last int64     // offsets of the failed batch; 0 <= First <= Last
	Since       time.Time // its first nack; written in Unix milliseconds, >= 0
	Attempts    int       // deliveries of it so far, 1 to math.MaxInt32
	Reason      string    // a short error class: printable ASCII, at most MaxReasonLen bytes
	Member      string    // who saw it: client ID and host name, at most MaxMemberLen bytes

	// MarkOnly says that only First is known: the stall was read from
	// its mark, sf= alone, which a commit carries when the whole
	// provenance did not fit its metadata. The partition is stalled all
	// the same. Last, Since, Attempts, Reason and Member are then zero
	// (Since is the zero time.Time, not Unix 0), and the bounds above
	// hold for First only; Fields writes the mark.
	MarkOnly bool
}

// mark returns the stall mark of s: its First alone.
func (s Stall) mark() Stall { return Stall{First: s.First, MarkOnly: true} }

// Fields returns s as extra fields for Encode:
//
//	sf=<First> sl=<Last> ss=<Since, Unix ms> sa=<Attempts> sm=<Member> sr=<Reason>
//
// Member and Reason are made printable ASCII first (a control byte becomes a
// space, any other byte outside 0x20-0x7E a '?', so an error message in
// UTF-8 or over several lines still fits the format), cut to MaxMemberLen
// and MaxReasonLen bytes, then query-escaped (url.QueryEscape: a space
// becomes '+', which admin tools show as is). Cutting before escaping never
// splits an escape.
//
// The numbers are written as they are: a Stall that breaks the bounds on its
// fields encodes, and StallFromFields then reports the broken field. For a
// Stall within them the result is at most MaxStallFieldsLen bytes.
//
// A Stall with MarkOnly set is written as its mark, sf=<First> alone, at
// most MaxStallMarkLen bytes.
func (s Stall) Fields() string {
	return string(s.appendFields(make([]byte, 0, s.fieldsLen())))
}

// appendFields appends s.Fields() to b. It allocates nothing when b has
// room for fieldsLen() more bytes: the encoder of a commit writes the
// provenance straight into its buffer.
func (s Stall) appendFields(b []byte) []byte {
	b = append(b, keyStallFirst+"="...)
	b = strconv.AppendInt(b, s.First, 10)
	if s.MarkOnly {
		return b
	}
	b = append(b, " "+keyStallLast+"="...)
	b = strconv.AppendInt(b, s.Last, 10)
	b = append(b, " "+keyStallSince+"="...)
	b = strconv.AppendInt(b, s.Since.UnixMilli(), 10)
	b = append(b, " "+keyStallAttempts+"="...)
	b = strconv.AppendInt(b, int64(s.Attempts), 10)
	b = append(b, " "+keyStallMember+"="...)
	b = appendText(b, s.Member, MaxMemberLen)
	b = append(b, " "+keyStallReason+"="...)
	return appendText(b, s.Reason, MaxReasonLen)
}

// fieldsLen returns len(s.Fields()) without building it.
func (s Stall) fieldsLen() int {
	mark := len(keyStallFirst+"=") + decimalLen(s.First)
	if s.MarkOnly {
		return mark
	}
	return mark +
		len(" "+keyStallLast+"=") + decimalLen(s.Last) +
		len(" "+keyStallSince+"=") + decimalLen(s.Since.UnixMilli()) +
		len(" "+keyStallAttempts+"=") + decimalLen(int64(s.Attempts)) +
		len(" "+keyStallMember+"=") + textLen(s.Member, MaxMemberLen) +
		len(" "+keyStallReason+"=") + textLen(s.Reason, MaxReasonLen)
}

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

// stallError is the *ReportError of the stall field key.
func stallError(key, value, expected string, detail error) *ReportError {
	return reportError(KindStall, key, value, expected, detail)
}

// StallFromFields reads a Stall back from the fields DecodeFields returns.
// ok is false, with no error, when there is none: no sf key (a partition
// that is not stalled, or metadata written before the provenance existed).
// sf alone, with none of sl, ss, sa, sm and sr, is the stall mark: a Stall
// with MarkOnly set and First its only field. When sf comes with any other
// of them every field must be there, and a field that is missing or
// malformed is a *ReportError naming it and its value.
//
// The fields are untrusted (anyone may commit to a group): StallFromFields
// never panics, does work linear in the values' lengths, and a Stall it
// returns keeps every bound stated on Stall's fields, so that its Fields
// encode it again to the same Stall. Since is in UTC.
func StallFromFields(fields map[string]string) (s Stall, ok bool, err error) {
	if _, ok := fields[keyStallFirst]; !ok {
		return Stall{}, false, nil
	}
	get := func(key, expected string) (string, error) {
		v, ok := fields[key]
		if !ok {
			return "", stallError(key, "", expected, ErrMissingField)
		}
		return v, nil
	}
	num := func(key, expected string, limit int64) (int64, error) {
		v, err := get(key, expected)
		if err != nil {
			return 0, err
		}
		n, i, serr := scanNumber(v, 0, len(v), limit, key)
		if serr != nil {
			return 0, stallError(key, v, expected, serr.Err)
		}
		if i != len(v) {
			return 0, stallError(key, v, expected, nil)
		}
		return n, nil
	}
	text := func(key, expected string, limit int) (string, error) {
		v, err := get(key, expected)
		if err != nil {
			return "", err
		}
		u, ok := unescapeText(v, limit)
		if !ok {
			return "", stallError(key, v, expected, nil)
		}
		return u, nil
	}

	const offset = "a decimal offset from 0 to 9223372036854775807, no sign or leading zeros"
	if s.First, err = num(keyStallFirst, offset, math.MaxInt64); err != nil {
		return Stall{}, false, err
	}
	if markOnly(fields) {
		return s.mark(), true, nil
	}
	if s.Last, err = num(keyStallLast, offset+" and at least sf", math.MaxInt64); err != nil {
		return Stall{}, false, err
	}
	if s.Last < s.First {
		return Stall{}, false, stallError(keyStallLast, fields[keyStallLast],
			fmt.Sprintf("an offset at least sf (%d)", s.First), nil)
	}
	ms, err := num(keyStallSince, "Unix milliseconds from 0 to 9223372036854775807, no sign or leading zeros", math.MaxInt64)
	if err != nil {
		return Stall{}, false, err
	}
	s.Since = time.UnixMilli(ms).UTC()
	attempts, err := num(keyStallAttempts, "a decimal count from 1 to 2147483647, no sign or leading zeros", math.MaxInt32)
	if err != nil {
		return Stall{}, false, err
	}
	if attempts < 1 {
		return Stall{}, false, stallError(keyStallAttempts, fields[keyStallAttempts], "a decimal count from 1 to 2147483647", nil)
	}
	s.Attempts = int(attempts)
	if s.Member, err = text(keyStallMember, fmt.Sprintf("query-escaped printable ASCII of at most %d bytes", MaxMemberLen), MaxMemberLen); err != nil {
		return Stall{}, false, err
	}
	if s.Reason, err = text(keyStallReason, fmt.Sprintf("query-escaped printable ASCII of at most %d bytes", MaxReasonLen), MaxReasonLen); err != nil {
		return Stall{}, false, err
	}
	return s, true, nil
}

// markOnly reports whether fields hold none of the stall provenance's keys
// but sf: the stall mark.
func markOnly(fields map[string]string) bool {
	for _, k := range [...]string{keyStallLast, keyStallSince, keyStallAttempts, keyStallMember, keyStallReason} {
		if _, ok := fields[k]; ok {
			return false
		}
	}
	return true
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
