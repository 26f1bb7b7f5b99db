package commitmeta

import "strconv"

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
