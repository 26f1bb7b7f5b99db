package commitmeta

import (
	"fmt"
	"math"
	"sort"
)

// Range is a half-open run of absolute offsets [From, To).
//
// A Range is a value, safe for concurrent use.
type Range struct{ From, To int64 }

// Meta is one partition's commit metadata.
//
// A Meta is a value: it shares nothing but its Delivered slice, and is safe for
// concurrent use by readers once built. A Meta returned by Decode satisfies
// the invariants stated on its fields; one built by the driver must, or
// Encode panics.
type Meta struct {
	Base int64 // the committed offset the ranges are relative to; >= 0

	Epoch int32 // leader epoch of the record before Base; -1 when unknown

	// Delivered holds absolute ranges, sorted, each with Base < From < To,
	// and each From greater than the previous To (non-overlapping and
	// non-adjacent). Empty (nil from Decode) when nothing above Base was
	// delivered.
	Delivered []Range
}

// Covered reports whether offset lies in one of m.Delivered: whether the
// record at offset was already delivered and is to be skipped. It is a binary
// search, so it assumes the invariants; on a Meta that breaks them the answer
// is unspecified, but Covered does not panic.
func (m Meta) Covered(offset int64) bool {
	d := m.Delivered
	// The first range that ends after offset is the only one that can hold it.
	i := sort.Search(len(d), func(i int) bool { return d[i].To > offset })
	return i < len(d) && d[i].From <= offset
}

// Records returns the number of offsets the ranges cover, the sum of their
// lengths To-From. Ranges with To <= From count as zero and the sum saturates at
// math.MaxInt64 instead of overflowing; neither can happen when m satisfies
// the invariants, since the ranges then lie disjoint within (Base, MaxInt64).
func (m Meta) Records() int64 {
	var n int64
	for _, r := range m.Delivered {
		if r.To <= r.From {
			continue
		}
		// To - From of two int64s fits a uint64 even when it does not fit
		// an int64 (From < 0 <= To).
		l := uint64(r.To) - uint64(r.From)
		if l > uint64(math.MaxInt64-n) {
			return math.MaxInt64
		}
		n += int64(l)
	}
	return n
}

// check returns the first invariant m breaks, or nil.
func (m Meta) check() error {
	if m.Base < 0 {
		return fmt.Errorf("base %d is negative", m.Base)
	}
	if m.Epoch < -1 {
		return fmt.Errorf("epoch %d is below -1", m.Epoch)
	}
	prev := m.Base // ranges must start strictly above this
	for i, r := range m.Delivered {
		switch {
		case r.To <= r.From:
			return fmt.Errorf("range %d [%d,%d) is empty", i, r.From, r.To)
		case i == 0 && r.From <= prev:
			return fmt.Errorf("range 0 [%d,%d) is not above base %d", r.From, r.To, prev)
		case r.From < prev:
			return fmt.Errorf("range %d [%d,%d) overlaps or precedes the range before, which ends at %d", i, r.From, r.To, prev)
		case r.From == prev:
			return fmt.Errorf("range %d [%d,%d) is adjacent to the range before: merge them", i, r.From, r.To)
		}
		prev = r.To
	}
	return nil
}
