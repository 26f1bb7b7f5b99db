package commitmeta

import (
	"errors"
	"fmt"
	"strconv"
)

// Errors Decode returns, for callers to branch on with errors.Is. Whatever the
// error, the consumer resumes at the committed offset and redelivers
// everything above it: nothing is skipped on metadata it cannot read.
var (
	// ErrNotOurs: the metadata does not start with "wm", a version and a
	// space. It is empty or another client's (kgo writes its member ID).
	ErrNotOurs = errors.New("commitmeta: not watermark metadata")

	// ErrVersion: the metadata is "wm<N> ..." with a version N other than 1,
	// written by another release of the input (most likely a newer one).
	ErrVersion = errors.New("commitmeta: unsupported metadata version")
)

// Details a *SyntaxError may carry in its Err, for errors.Is.
var (
	// ErrTooLong: the metadata is longer than MaxDecodeBytes.
	ErrTooLong = errors.New("metadata too long")

	// ErrOverflow: a number, or an offset a gap or length leads to, does
	// not fit its type (int64; int32 for e).
	ErrOverflow = errors.New("number overflows")

	// ErrDuplicateField: a key appears twice.
	ErrDuplicateField = errors.New("duplicate field")

	// ErrMissingField: a required field (o or e) is absent.
	ErrMissingField = errors.New("missing field")

	// ErrTooManyFields: more than MaxUnknownFields fields besides o, e, d.
	ErrTooManyFields = errors.New("too many fields")
)

// SyntaxError describes metadata that carries our magic and version but does
// not follow the format.
//
// A SyntaxError is a value once returned, safe for concurrent use.
type SyntaxError struct {
	Offset   int    // byte offset in the metadata where decoding stopped; len(s) for a missing field
	Expected string // what the decoder expected at Offset
	Got      string // what it found there: a quoted byte, or "end of input"
	Err      error  // ErrTooLong, ErrOverflow, ErrDuplicateField, ErrMissingField, ErrTooManyFields, or nil
}

func (e *SyntaxError) Error() string {
	msg := fmt.Sprintf("commitmeta: malformed metadata at byte %d: want %s, got %s", e.Offset, e.Expected, e.Got)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the detail, so errors.Is(err, ErrOverflow) works.
func (e *SyntaxError) Unwrap() error { return e.Err }

// syntaxError builds the error for s at byte i.
func syntaxError(s string, i int, expected string, detail error) *SyntaxError {
	got := "end of input"
	if i < len(s) {
		got = strconv.QuoteRune(rune(s[i]))
		if s[i] >= 0x80 {
			// A byte, not a rune: show it as one.
			got = fmt.Sprintf("byte 0x%02x", s[i])
		}
	}
	return &SyntaxError{Offset: i, Expected: expected, Got: got, Err: detail}
}

// versionError wraps ErrVersion with the version found, clipped so a hostile
// string cannot make the message large.
func versionError(v string) error {
	const clip = 20
	if len(v) > clip {
		v = v[:clip] + "..."
	}
	return fmt.Errorf("%w: wm%s", ErrVersion, v)
}

// fieldErrorText is the message of a *ReportError or *LastEpochError: kind
// names the report ("stall", "loss", "dead-letter") or the field ("last
// epoch"), the rest are the error's fields. A missing field has no value to
// show.
func fieldErrorText(kind, key, value, expected string, detail error) string {
	if errors.Is(detail, ErrMissingField) {
		return fmt.Sprintf("commitmeta: %s field %s: want %s: %v", kind, key, expected, detail)
	}
	msg := fmt.Sprintf("commitmeta: %s field %s=%q: want %s", kind, key, value, expected)
	if detail != nil {
		msg += ": " + detail.Error()
	}
	return msg
}

// clipValue cuts a field's value found in untrusted metadata to 40 bytes, so
// that a hostile value cannot make an error message large.
func clipValue(v string) string {
	const clip = 40
	if len(v) > clip {
		v = v[:clip] + "..."
	}
	return v
}
