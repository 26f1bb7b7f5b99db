package commitmeta

import (
	"fmt"
	"strconv"
)

// Commit is the whole state one commit's metadata is written from: the
// header, the reports, and the delivered ranges with what l= needs.
//
// A Commit is a value that EncodeCommit reads and does not keep. It is safe
// for concurrent use by readers as long as nothing modifies Delivered,
// Attempts, *Stall, *Loss or *DeadLetter and EpochOf is safe to call
// concurrently.
type Commit struct {
	Base  int64 // the committed offset; >= 0
	Epoch int32 // leader epoch of the record before Base; >= 0, or -1 when unknown

	// Stall is the provenance of the failed batch at the watermark, or nil
	// when the partition is not stalled. It is written as Stall.Fields
	// writes it.
	Stall *Stall

	// Loss is the report of records lost before delivery that the commit
	// carries, or nil. A Loss with Count 0 (the zero Loss, which is no
	// loss) is not written either; any other is written as Loss.Fields
	// writes it.
	Loss *Loss

	// Attempts holds the runs of records at and above Base handed out
	// without being delivered, with how many times: sorted, each
	// Base <= From < To and N >= 1, each From at least the previous To
	// (runs may touch, not overlap). Nil when there are none.
	Attempts []Attempts

	// DeadLetter is the report of records dead-lettered lately that the
	// commit carries, or nil. Like Loss, one with Count 0 is not written.
	DeadLetter *DeadLetter

	// Delivered holds the delivered ranges above Base, with the invariants
	// of Meta.Delivered: sorted, each Base < From < To, each From greater
	// than the previous To.
	Delivered []Range

	// EpochOf returns the leader epoch of the record at offset, or -1 when
	// unknown (a value below -1 is written as -1). EncodeCommit calls it
	// with the last offset (To-1) of the ranges that could be the last one
	// kept, from the last that might fit backwards: once when l= fits with
	// the first candidate, a few more times when it does not. Required
	// when Delivered is not empty.
	EpochOf func(offset int64) int32
}

// The parts of a commit's metadata, in the order they get room (see
// "Priority" in the package doc). A whole part is written only when it fits
// together with every part before it, and the first that does not ends the
// metadata. The attempts and the ranges are written as their longest
// prefix that fits instead: they never end it.
const (
	partHeader     = iota // "wm1 ", o=, e=
	partStall             // the stall provenance
	partLoss              // the loss report
	partAttempts          // a=: the most runs that fit, nearest the base first
	partDeadLetter        // the dead-letter report
	partRanges            // d= and l=: the most ranges that fit with the l of the last
	numParts
)

// MinCommitBudget is the smallest maxBytes with which EncodeCommit always
// writes metadata that says whether the partition is stalled: the longest
// header (o= of 19 digits, e= of 10) and the longest stall mark after it.
// With less, a stalled Commit whose mark does not fit after its header gets
// no metadata at all, never a header that would read as not stalled. A
// writer that lowers its budget (a broker refused metadata as too large)
// stops here until the broker refuses this much too.
const MinCommitBudget = len(Prefix+"o=") + 19 + len(" e=") + 10 + len(" ") + MaxStallMarkLen

// layout is what EncodeCommit writes of a Commit within its budget.
type layout struct {
	parts    int   // how many parts got their room, in order; 0: not even the header
	marked   bool  // the stall is written as its mark (the whole did not fit), which ends the metadata
	attempts int   // runs written: the first attempts of Attempts
	kept     int   // ranges written: the first kept of Delivered
	last     int32 // the l= written when kept > 0
	size     int   // bytes in all
}

// Kept is what EncodeCommitKept wrote of a Commit. It is a value, safe for
// concurrent use.
type Kept struct {
	Cut      int   // delivered ranges cut: len(c.Delivered) minus those written
	KeptTo   int64 // the To of the last delivered range written, or c.Base when none
	Attempts int   // runs of attempts written: the first Attempts of c.Attempts
}

