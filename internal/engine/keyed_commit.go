package engine

import (
	"cmp"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// What a commit carries under ordering: key (keyed.go): a base exact to
// the record inside the segment at the watermark, the leader epoch that
// goes with it, the done records of segments not resolved as delivered
// ranges, and the attempts of the hand-outs, by runs of adjacent offsets.

// attemptRanges: the carried counts of the segments not resolved, from base
// on, raised by the counted hand-outs' runs within them, then the carried
// ranges beyond what is registered. Hand-outs not delivered hold records
// not done: at or above base.
func (k *keyPart) attemptRanges(p *partState, base int64) []commitmeta.Attempts {
	var segs, outs []commitmeta.Attempts
	for _, w := range p.led.window.batches {
		if w.b != nil && !w.delivered && w.b.prior > 0 && w.b.raw.last >= base {
			// base may lie inside the segment at the watermark (commitBase)
			segs = append(segs, commitmeta.Attempts{From: max(w.b.raw.first, base), To: w.b.raw.last + 1, N: int32(min(w.b.prior, 1<<31-1))})
		}
	}
	for b := range k.live {
		if b.counted() {
			outs = b.appendRanges(outs)
		}
	}
	slices.SortFunc(outs, func(x, y commitmeta.Attempts) int { return cmp.Compare(x.From, y.From) })
	return p.carriedBeyond(base, mergeMax(segs, outs))
}

// appendAttempts: b is a hand-out, a set of offsets, each run of adjacent
// ones a range.
func (k *keyPart) appendAttempts(dst []commitmeta.Attempts, b *Batch, n int32) []commitmeta.Attempts {
	return appendRuns(dst, b.raw.records, n)
}

// appendRuns appends a range for each run of adjacent offsets of records
// (in offset order), each counted n.
func appendRuns(dst []commitmeta.Attempts, records []*kgo.Record, n int32) []commitmeta.Attempts {
	for i := 0; i < len(records); {
		j := i
		for j+1 < len(records) && records[j+1].Offset == records[j].Offset+1 {
			j++
		}
		dst = append(dst, commitmeta.Attempts{From: records[i].Offset, To: records[j].Offset + 1, N: n})
		i = j + 1
	}
	return dst
}

// mergeMax merges two lists of ranges, each sorted and disjoint, into one:
// where they overlap, the higher count; touching ranges of one count are
// joined.
func mergeMax(a, b []commitmeta.Attempts) []commitmeta.Attempts {
	if len(a) == 0 || len(b) == 0 {
		return append(a, b...)
	}
	pts := make([]int64, 0, 2*(len(a)+len(b)))
	for _, r := range a {
		pts = append(pts, r.From, r.To)
	}
	for _, r := range b {
		pts = append(pts, r.From, r.To)
	}
	slices.Sort(pts)
	pts = slices.Compact(pts)
	var out []commitmeta.Attempts
	i, j := 0, 0
	for k := 0; k+1 < len(pts); k++ {
		x, y := pts[k], pts[k+1]
		for i < len(a) && a[i].To <= x {
			i++
		}
		for j < len(b) && b[j].To <= x {
			j++
		}
		var n int32
		if i < len(a) && a[i].From <= x {
			n = a[i].N
		}
		if j < len(b) && b[j].From <= x {
			n = max(n, b[j].N)
		}
		if n == 0 {
			continue
		}
		if last := len(out) - 1; last >= 0 && out[last].To == x && out[last].N == n {
			out[last].To = y
			continue
		}
		out = append(out, commitmeta.Attempts{From: x, To: y, N: n})
	}
	return out
}

// commitBase is where a commit of p under key may go, given the first offset
// wm of the segment at its watermark: past the records done at its head.
// A segment resolves only when its last record is done, so without this a
// commit stopped at the first record of a segment whose later record waits
// for its key, and the next owner of the partition delivered its done
// records again, after newer records of their keys.
//
// Only inside that segment, and only when the watermark is its first
// offset: the base never jumps a gap the epoch did not fetch (records lost
// below it), whose leader epoch it does not know.
func (k *keyPart) commitBase(p *partState, wm int64) int64 {
	w, ok := p.led.head()
	if k.offs == nil || !ok || w.b == nil || w.delivered || w.b.raw.first != wm {
		return wm
	}
	return max(wm, min(k.offs.Base(), w.last))
}

// baseMoved: the base also moves inside the segment at the watermark, past
// where p would resume.
func (k *keyPart) baseMoved(p *partState, base int64) bool {
	rp, ok := p.resumePoint()
	return ok && base > rp
}

// stallFirst: the base may lie inside the nacked segment at the watermark
// (commitBase), and a restart knows the stall by the base.
func (k *keyPart) stallFirst(first, base int64) int64 { return max(first, base) }

// leaderEpochBefore is, when commitBase passed done records of the segment at
// the watermark to base, a record of it, the leader epoch that goes with
// base (leaderEpochBefore): that of the record at base-1 when the segment
// holds it, the one consumed last before base; across a gap, that of the
// record at base. The record before the gap does not do: its epoch may end
// in the gap (offsets 0-2 under epoch 0, 3 compacted or aborted where
// epoch 1 began, 4 under epoch 1: Kafka ends epoch 0 at 3, below a commit
// at 4, and kgo reports a truncation that never happened), while the epoch
// of the record at base ends after base, and a log truncated below base
// still answers below it (plan.go, positionLeaderEpoch). ok is false when
// base is not past the first record of that segment: the ledger's leader
// epochs answer then.
func (k *keyPart) leaderEpochBefore(p *partState, base int64) (int32, bool) {
	w, ok := p.led.head()
	if !ok || w.b == nil || w.delivered || base <= w.b.raw.first || base > w.last {
		return -1, false
	}
	recs := w.b.raw.records
	i, found := slices.BinarySearchFunc(recs, base, func(r *kgo.Record, off int64) int { return cmp.Compare(r.Offset, off) })
	if !found || i == 0 {
		return -1, false
	}
	if prev := recs[i-1]; prev.Offset == base-1 {
		return prev.LeaderEpoch, true
	}
	return recs[i].LeaderEpoch, true
}

// delivered adds to ranges, the window's delivered segments above base, the
// runs of done records above base in segments not resolved.
func (k *keyPart) delivered(base int64, ranges []commitmeta.Range) []commitmeta.Range {
	if k.offs == nil {
		return ranges
	}
	var runs []commitmeta.Range
	for _, r := range k.offs.Delivered(nil) {
		if r.From = max(r.From, base+1); r.From < r.To {
			runs = append(runs, commitmeta.Range{From: r.From, To: r.To})
		}
	}
	return commitmeta.MergeRanges(ranges, runs)
}
