package engine

import (
	"cmp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
	"github.com/watermark-connect/watermark-connect/internal/keyorder"
)

// Under ordering: key (Config.OrderingKey), a partition's fetched records go
// through a keyorder.Scheduler: a record goes out only once every earlier
// record of its key is done (delivered or dead-lettered), and records of
// other keys go out past a waiting key. The ledger does not change: fetched
// records are cut into segments as they are into batches under none, and
// each segment is registered at once, in offset order, so the tracker, the
// window, the loss and the replay code see segments as they see batches.
// What changes is what goes out: a hand-out is a set of records, picked
// from any segments (Batch.key); a segment resolves Delivered once its last
// record is done. What a commit carries is exact to the record: its base
// passes the done records at the head of the segment at the watermark, and
// its ranges cover the done records of segments not resolved
// (keyorder.Offsets), so a handover or a crash re-delivers none of them.
//
// A hand-out that fails for good resolves its segments Failed: the commit
// stops at the failed record, as under none, and its keys stay out (the
// quarantine) until the partition's epoch ends (a replay in place drains
// the whole partition and reads it again from its commit, skipping the
// records done).
//
// Attempts are counted per hand-out, as under none, and carried by the runs
// of adjacent offsets a hand-out holds (appendRuns). A hand-out holds records
// of one carried count only (Scheduler.PickClass by their segment's prior),
// so a record tried before never takes a fresh one to the dead-letter topic
// with it. A batch error frees the keys of the records it did not name at
// once (splitKeyed).

// keyPart is an epoch's part in key-ordered delivery. Invariants: sched and
// offs hold every record added and not done (sched with its kgo record and
// segment, keyRec); out counts the hand-outs unresolved, retrying those of
// them waiting to go out again (in backoff, queued for a retry, gated, or
// given back by a cancelled read): out-retrying are in the pipeline. Owned
// by the owner goroutine, inside its partState.
type keyPart struct {
	sched         *keyorder.Scheduler[keyRec]
	out, retrying int
	// offs knows which of the records added to sched are done, whatever
	// hand-outs they went in: the commit's base and delivered ranges
	// (keyedBase, keyedDelivered) come from it, exact to the record, not
	// from whole segments. nil until the first record is added.
	offs *keyorder.Offsets
	// live holds the hand-outs not delivered: those out, and those failed
	// for good, whose records wait for the epoch's end; for the attempts a
	// commit carries.
	live map[*Batch]struct{}
}

// keyBatch is a Batch's part in key order: a hand-out's records as its
// scheduler handed them out (set), or, of a segment (set nil), the count
// of its records not done (remaining). Owned by the owner goroutine.
type keyBatch struct {
	set       []keyorder.Record[keyRec]
	remaining int
}

// keyRec is a record held or out, and the segment it was fetched in.
type keyRec struct {
	rec *kgo.Record
	seg *Batch
}

func newKeyPart() *keyPart {
	return &keyPart{sched: keyorder.NewScheduler[keyRec](), live: map[*Batch]struct{}{}}
}

// newEpoch returns a new epoch of tp, made at now, with the parts the
// configuration asks for.
func (o *owner) newEpoch(tp topicPartition, now time.Time) *partState {
	p := newPartState(tp, now)
	if o.conf.OrderingKey {
		p.keys = newKeyPart()
	}
	return p
}

// admit registers the segments at the front of p's ready queue and adds
// their records to the scheduler, while fewer than max_pending_batches
// segments are registered and not behind the watermark, fewer than
// max_held_records wait for their key and fewer than readAhead could go
// out now: the ready queue keeps the rest, as under none, so that
// max_held_records bounds what a waiting key holds back, not how far the
// input reads ahead. The first bound is none's: without it, behind a key
// failed for good at the watermark (no later record of it waiting, none
// out) the other keys went on registering segments for as long as no
// replay in place came, and memory and what a crash replays grew without
// limit. A segment only waits for records of earlier segments, so those
// registered always finish, unless a failure stalls the partition. Skip
// batches are passed as under none.
func (o *owner) admit(p *partState) {
	for len(p.queue.ready) > 0 && p.led.pending() < o.conf.MaxPending && p.keys.sched.Blocked() < o.conf.MaxHeldRecords && p.keys.sched.Ready() < o.readAhead() {
		if p.queue.ready[0].skip {
			o.passSkipped(p)
			continue
		}
		rb := p.queue.popReady()
		seg := p.led.register(p, rb)
		seg.key = &keyBatch{remaining: len(rb.records)}
		if p.keys.offs == nil {
			p.keys.offs = keyorder.NewOffsets(rb.first)
		}
		for _, r := range rb.records {
			p.keys.offs.Add(r.Offset)
			p.keys.sched.Add(keyorder.Record[keyRec]{Offset: r.Offset, Key: string(r.Key), Keyed: r.Key != nil, Val: keyRec{rec: r, seg: seg}})
		}
		o.lists.gauges.add(p)
	}
	o.pauseAtLimit(p)
}