// EncodeCommit is EncodeCommitKept for a caller that does not need to know
// how many runs of attempts were written: it returns the metadata, the
// number of delivered ranges cut (k.Cut) and the To of the last range kept
// (k.KeptTo).
func EncodeCommit(c Commit, maxBytes int) (meta string, cut int, keptTo int64) {
	meta, k := EncodeCommitKept(c, maxBytes)
	return meta, k.Cut, k.KeptTo
}

// EncodeCommitKept returns c as metadata of at most maxBytes bytes, and what
// of c it wrote: how many delivered ranges it cut, the To of the last range
// it kept (c.Base when it kept none), the offset below which a restart
// skips what was delivered, and how many runs of c.Attempts it kept, the
// first ones: a restart counts the attempts of those only.
//
// It plans every field in one pass, in the priority order of the package
// doc: the header, the stall provenance, the loss report, the longest
// prefix of c.Attempts that fits, the dead-letter report, then the longest
// prefix of c.Delivered that fits together with the l= of its last range.
// When the stall provenance does not fit after the header, it writes the
// stall's mark (sf= alone) instead and nothing after it. When not even the
// header fits, or c is stalled and not even the mark fits after it, it
// returns "" with every range and run cut: commit without metadata, which
// skips nothing. With maxBytes at least MinCommitBudget, a stalled c always
// gets metadata that says so. A cut range is only
// redelivered after a restart, never lost; a cut run of attempts only
// counts again from zero.
//
// It allocates a buffer and the returned string. It panics (a driver bug)
// if c's header and ranges break the invariants of Meta, if c.Attempts
// breaks those stated on it, or if c.Delivered is not empty and c.EpochOf
// is nil.
func EncodeCommitKept(c Commit, maxBytes int) (meta string, k Kept) {
	lay := planCommit(c, maxBytes)
	k = Kept{Cut: len(c.Delivered) - lay.kept, KeptTo: lay.keptTo(c), Attempts: lay.attempts}
	if lay.parts == 0 {
		return "", k
	}
	return ownString(appendCommit(make([]byte, 0, lay.size), c, lay)), k
}

// appendCommitTo is EncodeCommit that appends to dst and returns the extended
// slice; maxBytes bounds what it appends. When nothing fits it returns dst
// unchanged. It allocates nothing when dst has room for maxBytes more
// bytes, so a caller that encodes every commit can reuse one buffer.
func appendCommitTo(dst []byte, c Commit, maxBytes int) (b []byte, cut int, keptTo int64) {
	lay := planCommit(c, maxBytes)
	return appendCommit(dst, c, lay), len(c.Delivered) - lay.kept, lay.keptTo(c)
}

// hasLoss reports whether c carries a loss report.
func (c Commit) hasLoss() bool { return c.Loss != nil && c.Loss.Count != 0 }

// hasDeadLetter reports whether c carries a dead-letter report.
func (c Commit) hasDeadLetter() bool { return c.DeadLetter != nil && c.DeadLetter.Count != 0 }

// planCommit checks c (panicking on a driver bug) and returns what of it
// fits in maxBytes.
func planCommit(c Commit, maxBytes int) layout {
	m := Meta{Base: c.Base, Epoch: c.Epoch, Delivered: c.Delivered}
	if err := m.check(); err != nil {
		panic("commitmeta: EncodeCommit of an invalid Commit: " + err.Error())
	}
	if err := checkAttempts(c.Base, c.Attempts); err != nil {
		panic("commitmeta: EncodeCommit of invalid Attempts: " + err.Error())
	}
	if len(c.Delivered) > 0 && c.EpochOf == nil {
		panic("commitmeta: EncodeCommit of a Commit with ranges and no EpochOf")
	}
	var need [numParts]int // the whole parts' sizes; 0 when absent
	need[partHeader] = headerLen(c.Base, c.Epoch)
	if c.Stall != nil {
		need[partStall] = len(" ") + c.Stall.fieldsLen()
	}
	if c.hasLoss() {
		need[partLoss] = len(" ") + c.Loss.fieldsLen()
	}
	if c.hasDeadLetter() {
		need[partDeadLetter] = len(" ") + c.DeadLetter.fieldsLen()
	}
	var lay layout
	for part, n := range need {
		switch part {
		case partAttempts:
			lay.attempts, n = planAttempts(c.Attempts, c.Base, maxBytes-lay.size)
		case partRanges:
			lay.kept, lay.last, n = planRanges(c.Delivered, c.Base, maxBytes-lay.size, c.EpochOf)
		default:
			if n > maxBytes-lay.size {
				if part == partStall {
					return lay.markStall(c, maxBytes)
				}
				return lay
			}
		}
		lay.size += n
		lay.parts++
	}
	return lay
}

