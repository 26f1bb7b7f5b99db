package commitmeta

import (
	"math"
	"strings"
)

// keyLastEpoch is l=, the leader epoch of the last record of the last
// delivered range. It is distinct from the loss report's keys (lf, ll, ...).
const keyLastEpoch = "l"

// Decoded is a commit's metadata as DecodeCommit reads it back: the header,
// the delivered ranges with the leader epoch of their last record, and the
// reports. Each part that the metadata carries is either read or left out
// with its error, so that a malformed part hides none of the others.
//
// A Decoded is a value, safe for concurrent use by readers; it shares
// nothing with the string it was read from but substrings.
type Decoded struct {
	// Meta is the header and the ranges, with every guarantee of a Meta
	// that Decode returns. Delivered is nil when RangesErr is set.
	Meta

	// LastEpoch is l=: the leader epoch of the record at the last range's
	// To-1, >= -1. A record in or below the ranges with a higher leader
	// epoch was written after the metadata, by a leader that rewrote the
	// log they describe. It is -1 when Delivered is empty.
	LastEpoch int32

	// Stall is the stall provenance, or nil: none, or malformed (StallErr).
	Stall *Stall

	// Loss is the loss report, or nil: none, or malformed (LossErr).
	Loss *Loss

	// Attempts is a=: runs of records handed out without being delivered,
	// with the guarantees stated on Commit.Attempts (each
	// Base <= From < To <= math.MaxInt64, N from 1 to math.MaxInt32,
	// sorted, each From at least the previous To). Nil when there is no
	// a=, or when it is malformed (AttemptsErr).
	Attempts []Attempts

	// DeadLetter is the dead-letter report, or nil: none, or malformed
	// (DeadLetterErr).
	DeadLetter *DeadLetter

	// Why a part the metadata carries was left out; each is nil when its
	// part was read or is absent.
	RangesErr     error // a *LastEpochError: d= has ranges, l= is missing or malformed
	StallErr      error // a *ReportError of KindStall, as StallFromFields returns it
	LossErr       error // a *ReportError of KindLoss, as LossFromFields returns it
	AttemptsErr   error // an *AttemptsError: a= is malformed
	DeadLetterErr error // a *ReportError of KindDeadLetter, as DeadLetterFromFields returns it
}

// LastEpochError is metadata whose delivered ranges come without a valid
// l=: it is missing, or not -1 or a decimal int32 >= 0 in the format's one
// form (no sign, no leading zeros). Ranges whose epoch is unknown cannot be
// checked against a rewritten log, so DecodeCommit leaves them out.
//
// A LastEpochError is a value once returned, safe for concurrent use.
type LastEpochError struct {
	Value string // l's value as found, clipped to 40 bytes; "" when missing
	Err   error  // ErrMissingField, ErrOverflow, or nil
}

const lastEpochExpected = "-1 or a decimal int32 from 0 to 2147483647, no sign or leading zeros, with the delivered ranges"

func (e *LastEpochError) Error() string {
	return fieldErrorText("last epoch", keyLastEpoch, e.Value, lastEpochExpected, e.Err)
}

// Unwrap returns the detail, so errors.Is(err, ErrMissingField) works.
func (e *LastEpochError) Unwrap() error { return e.Err }

// DecodeCommit reads back what EncodeCommit wrote: for a string s =
// EncodeCommit(c, maxBytes) that is not "", it returns c's Base, Epoch and
// the ranges kept, the l= that goes with them, the runs of attempts kept,
// and c's Stall, Loss and DeadLetter if they were written.
//
// It fails exactly where DecodeFields fails, with the same error and a zero
// Decoded. Beyond that, the fields DecodeFields returns as unknown that
// DecodeCommit knows are read each on its own (other unknown fields are
// ignored):
//
//   - l= is required when d= has ranges, and otherwise ignored, whatever its
//     value. When it is missing or malformed, the ranges are left out
//     (Delivered nil) and RangesErr says why: the reader skips nothing.
//   - The stall provenance, the loss report and the dead-letter report are
//     read as StallFromFields, LossFromFields and DeadLetterFromFields read
//     them; a malformed one is left out, its error in StallErr, LossErr or
//     DeadLetterErr.
//   - a= is read relative to the base; when any run in it is malformed or
//     overflows, every run is left out (Attempts nil) and AttemptsErr says
//     why.
//
// DecodeCommit is written for hostile input, as Decode is: it never panics,
// and what it returns keeps every guarantee stated on Decoded's fields.
func DecodeCommit(s string) (Decoded, error) {
	m, fields, err := decode(s)
	if err != nil {
		return Decoded{}, err
	}
	d := Decoded{Meta: m, LastEpoch: -1}
	if len(m.Delivered) > 0 {
		last, err := parseLastEpoch(fields)
		if err != nil {
			d.Delivered, d.RangesErr = nil, err
		} else {
			d.LastEpoch = last
		}
	}
	if st, ok, err := StallFromFields(fields); ok {
		d.Stall = &st
	} else {
		d.StallErr = err
	}
	if l, ok, err := LossFromFields(fields); ok {
		d.Loss = &l
	} else {
		d.LossErr = err
	}
	if v, ok := fields[keyAttempts]; ok {
		d.Attempts, d.AttemptsErr = parseAttempts(v, m.Base)
	}
	if dl, ok, err := DeadLetterFromFields(fields); ok {
		d.DeadLetter = &dl
	} else {
		d.DeadLetterErr = err
	}
	return d, nil
}

// parseLastEpoch reads l= from fields.
func parseLastEpoch(fields map[string]string) (int32, error) {
	v, ok := fields[keyLastEpoch]
	switch {
	case !ok:
		return 0, &LastEpochError{Err: ErrMissingField}
	case v == "-1":
		return -1, nil
	case strings.HasPrefix(v, "-"):
		return 0, &LastEpochError{Value: clipValue(v)}
	}
	n, i, serr := scanNumber(v, 0, len(v), math.MaxInt32, keyLastEpoch)
	if serr != nil {
		return 0, &LastEpochError{Value: clipValue(v), Err: serr.Err}
	}
	if i != len(v) {
		return 0, &LastEpochError{Value: clipValue(v)}
	}
	return int32(n), nil
}
