package commitmeta

import (
	"math"
	"strings"
)

// MaxDecodeBytes is the longest metadata Decode reads; longer input is a
// *SyntaxError wrapping ErrTooLong. It is far above what a broker stores
// (offset.metadata.max.bytes, 4096 by default) and bounds the work and memory
// a hostile string can cost: at most four times its length, for the ranges.
const MaxDecodeBytes = 1 << 20

// MaxUnknownFields is how many fields other than o, e and d Decode accepts;
// more is a *SyntaxError wrapping ErrTooManyFields. Later versions add
// fields (the input writes at most eighteen: l, the six of the stall
// provenance, the five of the loss report, a and the five of the
// dead-letter report); the cap keeps a hostile
// string of distinct keys from costing a map of a hundred thousand entries.
const MaxUnknownFields = 32

// Decode parses one partition's commit metadata.
//
// It returns ErrNotOurs when s does not start with "wm", a decimal version and
// a space (another client's metadata, such as kgo's member ID, or ""),
// an error wrapping ErrVersion for "wm<N> " with N != 1, and a *SyntaxError
// for anything else malformed, including input longer than MaxDecodeBytes.
// Unknown fields are checked for form and ignored; DecodeFields returns them.
//
// Decode never panics, and a Meta it returns without error satisfies every
// invariant in the package doc. On error the Meta is zero.
func Decode(s string) (Meta, error) {
	m, _, err := decode(s)
	return m, err
}

// DecodeFields is Decode that also returns the fields whose keys it does not
// know (everything but o, e and d), keyed by key, or nil when there are none.
// It is how a later field (the stall provenance) is read without a new
// version. On error both results are zero.
func DecodeFields(s string) (Meta, map[string]string, error) {
	return decode(s)
}

func decode(s string) (Meta, map[string]string, error) {
	start, err := checkVersion(s)
	if err != nil {
		return Meta{}, nil, err
	}
	if len(s) > MaxDecodeBytes {
		return Meta{}, nil, syntaxError(s, MaxDecodeBytes, "at most 1 MiB of metadata", ErrTooLong)
	}
	for i := start; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return Meta{}, nil, syntaxError(s, i, "printable ASCII (0x20-0x7E)", nil)
		}
	}

	// One pass splits the fields, so that o may follow d; the known values
	// are parsed after it.
	var o, e, d field
	var haveO, haveE, haveD bool
	var unknown map[string]string
	sc := fieldScanner{s: s, i: start}
	for {
		f, ok, serr := sc.next()
		if serr != nil {
			return Meta{}, nil, serr
		}
		if !ok {
			break
		}
		var dup bool
		switch f.key {
		case "o":
			dup, o, haveO = haveO, f, true
		case "e":
			dup, e, haveE = haveE, f, true
		case "d":
			dup, d, haveD = haveD, f, true
		default:
			if unknown == nil {
				unknown = make(map[string]string)
			}
			if _, dup = unknown[f.key]; !dup && len(unknown) == MaxUnknownFields {
				return Meta{}, nil, syntaxError(s, f.at, "at most 32 fields besides o, e and d", ErrTooManyFields)
			}
			unknown[f.key] = f.value
		}
		if dup {
			return Meta{}, nil, syntaxError(s, f.at, "each key at most once", ErrDuplicateField)
		}
	}
	if !haveO {
		return Meta{}, nil, syntaxError(s, len(s), "an o=<base> field", ErrMissingField)
	}
	if !haveE {
		return Meta{}, nil, syntaxError(s, len(s), "an e=<epoch> field", ErrMissingField)
	}

	var m Meta
	var serr *SyntaxError
	if m.Base, serr = parseBase(s, o); serr != nil {
		return Meta{}, nil, serr
	}
	if m.Epoch, serr = parseEpoch(s, e); serr != nil {
		return Meta{}, nil, serr
	}
	if haveD {
		if m.Delivered, serr = parseRanges(s, d, m.Base); serr != nil {
			return Meta{}, nil, serr
		}
	}
	return m, unknown, nil
}

