package engine

import (
	"github.com/watermark-connect/watermark-connect/internal/keyorder"
)

// The ack side of ordering: key (keyed.go): a hand-out's nack marks its
// segments, a batch error frees the records it did not name, and a final
// verdict frees the keys of a delivered hand-out, or keeps those of a
// failed one out until the epoch ends.

// nacked puts a nack on b's segments, after a batch error (failed) split
// it (split). It returns nil: under key, b.only stays nil.
func (k *keyPart) nacked(o *owner, b *Batch, failed []int) []int {
	p := b.part
	if failed != nil {
		failed = k.split(o, b, failed)
	}
	k.noteNack(b) // the segment at the watermark may hold it
	o.markDirty(p)
	o.lists.gauges.add(p)
	return failed
}

// split takes a hand-out's batch error, which named its failed
// records (indices into b's records): the others were delivered, so they
// are done now, their keys free and their segments resolved once whole,
// and b keeps the failed records only, to retry or to fail as a whole. It
// returns nil, for the ack to go on as a nack of the whole (new) b: under
// key, b.only stays nil.
func (k *keyPart) split(o *owner, b *Batch, failed []int) []int {
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
		k.done(p, b.key.set[i])
	}
	clear(b.raw.records[keep:])
	b.raw.records, b.key.set = b.raw.records[:keep], b.key.set[:keep]
	b.raw.first, b.raw.last = b.raw.records[0].Offset, b.raw.records[keep-1].Offset
	k.sched.Done(done)
	o.markDirty(p)
	o.advance(p)
	o.schedule(p)
	return nil
}

// done marks a delivered record of p done, once, and resolves its segment
// Delivered when it was the segment's last record not done.
func (k *keyPart) done(p *partState, r keyorder.Record[keyRec]) {
	if !k.offs.Done(r.Offset) {
		return // done already: nothing to count twice
	}
	seg := r.Val.seg
	if seg.key.remaining--; seg.key.remaining == 0 {
		p.led.resolve(seg, true) // a Duplicate after a failure changes nothing
	}
}

// noteNack puts a hand-out's nack on its segments: the partition is
// stalled when the segment at its watermark holds a nacked record.
func (k *keyPart) noteNack(b *Batch) {
	for _, r := range b.key.set {
		seg := r.Val.seg
		if seg.nackedAt.IsZero() {
			seg.nackedAt = b.nackedAt
		}
		seg.lastErr = b.lastErr
		seg.attempt = max(seg.attempt, b.attempt)
	}
}

// resolve records the final verdict on b: a hand-out, by resolveHandOut;
// any other batch (a segment is resolved by its records, in done) in the
// ledger, as under none.
func (k *keyPart) resolve(o *owner, b *Batch, err error) {
	if b.key != nil && b.key.set != nil {
		k.resolveHandOut(o, b, err)
		return
	}
	o.resolveBatch(b, err)
}

// resolveHandOut records the final verdict on a hand-out: delivered, its
// records are done, their keys free, and each segment whose last record it
// was resolves Delivered; failed for good, its segments resolve Failed and
// its keys stay out.
func (k *keyPart) resolveHandOut(o *owner, b *Batch, err error) {
	p := b.part
	k.out--
	if err == nil {
		delete(k.live, b)
		k.sched.Done(b.key.set)
		for _, r := range b.key.set {
			k.done(p, r)
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
