package commitmeta

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Kind names one of the three reports a commit's metadata may carry. The
// zero Kind names none.
type Kind uint8

const (
	KindStall      Kind = iota + 1 // the stall provenance (Stall): sf, sl, ss, sa, sm, sr
	KindLoss                       // the loss report (Loss): lf, ll, ln, ls, lc
	KindDeadLetter                 // the dead-letter report (DeadLetter): xf, xl, xn, xs, xr
)

// String is the report's name as its errors give it: "stall", "loss" or
// "dead-letter".
func (k Kind) String() string {
	switch k {
	case KindStall:
		return "stall"
	case KindLoss:
		return "loss"
	case KindDeadLetter:
		return "dead-letter"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// reportKeys are the keys of the fields every report has, in the order
// they are written: first, last, count, since, then the report's own
// fields (the stall's sa and sm), then reason. The stall has no count.
type reportKeys struct{ first, last, count, since, reason string }

// keys returns k's keys; k is one of the three kinds.
func (k Kind) keys() reportKeys {
	switch k {
	case KindStall:
		return reportKeys{keyStallFirst, keyStallLast, "", keyStallSince, keyStallReason}
	case KindLoss:
		return reportKeys{keyLossFirst, keyLossLast, keyLossCount, keyLossSince, keyLossCause}
	}
	return reportKeys{keyDeadFirst, keyDeadLast, keyDeadCount, keyDeadSince, keyDeadError}
}

// MaxReasonLen bounds the Reason of a stall and of a dead letter, in bytes
// before escaping: room for an error class, not a whole error chain.
const MaxReasonLen = 120

// Report is what the stall provenance, the loss report and the dead-letter
// report have in common, and the type they embed: which offsets, since
// when, and why. Each report adds only what is its own: a Stall the
// attempts, the member and its mark, a Loss and a DeadLetter how many
// offsets within First..Last the event touched. What they share is here
// once, and so is its wire form (appendHead, readHead, appendReason,
// readReason): the keys differ by Kind, the bytes are those each report
// always had.
//
// They stay three types on Report, not one Report with a Kind and every
// field, because one type would hold values that no commit can carry and
// that would not read back as themselves:
//
//   - the stall has no count on the wire, and only the stall has attempts,
//     a member and a mark (sf= alone, the one report a commit may cut to
//     its first field, as it decides whether the partition is healthy). A
//     stall with a count, or a loss with a member or a mark, would be
//     written without them;
//   - a loss and a dead letter have the same fields, but not the same
//     reason or merge: a loss's Reason is one of three causes, and an
//     error class in it is written as "unknown"; MergeLoss keeps the cause
//     of the earliest event, MergeDeadLetter the error of the latest. As
//     one type, a dead-letter report passed where a Commit or the engine
//     wants its loss would compile, and be written as a loss of cause
//     unknown.
//
// A Report is a value, safe for concurrent use.
type Report struct {
	// First and Last bound the offsets the report is about, inclusive:
	// 0 <= First <= Last. A stall read from its mark (Stall.MarkOnly)
	// knows First only, and Last is 0.
	First, Last int64

	// Since is when it began: a stall's first nack, a loss's or a dead
	// letter's earliest event merged. It is written in Unix milliseconds,
	// >= 0, and read back in UTC.
	Since time.Time

	// Reason is why. For a stall and a dead letter it is an error class,
	// printable ASCII of at most MaxReasonLen bytes (the writer makes it
	// so, see Stall.Fields); for a loss it is its cause: CauseRetention,
	// CauseTruncation or CauseUnknown, and any other is written as
	// CauseUnknown.
	Reason string
}

// appendHead appends r's first, last, count (when k has one) and since
// fields to b: "sf=1 sl=2 ss=3", "lf=1 ll=2 ln=1 ls=3".
func (r Report) appendHead(b []byte, k Kind, count int64) []byte {
	keys := k.keys()
	b = append(b, keys.first+"="...)
	b = strconv.AppendInt(b, r.First, 10)
	b = append(b, " "+keys.last+"="...)
	b = strconv.AppendInt(b, r.Last, 10)
	if keys.count != "" {
		b = append(b, " "+keys.count+"="...)
		b = strconv.AppendInt(b, count, 10)
	}
	b = append(b, " "+keys.since+"="...)
	return strconv.AppendInt(b, r.Since.UnixMilli(), 10)
}

// headLen returns len(r.appendHead(nil, k, count)) without building it.
func (r Report) headLen(k Kind, count int64) int {
	keys := k.keys()
	n := len(keys.first+"=") + decimalLen(r.First) +
		len(" "+keys.last+"=") + decimalLen(r.Last) +
		len(" "+keys.since+"=") + decimalLen(r.Since.UnixMilli())
	if keys.count != "" {
		n += len(" "+keys.count+"=") + decimalLen(count)
	}
	return n
}

// appendReason appends " <reason>=<Reason>" to b as k writes it: a loss's
// cause as its constant (CauseUnknown for any other), an error class made
// printable, cut to MaxReasonLen bytes and query-escaped (appendText).
func (r Report) appendReason(b []byte, k Kind) []byte {
	b = append(b, " "+k.keys().reason+"="...)
	if k == KindLoss {
		cause, _ := knownCause(r.Reason)
		return append(b, cause...)
	}
	return appendText(b, r.Reason, MaxReasonLen)
}

// reasonLen returns len(r.appendReason(nil, k)) without building it.
func (r Report) reasonLen(k Kind) int {
	n := len(" " + k.keys().reason + "=")
	if k == KindLoss {
		cause, _ := knownCause(r.Reason)
		return n + len(cause)
	}
	return n + textLen(r.Reason, MaxReasonLen)
}

// Forms of the numbers of a report, as its errors name them.
const (
	offsetForm = "a decimal offset from 0 to 9223372036854775807, no sign or leading zeros"
	sinceForm  = "Unix milliseconds from 0 to 9223372036854775807, no sign or leading zeros"
)

// readNumber reads the field key of a report of kind k from fields: a
// decimal from 0 to limit in the format's one form. A field missing or
// malformed is a *ReportError that says expected. It refuses a number at
// its twentieth digit.
func readNumber(fields map[string]string, k Kind, key, expected string, limit int64) (int64, error) {
	v, ok := fields[key]
	if !ok {
		return 0, reportError(k, key, "", expected, ErrMissingField)
	}
	n, i, serr := scanNumber(v, 0, len(v), limit, key)
	if serr != nil {
		return 0, reportError(k, key, v, expected, serr.Err)
	}
	if i != len(v) {
		return 0, reportError(k, key, v, expected, nil)
	}
	return n, nil
}

// readHead reads back from the fields DecodeFields returns what appendHead
// writes for a report of kind k: First, Last, the count when k has one,
// and Since, in that order, the first field missing or malformed a
// *ReportError. The fields are untrusted: it never panics, does work
// independent of the values' lengths, and what it returns keeps the bounds
// on Report's fields and 1 <= count <= Last-First+1 (count is 0 for a
// kind without one). Since is in UTC.
func readHead(fields map[string]string, k Kind) (r Report, count int64, err error) {
	keys := k.keys()
	if r.First, err = readNumber(fields, k, keys.first, offsetForm, math.MaxInt64); err != nil {
		return Report{}, 0, err
	}
	if r.Last, err = readNumber(fields, k, keys.last, offsetForm+" and at least "+keys.first, math.MaxInt64); err != nil {
		return Report{}, 0, err
	}
	if r.Last < r.First {
		return Report{}, 0, reportError(k, keys.last, fields[keys.last], fmt.Sprintf("an offset at least %s (%d)", keys.first, r.First), nil)
	}
	if keys.count != "" {
		// Last-First+1 overflows only for 0..MaxInt64, where every int64
		// >= 1 is a valid count.
		form := "a decimal count from 1 to 9223372036854775807, no sign or leading zeros"
		if r.Last-r.First < math.MaxInt64 {
			form = fmt.Sprintf("a decimal count from 1 to %s-%s+1 (%d), no sign or leading zeros", keys.last, keys.first, r.Last-r.First+1)
		}
		if count, err = readNumber(fields, k, keys.count, form, math.MaxInt64); err != nil {
			return Report{}, 0, err
		}
		// Count-1 <= Last-First is Count <= Last-First+1 without the
		// overflow.
		if count < 1 || count-1 > r.Last-r.First {
			return Report{}, 0, reportError(k, keys.count, fields[keys.count], form, nil)
		}
	}
	ms, err := readNumber(fields, k, keys.since, sinceForm, math.MaxInt64)
	if err != nil {
		return Report{}, 0, err
	}
	r.Since = time.UnixMilli(ms).UTC()
	return r, count, nil
}

// readReason reads back from fields what appendReason writes for a report
// of kind k: a loss's cause, one of the three constants (returned as the
// constant, so that a Loss does not hold on to the metadata), or an error
// class, refused when longer than 3*MaxReasonLen before it is read. A
// field missing or malformed is a *ReportError.
func readReason(fields map[string]string, k Kind) (string, error) {
	key := k.keys().reason
	expected := fmt.Sprintf("query-escaped printable ASCII of at most %d bytes", MaxReasonLen)
	if k == KindLoss {
		expected = CauseRetention + ", " + CauseTruncation + " or " + CauseUnknown
	}
	v, ok := fields[key]
	if !ok {
		return "", reportError(k, key, "", expected, ErrMissingField)
	}
	var reason string
	if k == KindLoss {
		reason, ok = knownCause(v)
	} else {
		reason, ok = unescapeText(v, MaxReasonLen)
	}
	if !ok {
		return "", reportError(k, key, v, expected, nil)
	}
	return reason, nil
}

// mergeCounted returns the report of two events, a with count ac and b
// with count bc, neither count 0: the lower First, the higher Last, the
// sum of the counts (saturating at math.MaxInt64, capped at Last-First+1:
// each offset is touched once), and the earlier Since, a zero one counting
// as unknown. bKept reports whether that Since is b's. The Reason is a's;
// each report chooses its own (MergeLoss, MergeDeadLetter).
func mergeCounted(a Report, ac int64, b Report, bc int64) (m Report, count int64, bKept bool) {
	m = Report{First: min(a.First, b.First), Last: max(a.Last, b.Last), Since: a.Since, Reason: a.Reason}
	if a.Since.IsZero() || !b.Since.IsZero() && b.Since.Before(a.Since) {
		m.Since, bKept = b.Since, true
	}
	count = ac + bc
	if ac > 0 && bc > math.MaxInt64-ac {
		count = math.MaxInt64
	}
	if w := m.Last - m.First; w >= 0 && w < math.MaxInt64 && count > w+1 {
		count = w + 1
	}
	return m, count, bKept
}

// ReportError is a report that is present (its first key, sf, lf or xf, is
// there) but malformed: a field missing, not a number, out of range, or
// text that does not read back to what the report's Fields writes (for a
// loss, a cause that is none of the three). StallFromFields,
// LossFromFields and DeadLetterFromFields return it, and DecodeCommit
// keeps it in StallErr, LossErr or DeadLetterErr.
//
// A ReportError is a value once returned, safe for concurrent use.
type ReportError struct {
	Kind     Kind   // the report: KindStall, KindLoss or KindDeadLetter
	Key      string // the field's key, one of Kind's
	Value    string // its value as found, clipped to 40 bytes; "" when missing
	Expected string // what a valid value is
	Err      error  // ErrMissingField, ErrOverflow, or nil
}

func (e *ReportError) Error() string {
	return fieldErrorText(e.Kind.String(), e.Key, e.Value, e.Expected, e.Err)
}

// Unwrap returns the detail, so errors.Is(err, ErrMissingField) works.
func (e *ReportError) Unwrap() error { return e.Err }

// reportError is the *ReportError of the field key of a report of kind k,
// its value clipped.
func reportError(k Kind, key, value, expected string, detail error) *ReportError {
	return &ReportError{Kind: k, Key: key, Value: clipValue(value), Expected: expected, Err: detail}
}
