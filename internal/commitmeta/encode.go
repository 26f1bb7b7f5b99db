package commitmeta

import (
	"fmt"
	"strconv"
)

// Prefix starts every metadata string this version writes: magic "wm",
// version 1, and the space before the first field.
const Prefix = "wm1 "

// Encode returns m as metadata of at most maxBytes bytes, and how many ranges
// it cut.
//
// The header (Prefix, o= and e=) and extra are written first; when they do not
// fit together, Encode returns "" and cut = len(m.Delivered): commit without
// metadata (which skips nothing, like a header with no ranges). Otherwise it
// keeps the longest prefix of m.Delivered (the ranges nearest Base) that fits
// in what is left, and cut = len(m.Delivered) - kept. A cut range is only
// redelivered after a restart, never lost.
//
// extra is "" or further key=value fields separated by single spaces, written
// verbatim after the ranges; its keys must be [a-z]+, distinct, not o, e or
// d, and at most MaxUnknownFields of them. A writer of a whole commit (the
// reports and l=) uses EncodeCommit instead, which gives each part its room
// in the priority order and writes the l= that goes with the ranges kept.
//
// Encode panics (a driver bug) if m breaks the invariants of Meta (unsorted,
// overlapping, adjacent, empty, not above Base, negative Base, Epoch < -1) or
// extra is malformed.
func Encode(m Meta, extra string, maxBytes int) (s string, cut int) {
	kept, size := plan(m, extra, maxBytes)
	if kept < 0 {
		return "", len(m.Delivered)
	}
	return ownString(write(make([]byte, 0, size), m, kept, extra)), len(m.Delivered) - kept
}

// appendEncode is Encode that appends to dst and returns the extended slice;
// maxBytes bounds what it appends. When nothing fits it returns dst unchanged
// and cut = len(m.Delivered). It lets a caller that encodes every commit reuse
// one buffer.
func appendEncode(dst []byte, m Meta, extra string, maxBytes int) ([]byte, int) {
	kept, _ := plan(m, extra, maxBytes)
	if kept < 0 {
		return dst, len(m.Delivered)
	}
	return write(dst, m, kept, extra), len(m.Delivered) - kept
}

// plan checks m and extra (panicking on a driver bug) and returns how many
// ranges fit in maxBytes and the encoded size, or kept = -1 when the header
// and extra alone do not fit.
func plan(m Meta, extra string, maxBytes int) (kept, size int) {
	if err := m.check(); err != nil {
		panic("commitmeta: Encode of an invalid Meta: " + err.Error())
	}
	if err := checkExtra(extra); err != nil {
		panic("commitmeta: Encode with invalid extra fields: " + err.Error())
	}
	size = headerLen(m.Base, m.Epoch)
	if extra != "" {
		size += 1 + len(extra)
	}
	if size > maxBytes {
		return -1, 0
	}
	prev := m.Base
	for i, r := range m.Delivered {
		cost := rangeCost(i == 0, prev, r)
		if cost > maxBytes-size {
			break
		}
		size += cost
		kept++
		prev = r.To
	}
	return kept, size
}

// write appends the encoding of m with its first kept ranges. m must have
// passed plan.
func write(b []byte, m Meta, kept int, extra string) []byte {
	b = appendHeader(b, m.Base, m.Epoch)
	b = appendRanges(b, m.Base, m.Delivered[:kept])
	if extra != "" {
		b = append(b, ' ')
		b = append(b, extra...)
	}
	return b
}

// ownString returns b as a string: a copy, so an encoding costs two
// allocations (the buffer and the string). Handing the buffer over through
// unsafe, as strings.Builder does, would save one; no end-to-end gain was
// measured for it, so it is not done.
func ownString(b []byte) string { return string(b) }

// headerLen returns the length of appendHeader's output.
func headerLen(base int64, epoch int32) int {
	return len(Prefix+"o=") + decimalLen(base) + len(" e=") + decimalLen(int64(epoch))
}

// appendHeader appends the prefix, o= and e=.
func appendHeader(b []byte, base int64, epoch int32) []byte {
	b = append(b, Prefix+"o="...)
	b = strconv.AppendInt(b, base, 10)
	b = append(b, " e="...)
	return strconv.AppendInt(b, int64(epoch), 10)
}

// rangeCost returns the bytes r adds to d= after a range ending at prev (or
// after base, for the first): " d=" or ",", then gap.len.
func rangeCost(first bool, prev int64, r Range) int {
	cost := len(",")
	if first {
		cost = len(" d=")
	}
	return cost + decimalLen(r.From-prev) + len(".") + decimalLen(r.To-r.From)
}

// appendRanges appends d= with ranges, which lie above base; nothing when
// there are none.
func appendRanges(b []byte, base int64, ranges []Range) []byte {
	prev := base
	for i, r := range ranges {
		if i == 0 {
			b = append(b, " d="...)
		} else {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, r.From-prev, 10)
		b = append(b, '.')
		b = strconv.AppendInt(b, r.To-r.From, 10)
		prev = r.To
	}
	return b
}

// checkExtra returns why extra is not a field list Decode would return from
// DecodeFields, or nil. There are at most MaxUnknownFields fields, so
// duplicate keys are found by a linear scan.
func checkExtra(extra string) error {
	if extra == "" {
		return nil
	}
	var keys []string
	sc := fieldScanner{s: extra}
	for {
		f, ok, err := sc.next()
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		switch f.key {
		case "o", "e", "d":
			return fmt.Errorf("key %q at byte %d is reserved", f.key, f.at)
		}
		if len(keys) == MaxUnknownFields {
			return fmt.Errorf("key %q at byte %d: more than %d fields: %w", f.key, f.at, MaxUnknownFields, ErrTooManyFields)
		}
		for _, k := range keys {
			if k == f.key {
				return fmt.Errorf("key %q at byte %d: %w", f.key, f.at, ErrDuplicateField)
			}
		}
		keys = append(keys, f.key)
	}
}

// decimalLen returns the length of strconv.FormatInt(v, 10), for any v:
// the numbers of a Stall or a Loss are written as they are, in bounds or
// not.
func decimalLen(v int64) int {
	n, u := 1, uint64(v)
	if v < 0 {
		n++
		u = -u // the magnitude, also of math.MinInt64
	}
	for u >= 10 {
		u /= 10
		n++
	}
	return n
}
