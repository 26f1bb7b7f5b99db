package commitmeta

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// keyAttempts is a=, the delivery attempts of records at and above the base.
const keyAttempts = "a"

// Attempts says that the records [From, To) were handed out N times without
// being delivered: what the next owner of the partition needs to keep
// counting towards the dead-letter limit instead of starting again at zero.
// Unlike a delivered range, a run of attempts may start at the base (the
// batch at the watermark is the one most likely to fail), and runs may
// touch, as neighbouring batches may have failed a different number of
// times.
//
// An Attempts is a value, safe for concurrent use.
type Attempts struct {
	From, To int64 // Base <= From < To
	N        int32 // 1..math.MaxInt32
}

// AttemptsError is an a= field that is malformed: a number that is missing,
// not in the format's one form, zero where at least 1 is required, or that
// overflows (N past math.MaxInt32, an offset past math.MaxInt64), or a
// separator out of place. DecodeCommit leaves every run out then: a count
// the reader cannot trust for one run it does not trust for the others.
//
// An AttemptsError is a value once returned, safe for concurrent use.
type AttemptsError struct {
	Offset   int    // byte offset within a's value where reading stopped
	Value    string // a's value as found, clipped to 40 bytes
	Expected string // what a valid value has at Offset
	Err      error  // ErrOverflow, or nil
}

func (e *AttemptsError) Error() string {
	msg := fmt.Sprintf("commitmeta: attempts field %s=%q: at byte %d want %s", keyAttempts, e.Value, e.Offset, e.Expected)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the detail, so errors.Is(err, ErrOverflow) works.
func (e *AttemptsError) Unwrap() error { return e.Err }

func attemptsError(v string, at int, expected string, detail error) *AttemptsError {
	return &AttemptsError{Offset: at, Value: clipValue(v), Expected: expected, Err: detail}
}

// parseAttempts reads the value of a= as runs above base. Gaps are >= 0,
// lengths >= 1 and counts 1 to math.MaxInt32, and each sum is checked
// against math.MaxInt64: that is what makes the result sorted, at or above
// base, non-overlapping and free of overflow.
//
// v is untrusted. parseAttempts never panics, does work linear in len(v),
// and allocates at most four times len(v): one Attempts (24 bytes) for
// every "0.1.1," (6 bytes) at most, and an error of bounded size.
func parseAttempts(v string, base int64) ([]Attempts, error) {
	fail := func(serr *SyntaxError) error {
		return attemptsError(v, serr.Offset, serr.Expected, serr.Err)
	}
	out := make([]Attempts, 0, strings.Count(v, ",")+1)
	prev := base // the previous To, or base before the first run
	for i := 0; ; {
		gapAt := i
		gap, j, serr := scanNumber(v, i, len(v), math.MaxInt64, "an a gap")
		if serr != nil {
			return nil, fail(serr)
		}
		if j == len(v) || v[j] != '.' {
			return nil, attemptsError(v, j, "a decimal digit or '.' after an a gap", nil)
		}
		lenAt := j + 1
		n, j, serr := scanNumber(v, lenAt, len(v), math.MaxInt64, "an a length")
		if serr != nil {
			return nil, fail(serr)
		}
		if n == 0 {
			return nil, attemptsError(v, lenAt, "an a length >= 1", nil)
		}
		if j == len(v) || v[j] != '.' {
			return nil, attemptsError(v, j, "a decimal digit or '.' after an a length", nil)
		}
		countAt := j + 1
		count, j, serr := scanNumber(v, countAt, len(v), math.MaxInt32, "an a count")
		if serr != nil {
			return nil, fail(serr)
		}
		if count == 0 {
			return nil, attemptsError(v, countAt, "an a count from 1 to 2147483647", nil)
		}
		if gap > math.MaxInt64-prev {
			return nil, attemptsError(v, gapAt, "an a gap that keeps From at most 9223372036854775807", ErrOverflow)
		}
		from := prev + gap
		if n > math.MaxInt64-from {
			return nil, attemptsError(v, lenAt, "an a length that keeps To at most 9223372036854775807", ErrOverflow)
		}
		prev = from + n
		out = append(out, Attempts{From: from, To: prev, N: int32(count)})
		if j == len(v) {
			return out, nil
		}
		if v[j] != ',' {
			return nil, attemptsError(v, j, "a decimal digit, ',' or the end of a", nil)
		}
		i = j + 1
	}
}

// checkAttempts returns the first invariant of Commit.Attempts that as
// breaks above base, or nil.
func checkAttempts(base int64, as []Attempts) error {
	prev := base // runs must start at or above this
	for i, a := range as {
		switch {
		case a.To <= a.From:
			return fmt.Errorf("attempts %d [%d,%d) is empty", i, a.From, a.To)
		case i == 0 && a.From < prev:
			return fmt.Errorf("attempts 0 [%d,%d) is below base %d", a.From, a.To, prev)
		case a.From < prev:
			return fmt.Errorf("attempts %d [%d,%d) overlaps or precedes the run before, which ends at %d", i, a.From, a.To, prev)
		case a.N < 1:
			return fmt.Errorf("attempts %d [%d,%d) has N %d, want 1 to %d", i, a.From, a.To, a.N, math.MaxInt32)
		}
		prev = a.To
	}
	return nil
}

// attemptsCost returns the bytes a adds to a= after a run ending at prev
// (or after base, for the first): " a=" or ",", then gap.len.n.
func attemptsCost(first bool, prev int64, a Attempts) int {
	cost := len(",")
	if first {
		cost = len(" " + keyAttempts + "=")
	}
	return cost + decimalLen(a.From-prev) + len(".") + decimalLen(a.To-a.From) + len(".") + decimalLen(int64(a.N))
}

// planAttempts returns how many of as (runs at or above base), nearest the
// base first, fit in room bytes, and the bytes they take.
func planAttempts(as []Attempts, base int64, room int) (kept, size int) {
	prev := base
	for i, a := range as {
		cost := attemptsCost(i == 0, prev, a)
		if cost > room-size {
			break
		}
		size += cost
		kept++
		prev = a.To
	}
	return kept, size
}

// appendAttempts appends " a=" with as, which lie at or above base; nothing
// when there are none.
func appendAttempts(b []byte, base int64, as []Attempts) []byte {
	prev := base
	for i, a := range as {
		if i == 0 {
			b = append(b, " "+keyAttempts+"="...)
		} else {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, a.From-prev, 10)
		b = append(b, '.')
		b = strconv.AppendInt(b, a.To-a.From, 10)
		b = append(b, '.')
		b = strconv.AppendInt(b, int64(a.N), 10)
		prev = a.To
	}
	return b
}
