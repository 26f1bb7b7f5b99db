package engine

import (
	"cmp"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// Every commit carries, per partition, the delivered ranges above the
// committed offset (internal/commitmeta), so that whoever is assigned the
// partition next skips what was delivered instead of delivering it again.
//
// The one way this could lose data is a skip of a record that was not
// delivered. Three rules keep it from happening: only batches whose verdict
// was Delivered are ever encoded (window.deliver is called from resolve
// only, skipped batches were delivered before); ranges are only read back
// when the header's base equals the committed offset the group just fetched
// (the commit they were written with); and the decoder refuses anything but
// sorted, disjoint ranges strictly above that offset.

// requestMetaBudget bounds the metadata of one commit request as a whole:
// 10,000 fragmented partitions at 4 KB each would make a 40 MB request.
// Beyond it, the partitions with the fewest delivered records above their
// watermark commit their header only.
const requestMetaBudget = 1 << 20

// commitSet is one commit: the offsets, and the metadata of each partition
// (nil when commit_metadata is off: kgo then writes its member ID).
type commitSet struct {
	offsets epochOffsets
	meta    map[topicPartition]string
	// after, for a final commit, is closed once the periodic commit that
	// was in flight when it was planned has its answer (nil: none was).
	// finalCommit waits for it: kgo may hold that commit back behind the
	// final one's lock and send it after (kgo cg.go:3529, 3619: a waiting
	// writer of syncCommitMu blocks new readers), so, unawaited, an older
	// periodic commit could land after the final one and move the offset
	// back.
	after <-chan struct{}
}

func (c *commitSet) add(tp topicPartition, eo kgo.EpochOffset, meta string, withMeta bool) {
	if c.offsets == nil {
		c.offsets = epochOffsets{}
	}
	setOffset(c.offsets, tp, eo)
	if withMeta {
		if c.meta == nil {
			c.meta = map[topicPartition]string{}
		}
		c.meta[tp] = meta
	}
}

func (c commitSet) empty() bool { return len(c.offsets) == 0 }

// planned is what a commit of one partition would carry now.
type planned struct {
	eo        kgo.EpochOffset
	meta      string
	stall     *commitmeta.Stall     // the stall provenance, or nil
	loss      *commitmeta.Loss      // the loss report carried, or nil
	attempts  []commitmeta.Attempts // the attempts the metadata carries
	attCut    bool                  // some attempts had no room
	gated     []*Batch              // the gated batches when it was planned (periodic commits only)
	dead      *commitmeta.DeadLetter
	ranges    int   // ranges the metadata carries
	cut       int   // ranges left out for want of room
	exposure  int64 // the replay exposure if it succeeds
	delivered int64 // records delivered above the watermark
}

// plan computes the next commit of p: its offset, and its metadata within
// maxBytes. ok is false when there is nothing to commit yet (no offset to
// resume from, or the watermark never moved and nothing above it was
// delivered).
func (o *owner) plan(p *partState, maxBytes int) (c planned, ok bool) {
	base, ok := p.commitBase()
	if !ok {
		return c, false
	}
	_, moved := p.led.watermark()
	// under key the base also moves inside the segment at the watermark
	moved = moved || p.dlv.baseMoved(p, base)
	c.eo = kgo.EpochOffset{Epoch: p.positionLeaderEpoch(base), Offset: base}
	keptTo := base
	if o.conf.CommitMetadata {
		delivered := p.deliveredRanges(base)
		if stall, stalled := o.stall(p); stalled {
			c.stall = &stall
		}
		if loss, ok := p.loss.report(); ok {
			c.loss = &loss
		}
		attempts := p.attemptRanges(base)
		if dead, ok := p.att.deadReport(); ok {
			c.dead = &dead
		}
		var k commitmeta.Kept
		c.meta, k = commitmeta.EncodeCommitKept(commitmeta.Commit{
			Base: base, Epoch: c.eo.Epoch, Stall: c.stall, Loss: c.loss,
			Attempts: attempts, DeadLetter: c.dead,
			Delivered: delivered, EpochOf: p.leaderEpochOf,
		}, maxBytes)
		c.cut, keptTo = k.Cut, k.KeptTo
		c.attempts, c.attCut = attempts[:k.Attempts], k.Attempts < len(attempts)
		kept := commitmeta.Meta{Base: base, Epoch: c.eo.Epoch, Delivered: delivered[:len(delivered)-c.cut]}
		c.ranges = len(kept.Delivered)
		c.delivered = kept.Records()
		if !moved && c.ranges == 0 && c.stall == nil && c.loss == nil && len(attempts) == 0 && c.dead == nil {
			return c, false
		}
	} else if !moved {
		return c, false
	}
	c.exposure = p.led.exposure(keptTo)
	return c, true
}

// deliveredRanges returns the delivered ranges above base: those of the
// window, and those this epoch inherited (from the commit it started from, or
// from the epoch a replay in place ended) that lie beyond what it has
// registered so far. Without the second, a new epoch's first commits would
// drop the inherited knowledge of records it has not fetched yet, and a crash
// then would deliver them again.
func (p *partState) deliveredRanges(base int64) []commitmeta.Range {
	ranges := p.delivered(base)
	return p.resume.beyond(base, p.led.frontier(base), ranges)
}

// knownDelivered returns every offset range above base that p knows was
// delivered: those of its window, and every range it inherited, also
// those its fetches passed over because the log no longer held them
// (deliveredRanges leaves those out: a commit need not carry them). What a
// loss subtracts, and what a replay in place inherits, must not forget a
// range that a deletion made the epoch jump over: a second replay would
// count its offsets lost.
func (p *partState) knownDelivered(base int64) []commitmeta.Range {
	return commitmeta.MergeRanges(p.delivered(base), p.resume.above(base))
}

// delivered returns what p delivered above base in this epoch: the window's
// delivered batches, and under key the done records of segments not
// resolved (keyPart.delivered, keyed_commit.go).
func (p *partState) delivered(base int64) []commitmeta.Range {
	return p.dlv.delivered(base, p.led.delivered(base))
}

// positionLeaderEpoch is the leader epoch that goes with base as a position, in
// a commit or a rewind: that of the record before it, which kgo and the
// broker validate (KIP-320). When p fetched no record before base, the
// commit p started from knew it, if base is that commit; otherwise the
// epoch of the record at base stands in: no older than the one before it,
// so a log truncated below base is still caught (OffsetForLeaderEpoch
// answers the end of the newest epoch not above it, at or below where the
// logs diverged), while -1 would skip the check, and a later unclean
// truncation would pass unseen. -1 only when p knows neither.
func (p *partState) positionLeaderEpoch(base int64) int32 {
	if e := p.leaderEpochBefore(base); e >= 0 {
		return e
	}
	if e, ok := p.resume.startLeaderEpoch(base); ok {
		return e
	}
	return p.led.leaderEpochAt(base)
}

// leaderEpochBefore is the leader epoch of the record p consumed last before
// base, as kgo's cursor keeps it after a fetch (lastConsumedEpoch, kgo
// source.go:748-753), or -1 when p fetched none. Kafka validates a
// position N with leader epoch E by OffsetForLeaderEpoch(E), which answers
// the start of the next epoch (kmsg OffsetForLeaderEpochResponse
// EndOffset), and kgo reports data loss when that is below N (consumer.go:
// 2847-2849). The record before base validates at base when it is at
// base-1, or when the gap between them lies inside its epoch; but where a
// commit under key passes a gap (keyPart.commitBase), the next epoch may
// have begun in the gap: then the record at base stands in
// (keyPart.leaderEpochBefore, keyed_commit.go).
func (p *partState) leaderEpochBefore(base int64) int32 {
	if e, ok := p.dlv.leaderEpochBefore(p, base); ok {
		return e
	}
	return p.led.leaderEpochAt(base - 1)
}

// leaderEpochOf returns the leader epoch of the record at offset, as far as p
// knows: from the records it fetched, or for an inherited range beyond them
// the epoch the ranges were written under.
func (p *partState) leaderEpochOf(offset int64) int32 {
	e := p.led.leaderEpochAt(offset)
	if ie, ok := p.resume.inheritedEpoch(offset); ok {
		e = max(e, ie)
	}
	return e
}

// differs reports whether c would change what the broker holds for p, or,
// unless final, what the commit in flight will make it hold. A final commit
// (a revoke's or a close's) is compared with what the broker acknowledged
// only: the periodic commit in flight may yet fail (REBALANCE_IN_PROGRESS, a
// stale member epoch, the network), and its epoch ends before its answer
// comes, so nothing would send the drained watermark again.
func (p *partState) differs(c planned, final bool) bool {
	if !final && p.commits.committing >= 0 && c.eo.Offset == p.commits.committing && c.meta == p.commits.committingMeta {
		return false
	}
	return !p.commits.hasCommitted || c.eo.Offset > p.commits.committed || (c.eo.Offset == p.commits.committed && c.meta != p.commits.committedMeta)
}

// budgetMeta keeps the metadata of a request within requestMetaBudget,
// favouring the partitions with the most delivered records above their
// watermark; the others commit their header, reports and attempts only.
func (o *owner) budgetMeta(plans map[topicPartition]*planned) {
	total := 0
	for _, c := range plans {
		total += len(c.meta)
	}
	if total <= requestMetaBudget {
		return
	}
	tps := make([]topicPartition, 0, len(plans))
	for tp := range plans {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, func(a, b topicPartition) int { return cmp.Compare(plans[b].delivered, plans[a].delivered) })
	used := 0
	for _, tp := range tps {
		c := plans[tp]
		if used+len(c.meta) <= requestMetaBudget {
			used += len(c.meta)
			continue
		}
		header, _, _ := commitmeta.EncodeCommit(commitmeta.Commit{Base: c.eo.Offset, Epoch: c.eo.Epoch, Stall: c.stall, Loss: c.loss, Attempts: c.attempts, DeadLetter: c.dead}, o.commits.metaMax)
		c.cut += c.ranges
		c.ranges = 0
		c.meta = header
		used += len(header)
	}
}

// noteCut counts the ranges a planned commit of tp left out.
func (o *owner) noteCut(p *partState, c planned) {
	if c.cut > 0 {
		o.m.metaTruncated.Incr(int64(c.cut), p.labels[:]...)
	}
}

// planChange plans p's next commit and reports whether it changes what the
// broker holds (or will, once the commit in flight lands): only such a plan
// is sent. A plan that changes nothing still counts the ranges it cut. The
// metadata may have been committed whole when it filled the room exactly:
// every plan since cuts the ranges delivered after and encodes the same, and
// those ranges are left out all the same. A plan that is sent counts its cut
// when it is sent, after budgetMeta may have cut more.
//
// final plans a revoke's or a close's commit (see differs).
func (o *owner) planChange(p *partState, final bool) (planned, bool) {
	c, ok := o.plan(p, o.commits.metaMax)
	if !ok {
		return c, false
	}
	if !p.differs(c, final) {
		o.noteCut(p, c)
		return c, false
	}
	return c, true
}