// markStall ends the plan lay of c, whose stall provenance does not fit
// after the header: with the stall's mark when it fits, else with no
// metadata at all. A header alone would read as a partition that is not
// stalled (issue 29: `status` said healthy while the pipeline logged the
// stall), while "" says nothing of the partition either way.
func (lay layout) markStall(c Commit, maxBytes int) layout {
	n := len(" ") + c.Stall.mark().fieldsLen()
	if n > maxBytes-lay.size {
		return layout{}
	}
	lay.size += n
	lay.parts++
	lay.marked = true
	return lay
}

// planRanges returns how many of d (ranges above base) fit in room bytes
// together with the l= of the last one kept, that l, and the bytes the
// ranges and l= take.
//
// The count is the most that fit for any EpochOf, with no retry: the first
// loop finds how many could fit with the shortest l= (one digit), a bound
// no longer prefix can meet, as each range costs bytes; the second walks
// back from there to the first count whose own l= fits. Epochs do not
// decrease along a log, so walking back shortens l= or keeps its length
// (but for -1, one byte longer than 0-9), and a step frees at least four
// bytes: for a real log it stops after at most three steps, and EpochOf is
// called at most four times.
func planRanges(d []Range, base int64, room int, epochOf func(int64) int32) (kept int, last int32, size int) {
	const shortest = len(" l=") + 1
	prev := base
	for i, r := range d {
		cost := rangeCost(i == 0, prev, r)
		if cost > room-shortest-size {
			break
		}
		size += cost
		kept++
		prev = r.To
	}
	for ; kept > 0; kept-- {
		last = max(epochOf(d[kept-1].To-1), -1)
		if n := len(" l=") + decimalLen(int64(last)); n <= room-size {
			return kept, last, size + n
		}
		prev = base
		if kept > 1 {
			prev = d[kept-2].To
		}
		size -= rangeCost(kept == 1, prev, d[kept-1])
	}
	return 0, 0, 0
}

// keptTo returns the To of the last range lay keeps, or c.Base.
func (lay layout) keptTo(c Commit) int64 {
	if lay.kept == 0 {
		return c.Base
	}
	return c.Delivered[lay.kept-1].To
}

// appendCommit appends c as lay planned it. The bytes come in the order of
// the Format section, which is not the order of priority: the ranges follow
// the header, then come the stall and loss reports, a=, the dead-letter
// report, and l= ends the metadata.
func appendCommit(b []byte, c Commit, lay layout) []byte {
	if lay.parts == 0 {
		return b
	}
	start := len(b)
	b = appendHeader(b, c.Base, c.Epoch)
	b = appendRanges(b, c.Base, c.Delivered[:lay.kept])
	switch {
	case lay.marked:
		b = c.Stall.mark().appendFields(append(b, ' '))
	case lay.parts > partStall && c.Stall != nil:
		b = c.Stall.appendFields(append(b, ' '))
	}
	if lay.parts > partLoss && c.hasLoss() {
		b = c.Loss.appendFields(append(b, ' '))
	}
	b = appendAttempts(b, c.Base, c.Attempts[:lay.attempts])
	if lay.parts > partDeadLetter && c.hasDeadLetter() {
		b = c.DeadLetter.appendFields(append(b, ' '))
	}
	if lay.kept > 0 {
		b = append(b, " l="...)
		b = strconv.AppendInt(b, int64(lay.last), 10)
	}
	if len(b)-start != lay.size {
		// The plan is what keeps the metadata within maxBytes.
		panic(fmt.Sprintf("commitmeta: planned %d bytes, wrote %d: %q", lay.size, len(b)-start, b[start:]))
	}
	return b
}