// pickKeyed makes the next hand-out of p from the records whose keys are
// free, or returns nil when none is.
func (o *owner) pickKeyed(p *partState) *Batch {
	o.admit(p) // keys freed since may let more in
	var class func(keyorder.Record[keyRec]) int
	if len(p.att.carried) > 0 {
		class = func(r keyorder.Record[keyRec]) int { return r.Val.seg.prior }
	}
	picked := p.keys.sched.PickClass(o.conf.BatchMaxRecords, class)
	if len(picked) == 0 {
		return nil
	}
	records := make([]*kgo.Record, len(picked))
	for i, k := range picked {
		records[i] = k.Val.rec
	}
	b := &Batch{part: p, key: &keyBatch{set: picked}, raw: rawBatch{
		records: records, first: records[0].Offset, last: records[len(records)-1].Offset, logEnd: p.queue.highWatermark,
	}}
	b.prior = picked[0].Val.seg.prior
	p.keys.out++
	p.keys.live[b] = struct{}{}
	p.commits.handedOut(int64(len(records)))
	return b
}

// splitKeyed takes a hand-out's batch error, which named its failed
// records (indices into b's records): the others were delivered, so they
// are done now, their keys free and their segments resolved once whole,
// and b keeps the failed records only, to retry or to fail as a whole. It
// returns nil, for the ack to go on as a nack of the whole (new) b: under
// key, b.only stays nil.
func (o *owner) splitKeyed(b *Batch, failed []int) []int {
	p := b.part
	failedAt, named := make([]bool, len(b.raw.records)), 0
	for _, i := range failed {
		if i >= 0 && i < len(failedAt) && !failedAt[i] {
			failedAt[i] = true
			named++
		}
	}
	if named == 0 || named == len(failedAt) {
		return nil // naming all (or none it holds): a nack of the whole hand-out
	}
	done := make([]keyorder.Record[keyRec], 0, len(failedAt)-named)
	keep := 0
	for i, r := range b.raw.records {
		if failedAt[i] {
			b.raw.records[keep], b.key.set[keep] = r, b.key.set[i]
			keep++
			continue
		}
		done = append(done, b.key.set[i])
		o.doneKeyedRecord(p, b.key.set[i])
	}
	clear(b.raw.records[keep:])
	b.raw.records, b.key.set = b.raw.records[:keep], b.key.set[:keep]
	b.raw.first, b.raw.last = b.raw.records[0].Offset, b.raw.records[keep-1].Offset
	p.keys.sched.Done(done)
	o.markDirty(p)
	o.advance(p)
	o.schedule(p)
	return nil
}

// doneKeyedRecord marks a delivered record of p done, once, and resolves
// its segment Delivered when it was the segment's last record not done.
func (o *owner) doneKeyedRecord(p *partState, r keyorder.Record[keyRec]) {
	if !p.keys.offs.Done(r.Offset) {
		return // done already: nothing to count twice
	}
	seg := r.Val.seg
	if seg.key.remaining--; seg.key.remaining == 0 {
		p.led.resolve(seg, true) // a Duplicate after a failure changes nothing
	}
}

// noteKeyedNack puts a hand-out's nack on its segments: the partition is
// stalled when the segment at its watermark holds a nacked record.
func (p *partState) noteKeyedNack(b *Batch) {
	for _, r := range b.key.set {
		seg := r.Val.seg
		if seg.nackedAt.IsZero() {
			seg.nackedAt = b.nackedAt
		}
		seg.lastErr = b.lastErr
		seg.attempt = max(seg.attempt, b.attempt)
	}
}

