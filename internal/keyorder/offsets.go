package keyorder

// Range is a half-open run of offsets [From, To).
type Range struct{ From, To int64 }

// Offsets tracks one partition's offsets from its base (the first offset
// not done) to one past the last offset added: each done or not. The base is
// where a commit may go: every offset below it is done, whatever batches
// they went out in. Offsets never added between two added ones (compacted
// records, transaction markers) hold nothing to deliver and count as done.
//
// Invariants: not[start+i] says whether base+i is not done, for every i
// below len(not)-start; not[start] is true when there are any (the base is
// not done); next is one past the last offset added, or the base when none
// is pending. The done prefix is dropped by moving start, and the array
// shifted down only once start passes half of it, so a base that moves
// costs its distance, not the window.
type Offsets struct {
	base  int64
	next  int64
	not   []bool
	start int
	// pending counts the offsets in not that are not done.
	pending int
}

// NewOffsets returns the offsets of a partition that starts at base.
func NewOffsets(base int64) *Offsets { return &Offsets{base: base, next: base} }

// Base is the first offset not done: where a commit may go.
func (o *Offsets) Base() int64 { return o.base }

// NotDone reports whether offset was added and is not done.
func (o *Offsets) NotDone(offset int64) bool {
	i := offset - o.base
	return i >= 0 && i < int64(len(o.not)-o.start) && o.not[o.start+int(i)]
}

// Pending is the number of offsets added and not done.
func (o *Offsets) Pending() int { return o.pending }

// Add adds offset, not done, above every offset added before; the offsets
// skipped between count as done. It reports false for an offset at or below
// the last one added.
func (o *Offsets) Add(offset int64) bool {
	if offset < o.next {
		return false
	}
	if o.pending == 0 {
		// Everything added is done: the base moves up to the new offset.
		o.base, o.not, o.start = offset, o.not[:0], 0
	}
	for o.base+int64(len(o.not)-o.start) < offset {
		o.not = append(o.not, false)
	}
	o.not = append(o.not, true)
	o.next = offset + 1
	o.pending++
	return true
}

// Done marks offset done and moves the base past the done prefix. It reports
// whether offset was pending (false: never added, or done already).
func (o *Offsets) Done(offset int64) bool {
	i := offset - o.base
	if i < 0 || i >= int64(len(o.not)-o.start) || !o.not[o.start+int(i)] {
		return false
	}
	o.not[o.start+int(i)] = false
	o.pending--
	if o.pending == 0 {
		o.base, o.not, o.start = o.next, o.not[:0], 0
		return true
	}
	k := o.start
	for !o.not[k] { // a pending offset lies ahead
		k++
	}
	o.base += int64(k - o.start)
	o.start = k
	if o.start > 1024 && o.start > len(o.not)/2 {
		n := copy(o.not, o.not[o.start:])
		o.not, o.start = o.not[:n], 0
	}
	return true
}

// Delivered returns the runs of done offsets above the base, up to the last
// offset added: what a commit at the base carries as delivered ranges. It
// appends to dst.
func (o *Offsets) Delivered(dst []Range) []Range {
	from := int64(-1)
	for i, n := range o.not[o.start:] {
		off := o.base + int64(i)
		switch {
		case !n && from < 0:
			from = off
		case n && from >= 0:
			dst = append(dst, Range{From: from, To: off})
			from = -1
		}
	}
	if from >= 0 {
		dst = append(dst, Range{From: from, To: o.base + int64(len(o.not)-o.start)})
	}
	return dst
}