// checkVersion returns the offset of the first field when s starts with
// Prefix, and ErrNotOurs or a wrapped ErrVersion otherwise.
func checkVersion(s string) (int, error) {
	if !strings.HasPrefix(s, "wm") {
		return 0, ErrNotOurs
	}
	i := 2
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i == 2 || i == len(s) || s[i] != ' ' {
		return 0, ErrNotOurs
	}
	if s[2:i] != "1" {
		return 0, versionError(s[2:i])
	}
	return i + 1, nil
}

func parseBase(s string, f field) (int64, *SyntaxError) {
	end := f.valueAt + len(f.value)
	v, i, err := scanNumber(s, f.valueAt, end, math.MaxInt64, "the base o")
	if err != nil {
		return 0, err
	}
	if i != end {
		return 0, syntaxError(s, i, "a decimal digit or the end of o", nil)
	}
	return v, nil
}

func parseEpoch(s string, f field) (int32, *SyntaxError) {
	if f.value == "-1" {
		return -1, nil
	}
	if strings.HasPrefix(f.value, "-") {
		return 0, syntaxError(s, f.valueAt, "an epoch: -1 or a decimal int32 >= 0", nil)
	}
	end := f.valueAt + len(f.value)
	v, i, err := scanNumber(s, f.valueAt, end, math.MaxInt32, "the epoch e")
	if err != nil {
		return 0, err
	}
	if i != end {
		return 0, syntaxError(s, i, "a decimal digit or the end of e", nil)
	}
	return int32(v), nil
}

// parseRanges turns the d value in f into absolute ranges above base. Each
// gap and length is >= 1 and each sum is checked against math.MaxInt64, which
// is what makes the result sorted, strictly above base, non-overlapping,
// non-adjacent and free of overflow.
func parseRanges(s string, f field, base int64) ([]Range, *SyntaxError) {
	if f.value == "" {
		return nil, nil
	}
	// Bounded by the input: at most one range per 4 bytes ("1.1,").
	out := make([]Range, 0, strings.Count(f.value, ",")+1)
	i, end := f.valueAt, f.valueAt+len(f.value)
	prev := base // the previous To, or base before the first range
	for {
		gapAt := i
		gap, j, err := scanPositive(s, i, end, "a d gap")
		if err != nil {
			return nil, err
		}
		if j == end || s[j] != '.' {
			return nil, syntaxError(s, j, "a decimal digit or '.' after a d gap", nil)
		}
		lenAt := j + 1
		n, j, err := scanPositive(s, lenAt, end, "a d length")
		if err != nil {
			return nil, err
		}
		if gap > math.MaxInt64-prev {
			return nil, syntaxError(s, gapAt, "a d gap that keeps From at most 9223372036854775807", ErrOverflow)
		}
		from := prev + gap
		if n > math.MaxInt64-from {
			return nil, syntaxError(s, lenAt, "a d length that keeps To at most 9223372036854775807", ErrOverflow)
		}
		prev = from + n
		out = append(out, Range{From: from, To: prev})
		if j == end {
			return out, nil
		}
		if s[j] != ',' {
			return nil, syntaxError(s, j, "a decimal digit, ',' or the end of d", nil)
		}
		i = j + 1
	}
}

// scanPositive is scanNumber for gaps and lengths, which are at least 1.
func scanPositive(s string, i, end int, what string) (int64, int, *SyntaxError) {
	v, j, err := scanNumber(s, i, end, math.MaxInt64, what)
	if err == nil && v == 0 {
		return 0, i, syntaxError(s, i, what+" >= 1", nil)
	}
	return v, j, err
}

// scanNumber reads the decimal number at s[i:end], stopping at the first byte
// that is not a digit, and returns it with the offset after it. It rejects an
// empty number, a leading zero and a value above limit (what names the number
// in the message).
func scanNumber(s string, i, end int, limit int64, what string) (int64, int, *SyntaxError) {
	start := i
	if i >= end || !isDigit(s[i]) {
		return 0, i, syntaxError(s, i, "a decimal digit in "+what, nil)
	}
	if s[i] == '0' && i+1 < end && isDigit(s[i+1]) {
		return 0, i, syntaxError(s, i, what+" without leading zeros", nil)
	}
	var v int64
	for ; i < end && isDigit(s[i]); i++ {
		d := int64(s[i] - '0')
		if v > (limit-d)/10 {
			return 0, i, syntaxError(s, start, what+" that fits its type", ErrOverflow)
		}
		v = v*10 + d
	}
	return v, i, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