// resolveKeyed records the final verdict on a hand-out: delivered, its
// records are done, their keys free, and each segment whose last record it
// was resolves Delivered; failed for good, its segments resolve Failed and
// its keys stay out.
func (o *owner) resolveKeyed(b *Batch, err error) {
	p := b.part
	p.keys.out--
	if err == nil {
		delete(p.keys.live, b)
		p.keys.sched.Done(b.key.set)
		for _, r := range b.key.set {
			o.doneKeyedRecord(p, r)
		}
		o.markDirty(p)
	} else {
		for _, r := range b.key.set {
			p.led.resolve(r.Val.seg, false)
		}
		o.log.Errorf("kafka_watermark: %d record(s) of %s/%d (offsets %d to %d, keys held back) failed after %d attempt(s): %v",
			len(b.raw.records), p.tp.topic, p.tp.partition, b.raw.first, b.raw.last, b.attempt+1, err)
	}
	o.advance(p)
	if p.draining {
		o.checkDrains()
	}
	o.schedule(p)
}

// waitRetry counts a hand-out that leaves the pipeline to go out again
// later; retryOut counts it back in when it goes out.
func (p *partState) waitRetry() {
	if p.keys != nil {
		p.keys.retrying++
		return
	}
	p.led.waitRetry()
}

func (p *partState) retryOut() {
	if p.keys != nil {
		p.keys.retrying--
		return
	}
	p.led.retryOut()
}

// inPipeline is the number of hand-outs out and not acknowledged: what a
// drain waits for. Under key, held records are not out: a drain does not
// wait for them.
func (p *partState) inPipeline() int {
	if p.keys != nil {
		return p.keys.out - p.keys.retrying
	}
	return p.led.inPipeline()
}

// held is the number of records fetched and waiting for their key: an
// earlier record of it is out (kafka_watermark_held_records).
func (p *partState) held() int {
	if p.keys == nil {
		return 0
	}
	return p.keys.sched.Blocked()
}

// pickable is the number of records in p's scheduler that may go out now.
func (p *partState) pickable() int {
	if p.keys == nil {
		return 0
	}
	return p.keys.sched.Ready()
}

// readAhead is how many records, free to go out, admit keeps in the
// scheduler: the batches the owner keeps ready under none (pollLowWater).
func (o *owner) readAhead() int { return pollLowWater * o.conf.BatchMaxRecords }

// keyedAttemptRanges is attemptRanges under key: the carried counts of the
// segments not resolved, from base on, raised by the counted hand-outs'
// runs within them, then the carried ranges beyond what is registered.
// Hand-outs not delivered hold records not done: at or above base.
func (p *partState) keyedAttemptRanges(base int64) []commitmeta.Attempts {
	var segs, outs []commitmeta.Attempts
	for _, w := range p.led.window.batches {
		if w.b != nil && !w.delivered && w.b.prior > 0 && w.b.raw.last >= base {
			// base may lie inside the segment at the watermark (keyedBase)
			segs = append(segs, commitmeta.Attempts{From: max(w.b.raw.first, base), To: w.b.raw.last + 1, N: int32(min(w.b.prior, 1<<31-1))})
		}
	}
	for b := range p.keys.live {
		if b.counted() {
			outs = b.appendRanges(outs)
		}
	}
	slices.SortFunc(outs, func(x, y commitmeta.Attempts) int { return cmp.Compare(x.From, y.From) })
	return p.carriedBeyond(base, mergeMax(segs, outs))
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

// keyedBase is where a commit of p under key may go, given the first offset
// wm of the segment at its watermark: past the records done at its head.
// A segment resolves only when its last record is done, so without this a
// commit stopped at the first record of a segment whose later record waits
// for its key, and the next owner of the partition delivered its done
// records again, after newer records of their keys.
//
// Only inside that segment, and only when the watermark is its first
// offset: the base never jumps a gap the epoch did not fetch (records lost
// below it), whose leader epoch it does not know.
func (p *partState) keyedBase(wm int64) int64 {
	w, ok := p.led.head()
	if p.keys.offs == nil || !ok || w.b == nil || w.delivered || w.b.raw.first != wm {
		return wm
	}
	return max(wm, min(p.keys.offs.Base(), w.last))
}

// keyedLeaderEpoch is, when keyedBase passed done records of the segment at
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
func (p *partState) keyedLeaderEpoch(base int64) (int32, bool) {
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

// keyedDelivered adds to ranges, the window's delivered segments above base,
// the runs of done records above base in segments not resolved.
func (k *keyPart) keyedDelivered(base int64, ranges []commitmeta.Range) []commitmeta.Range {
	if k.offs == nil {
		return ranges
	}
	var runs []commitmeta.Range
	for _, r := range k.offs.Delivered(nil) {
		if r.From = max(r.From, base+1); r.From < r.To {
			runs = append(runs, commitmeta.Range{From: r.From, To: r.To})
		}
	}
	return mergeRanges(ranges, runs)
}
