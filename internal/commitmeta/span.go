package commitmeta

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// The loss report and the dead-letter report are both spans: how many
// offsets within First..Last an event touched, since when. spanKeys names
// a report's four span fields; the reports differ only in their keys and
// in the one field that follows (the loss's cause, the dead letter's error
// class).
type spanKeys struct{ first, last, count, since string }

var (
	lossKeys = spanKeys{keyLossFirst, keyLossLast, keyLossCount, keyLossSince}
	deadKeys = spanKeys{keyDeadFirst, keyDeadLast, keyDeadCount, keyDeadSince}
)

// span is the part of a report that spanKeys name. Bounds, as a report's:
// 0 <= first <= last, 1 <= count <= last-first+1, since >= 0 ms.
type span struct {
	first, last, count int64
	since              time.Time
}

// appendSpan appends "<first>=.. <last>=.. <count>=.. <since>=.." to b.
func appendSpan(b []byte, k spanKeys, s span) []byte {
	b = append(b, k.first+"="...)
	b = strconv.AppendInt(b, s.first, 10)
	b = append(b, " "+k.last+"="...)
	b = strconv.AppendInt(b, s.last, 10)
	b = append(b, " "+k.count+"="...)
	b = strconv.AppendInt(b, s.count, 10)
	b = append(b, " "+k.since+"="...)
	return strconv.AppendInt(b, s.since.UnixMilli(), 10)
}

// spanLen returns len(appendSpan(nil, k, s)) without building it.
func spanLen(k spanKeys, s span) int {
	return len(k.first+"=") + decimalLen(s.first) +
		len(" "+k.last+"=") + decimalLen(s.last) +
		len(" "+k.count+"=") + decimalLen(s.count) +
		len(" "+k.since+"=") + decimalLen(s.since.UnixMilli())
}

// readSpan reads a span back from the fields DecodeFields returns; a field
// missing or malformed is a *ReportError of kind. The fields are untrusted: it never panics, refuses a number at
// its twentieth digit, and a span it returns keeps the bounds above. Since
// is in UTC.
func readSpan(fields map[string]string, k spanKeys, kind Kind) (s span, err error) {
	bad := func(key, value, expected string, detail error) error {
		return reportError(kind, key, value, expected, detail)
	}
	num := func(key, expected string) (int64, error) {
		v, ok := fields[key]
		if !ok {
			return 0, bad(key, "", expected, ErrMissingField)
		}
		n, i, serr := scanNumber(v, 0, len(v), math.MaxInt64, key)
		if serr != nil {
			return 0, bad(key, v, expected, serr.Err)
		}
		if i != len(v) {
			return 0, bad(key, v, expected, nil)
		}
		return n, nil
	}
	const offset = "a decimal offset from 0 to 9223372036854775807, no sign or leading zeros"
	if s.first, err = num(k.first, offset); err != nil {
		return s, err
	}
	if s.last, err = num(k.last, offset+" and at least "+k.first); err != nil {
		return s, err
	}
	if s.last < s.first {
		return s, bad(k.last, fields[k.last], fmt.Sprintf("an offset at least %s (%d)", k.first, s.first), nil)
	}
	// Last-First+1 overflows only for 0..MaxInt64, where every int64 >= 1
	// is a valid count.
	count := "a decimal count from 1 to 9223372036854775807, no sign or leading zeros"
	if s.last-s.first < math.MaxInt64 {
		count = fmt.Sprintf("a decimal count from 1 to %s-%s+1 (%d), no sign or leading zeros", k.last, k.first, s.last-s.first+1)
	}
	if s.count, err = num(k.count, count); err != nil {
		return s, err
	}
	// Count-1 <= Last-First is Count <= Last-First+1 without the overflow.
	if s.count < 1 || s.count-1 > s.last-s.first {
		return s, bad(k.count, fields[k.count], count, nil)
	}
	ms, err := num(k.since, "Unix milliseconds from 0 to 9223372036854775807, no sign or leading zeros")
	if err != nil {
		return s, err
	}
	s.since = time.UnixMilli(ms).UTC()
	return s, nil
}

// mergeSpans returns the span of two events, neither empty: the lower
// first, the higher last, the sum of the counts (saturating at
// math.MaxInt64, capped at last-first+1: each offset is touched once), and
// the earlier since, a zero one counting as unknown. bKept reports
// whether that since is b's.
func mergeSpans(a, b span) (m span, bKept bool) {
	m = span{first: min(a.first, b.first), last: max(a.last, b.last), since: a.since}
	if a.since.IsZero() || !b.since.IsZero() && b.since.Before(a.since) {
		m.since, bKept = b.since, true
	}
	m.count = a.count + b.count
	if a.count > 0 && b.count > math.MaxInt64-a.count {
		m.count = math.MaxInt64
	}
	if w := m.last - m.first; w >= 0 && w < math.MaxInt64 && m.count > w+1 {
		m.count = w + 1
	}
	return m, bKept
}
