package commitmeta

import (
	"fmt"
	"math"
	"strconv"
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

// MaxMemberLen bounds Stall.Member, in bytes before escaping: a client ID
// and a host name of 40 bytes each and the "@" between them.
const MaxMemberLen = 81

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
// Its Report is the failed batch: First and Last its offsets, Since its
// first nack, Reason a short error class. What only a stall has is below.
//
// A Stall is a value, safe for concurrent use.
type Stall struct {
	Report

	Attempts int    // deliveries of the batch so far, 1 to math.MaxInt32
	Member   string // who saw it: client ID and host name, at most MaxMemberLen bytes

	// MarkOnly says that only First is known: the stall was read from
	// its mark, sf= alone, which a commit carries when the whole
	// provenance did not fit its metadata. The partition is stalled all
	// the same. Last, Since, Attempts, Reason and Member are then zero
	// (Since is the zero time.Time, not Unix 0), and the bounds above
	// hold for First only; Fields writes the mark.
	MarkOnly bool
}

// mark returns the stall mark of s: its First alone.
func (s Stall) mark() Stall { return Stall{Report: Report{First: s.First}, MarkOnly: true} }

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
	if s.MarkOnly {
		b = append(b, keyStallFirst+"="...)
		return strconv.AppendInt(b, s.First, 10)
	}
	b = s.appendHead(b, KindStall, 0)
	b = append(b, " "+keyStallAttempts+"="...)
	b = strconv.AppendInt(b, int64(s.Attempts), 10)
	b = append(b, " "+keyStallMember+"="...)
	b = appendText(b, s.Member, MaxMemberLen)
	return s.appendReason(b, KindStall)
}

// fieldsLen returns len(s.Fields()) without building it.
func (s Stall) fieldsLen() int {
	if s.MarkOnly {
		return len(keyStallFirst+"=") + decimalLen(s.First)
	}
	return s.headLen(KindStall, 0) +
		len(" "+keyStallAttempts+"=") + decimalLen(int64(s.Attempts)) +
		len(" "+keyStallMember+"=") + textLen(s.Member, MaxMemberLen) +
		s.reasonLen(KindStall)
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
	if markOnly(fields) {
		first, err := readNumber(fields, KindStall, keyStallFirst, offsetForm, math.MaxInt64)
		if err != nil {
			return Stall{}, false, err
		}
		return Stall{Report: Report{First: first}}.mark(), true, nil
	}
	if s.Report, _, err = readHead(fields, KindStall); err != nil {
		return Stall{}, false, err
	}
	const count = "a decimal count from 1 to 2147483647"
	attempts, err := readNumber(fields, KindStall, keyStallAttempts, count+", no sign or leading zeros", math.MaxInt32)
	if err != nil {
		return Stall{}, false, err
	}
	if attempts < 1 {
		return Stall{}, false, reportError(KindStall, keyStallAttempts, fields[keyStallAttempts], count, nil)
	}
	s.Attempts = int(attempts)
	expected := fmt.Sprintf("query-escaped printable ASCII of at most %d bytes", MaxMemberLen)
	v, ok := fields[keyStallMember]
	if !ok {
		return Stall{}, false, reportError(KindStall, keyStallMember, "", expected, ErrMissingField)
	}
	if s.Member, ok = unescapeText(v, MaxMemberLen); !ok {
		return Stall{}, false, reportError(KindStall, keyStallMember, v, expected, nil)
	}
	if s.Reason, err = readReason(fields, KindStall); err != nil {
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
