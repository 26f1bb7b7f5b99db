package engine

import (
	"github.com/twmb/franz-go/pkg/kgo"

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
// once (keyPart.split, keyed_ack.go).

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
	// (commitBase, delivered, keyed_commit.go) come from it, exact to the record, not
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
func (k *keyPart) admit(o *owner, p *partState) {
	for p.queue.readyLen() > 0 && p.led.pending() < o.conf.MaxPending && k.sched.Blocked() < o.conf.MaxHeldRecords && k.sched.Ready() < o.readAhead() {
		if p.queue.skipAtFront() {
			o.passSkipped(p)
			continue
		}
		rb := p.queue.popReady()
		seg := p.led.register(p, rb)
		seg.key = &keyBatch{remaining: len(rb.records)}
		if k.offs == nil {
			k.offs = keyorder.NewOffsets(rb.first)
		}
		for _, r := range rb.records {
			k.offs.Add(r.Offset)
			k.sched.Add(keyorder.Record[keyRec]{Offset: r.Offset, Key: string(r.Key), Keyed: r.Key != nil, Val: keyRec{rec: r, seg: seg}})
		}
		o.lists.gauges.add(p)
	}
	o.pauseAtLimit(p)
}

// next makes the next hand-out of p from the records whose keys are free,
// or returns nil when none is.
func (k *keyPart) next(o *owner, p *partState) *Batch {
	k.admit(o, p) // keys freed since may let more in
	var class func(keyorder.Record[keyRec]) int
	if p.att.hasCarried() {
		class = func(r keyorder.Record[keyRec]) int { return r.Val.seg.prior }
	}
	picked := k.sched.PickClass(o.conf.BatchMaxRecords, class)
	if len(picked) == 0 {
		return nil
	}
	records := make([]*kgo.Record, len(picked))
	for i, r := range picked {
		records[i] = r.Val.rec
	}
	b := &Batch{part: p, key: &keyBatch{set: picked}, raw: rawBatch{
		records: records, first: records[0].Offset, last: records[len(records)-1].Offset, logEnd: p.queue.logEnd(),
	}}
	b.prior = picked[0].Val.seg.prior
	k.out++
	k.live[b] = struct{}{}
	p.commits.handedOut(int64(len(records)))
	return b
}

// canHandOut: fewer than maxPending hand-outs out, and records free to go
// out or fetched batches that admit may let in.
func (k *keyPart) canHandOut(p *partState, maxPending int) bool {
	return k.out < maxPending && (k.sched.Ready() > 0 || p.queue.readyLen() > 0)
}

// atLimit: p's hand-outs out reached max_pending_batches, or its records
// waiting for their key reached max_held_records.
func (k *keyPart) atLimit(o *owner, _ *partState) bool {
	return k.out >= o.conf.MaxPending || k.sched.Blocked() >= o.conf.MaxHeldRecords
}

// pickable is the number of records in the scheduler that may go out now;
// held, the number waiting for their key: an earlier record of it is out.
func (k *keyPart) pickable() int { return k.sched.Ready() }
func (k *keyPart) held() int     { return k.sched.Blocked() }

// waitRetry and retryOut count a hand-out that leaves the pipeline to go
// out again later, and back in; inPipeline is what is out, not retrying.
// Held records are not out: a drain does not wait for them.
func (k *keyPart) waitRetry(*partState)      { k.retrying++ }
func (k *keyPart) retryOut(*partState)       { k.retrying-- }
func (k *keyPart) inPipeline(*partState) int { return k.out - k.retrying }

// drainsBeforeSuccessor: the successor hands out a key's records again from
// its base, and one of them must not reach the sink while an older record
// of its key is still in the pipeline (successor.go).
func (k *keyPart) drainsBeforeSuccessor() bool { return true }

// readAhead is how many records, free to go out, admit keeps in the
// scheduler: the batches the owner keeps ready under none (pollLowWater).
func (o *owner) readAhead() int { return pollLowWater * o.conf.BatchMaxRecords }
