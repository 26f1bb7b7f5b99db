package engine

import (
	"slices"
	"time"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// An attempt is one hand-out of a record to the pipeline. Attempts are
// counted per batch in this epoch (Batch.attempt) on top of those made
// before it (Batch.prior): in an epoch that a replay in place ended, or by
// any process before, read back from the commit an epoch starts from. Every
// commit carries the attempts of the batches that failed at least once, by
// offset range (commitmeta.Attempts: a replay may cut batches differently),
// so they survive restarts, rebalances and replays.
//
// With a dead-letter topic, a batch that failed goes out again only after a
// commit that carries its new count was acknowledged (the gate), and so
// does the first batch at the watermark of an epoch: a record that crashes
// the process is counted too, and a crash loop ends in the dead-letter
// topic after dead_letter.max_attempts. What can still be forgotten is a
// first delivery above the watermark cut short by a crash: it was never
// committed as an attempt; and an attempt the commit metadata has no room
// for (commit_metadata_max_bytes): the batch then goes out without waiting
// for a commit that will never carry it (ungate), and a crash during that
// hand-out is not counted.

// attemptPart is an epoch's part in counting attempts and dead-lettering.
//
// Invariants, kept by its methods (here and in deadletter.go), the only
// writers of its fields:
//   - carried, reason, since and stall are what the epoch inherited
//     (inherit, follow), and do not change after;
//   - carried is sorted and disjoint, its ranges may touch;
//   - every batch of gated is registered, unresolved and counted retrying
//     in the ledger (not in the pipeline): hold adds one the caller has
//     counted so, release takes out those it lets go;
//   - firstOut only turns true (serveFirst);
//   - report only grows (addReport) until it expires whole (expireReport);
//   - writes holds a cancel for every batch whose dead-letter write is in
//     flight (startWrite), until it lands (endWrite) or the epoch ends
//     (cancelWrites).
//
// Owned by the owner goroutine, inside its partState.
type attemptPart struct {
	// carried holds the attempts made before this epoch, by offset range.
	// The queue cuts batches at its boundaries (enqueue), so a batch lies
	// within one range or outside all of them.
	carried []commitmeta.Attempts
	// reason and since are the last error class and first failure the
	// carried attempts came with (the stall provenance of the commit), for
	// the dead letters of records dead-lettered without a hand-out here.
	reason string
	since  time.Time
	// stall is the stall provenance of the commit the epoch started from,
	// when it names the batch at that commit's offset: the partition goes
	// on showing it (stallInfo) until the batch is delivered, through the
	// restart or rebalance that made this epoch.
	stall *commitmeta.Stall
	// gated are the batches waiting for a commit that carries their next
	// attempt; firstOut says the epoch has served its first batch (handed
	// out, gated or dead-lettered).
	gated    []*Batch
	firstOut bool
	// report is the dead-letter report commits carry (Count 0: none), for
	// dead_letter.report_for.
	report commitmeta.DeadLetter
	// writes are the dead-letter writes in flight, each cancelled when the
	// epoch ends.
	writes map[*Batch]func()
}

// hasCarried reports whether attempts were carried from before the epoch.
func (a *attemptPart) hasCarried() bool { return len(a.carried) > 0 }

// provenance is the error class and first failure the carried attempts
// came with (zero: none).
func (a *attemptPart) provenance() (reason string, since time.Time) { return a.reason, a.since }

// stallAt is the stall provenance the epoch started from, if it names the
// batch at base.
func (a *attemptPart) stallAt(base int64) (commitmeta.Stall, bool) {
	if a.stall != nil && a.stall.First == base {
		return *a.stall, true
	}
	return commitmeta.Stall{}, false
}

// inherit takes the attempts and the stall provenance of d, the commit the
// epoch starts from, and its dead-letter report when report says it is
// still to be carried.
func (a *attemptPart) inherit(d commitmeta.Decoded, report bool) {
	if report {
		a.report = *d.DeadLetter
	}
	a.carried = d.Attempts
	if d.Stall != nil {
		a.reason, a.since = d.Stall.Reason, d.Stall.Since
		if d.Stall.First == d.Base {
			s := *d.Stall
			a.stall = &s
		}
	}
}

// follow makes a the part of old's successor, which starts at base and
// whose log holds old's records below holdsTo: carried are old's attempts
// the new log holds (cutAttempts); the provenance goes on, that of stalled
// when old's head failed below holdsTo (hasStalled), and so does old's stall
// when it names base below holdsTo; the dead-letter report goes on whole.
func (a *attemptPart) follow(old *attemptPart, carried []commitmeta.Attempts, base, holdsTo int64, stalled commitmeta.Stall, hasStalled bool) {
	a.carried = carried
	a.reason, a.since = old.reason, old.since
	if hasStalled && stalled.First < holdsTo {
		a.reason, a.since = stalled.Reason, stalled.Since
	}
	if st := old.stall; st != nil && st.First == base && st.First < holdsTo {
		a.stall = st
	}
	a.report = old.report
}

// serveFirst reports whether the epoch's first batch is being served now
// (handed out, gated or dead-lettered), and marks it served.
func (a *attemptPart) serveFirst() bool {
	first := !a.firstOut
	a.firstOut = true
	return first
}

// hold adds b to gated; the caller counted it retrying (waitRetry).
func (a *attemptPart) hold(b *Batch) { a.gated = append(a.gated, b) }

// holding reports whether a batch waits for the gate.
func (a *attemptPart) holding() bool { return len(a.gated) > 0 }

// gatedNow returns a copy of gated, for a plan to remember.
func (a *attemptPart) gatedNow() []*Batch { return slices.Clone(a.gated) }

// release takes out of gated, in order, the batches let returns true for,
// and keeps the others in their order.
func (a *attemptPart) release(let func(*Batch) bool) {
	kept := a.gated[:0]
	for _, b := range a.gated {
		if !let(b) {
			kept = append(kept, b)
		}
	}
	clear(a.gated[len(kept):])
	a.gated = kept
}

// reporting reports whether commits carry a dead-letter report.
func (a *attemptPart) reporting() bool { return a.report.Count > 0 }

// deadReport is the dead-letter report commits carry, if any.
func (a *attemptPart) deadReport() (commitmeta.DeadLetter, bool) { return a.report, a.report.Count > 0 }

// expireReport drops the dead-letter report once it is reportFor old at now,
// and reports whether it did.
func (a *attemptPart) expireReport(now time.Time, reportFor time.Duration) bool {
	if a.report.Count > 0 && now.Sub(a.report.Since) >= reportFor {
		a.report = commitmeta.DeadLetter{}
		return true
	}
	return false
}

// priorAttempts returns the attempts carried for the records first..last:
// the most of any carried range they overlap.
func (a *attemptPart) priorAttempts(first, last int64) int {
	n := int32(0)
	for _, r := range a.carried {
		if r.From <= last && first < r.To {
			n = max(n, r.N)
		}
	}
	return int(n)
}

// cutsAt reports whether a batch must start at offset: a boundary of a
// carried range lies between offset-1 and offset.
func (a *attemptPart) cutsAt(offset int64) bool {
	for _, r := range a.carried {
		if r.From == offset || r.To == offset {
			return true
		}
	}
	return false
}

// tried is how many times b's records were handed out, counting the
// hand-out it is on or waits for (the gated one): at least 1.
func (b *Batch) tried() int { return b.prior + b.attempt + 1 }

// DeliveryAttempt is the attempt this hand-out of b is, counting those made
// before this epoch and before this process: 1 on the first delivery, as
// kafka_delivery_attempt says.
func (b *Batch) DeliveryAttempt() int { return b.tried() }

// counted reports whether b's attempts are carried in commits: it failed,
// or it waits for the gate, or it was tried before this epoch.
func (b *Batch) counted() bool { return !b.nackedAt.IsZero() || b.gated || b.prior > 0 }

// appendRanges appends the offset ranges of b's records that its attempts
// count for, as its partition's delivery draws them (appendAttempts: under
// none the records a batch error named, b.only, or else the whole batch;
// under key each run of adjacent offsets of the hand-out). The count is
// tried(), the hand-out b waits for included, except once b's epoch drains
// toward its end: then only the hand-outs made.
func (b *Batch) appendRanges(dst []commitmeta.Attempts) []commitmeta.Attempts {
	n := b.tried()
	switch {
	case b.deadLettering:
		n = b.letterAttempts // no hand-out pending: the write is the ending
	case b.unread && b.part.draining:
		// Its epoch ends before the hand-out it waits for (gated, or
		// given back by a cancelled read): what comes next counts the
		// hand-outs made, or a record would be dead-lettered after fewer
		// deliveries than dead_letter.max_attempts.
		n--
	}
	if n == 0 {
		return dst // gated as an epoch's first batch, never handed out
	}
	return b.part.dlv.appendAttempts(dst, b, int32(min(n, 1<<31-1)))
}

// attemptRanges returns the attempts a commit of p at base carries: those
// of its counted batches, then the carried ranges beyond what it has
// registered, sorted and disjoint, each at or above base.
func (p *partState) attemptRanges(base int64) []commitmeta.Attempts {
	// The window's batches start at or above base (the watermark, or before
	// it moved the offset the epoch started at), and the frontier is at
	// least base: every range is at or above it, as EncodeCommit requires.
	return p.dlv.attemptRanges(p, base)
}

// carriedBeyond appends to out the carried attempts beyond what p has
// registered: out's ranges all lie below that frontier.
func (p *partState) carriedBeyond(base int64, out []commitmeta.Attempts) []commitmeta.Attempts {
	frontier := p.led.frontier(base)
	for _, r := range p.att.carried {
		if r.To > frontier {
			r.From = max(r.From, frontier)
			out = append(out, r)
		}
	}
	return out
}

// gateHolds reports whether b must wait for a commit of its next attempt
// before it goes out: with a dead-letter topic, a batch that failed before
// (in this epoch or earlier), and the first batch of an epoch (first) at its
// watermark. b's attempt is the hand-out it waits for.
func (o *owner) gateHolds(p *partState, b *Batch, first bool) bool {
	if o.conf.DeadLetter == nil || !o.conf.CommitMetadata {
		return false
	}
	if b.attempt == 0 && b.prior == 0 {
		base, ok := p.commitBase()
		if !first || !ok || b.raw.first != base {
			return false
		}
	}
	return !p.commits.carries(b)
}

// gate holds b back until a commit carries its next attempt, and asks for
// that commit now. b.gated stays set: its attempts are carried from now on
// until it is resolved, so a crash during the hand-out it waits for counts.
// b.unread says the hand-out is counted already: when ungate lets b out,
// serve neither counts it again nor gates it again.
func (o *owner) gate(p *partState, b *Batch) {
	b.gated = true
	b.unread = true // the hand-out it waits for is counted already
	p.waitRetry()
	p.att.hold(b)
	o.markDirty(p)
	o.commitSoon()
}

// ungate lets out the gated batches of p that may go: those whose attempt
// the broker now holds, and those no commit will carry, said once per batch
// (a room too small must not wedge the partition). A commit cannot carry a
// batch when its plan had no room for the batch's attempts
// (commit_metadata_max_bytes, or less after a refusal): noRoom holds the
// batches gated when the landed commit was planned, if it cut attempts.
// And when the plan sends nothing (all), because it equals what the broker
// holds: the room was too small before, and only a landed commit let the
// gate open, so the retry waited for good and the partition's head with it.
func (o *owner) ungate(p *partState, noRoom []*Batch, all bool) {
	if !p.att.holding() || p.draining {
		return
	}
	p.att.release(func(b *Batch) bool {
		if !p.commits.carries(b) {
			if !all && !slices.Contains(noRoom, b) {
				return false // gated since: the next plan may carry it
			}
			o.log.Warnf("kafka_watermark: %s/%d offsets %d-%d go out as attempt %d before a commit carried it: the commit metadata had no room for it (%s)",
				p.tp.topic, p.tp.partition, b.raw.first, b.raw.last, b.tried(), FieldCommitMetadataMaxBytes)
		}
		p.queue.addRetry(b)
		return true
	})
	o.schedule(p)
}

// carries reports whether the attempts the broker holds for this epoch
// count b's records at least b.tried() times.
func (c *commitState) carries(b *Batch) bool {
	for _, want := range b.appendRanges(nil) {
		ok := false
		for _, r := range c.attempts {
			if r.From <= want.From && want.To <= r.To && r.N >= want.N {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// inheritAttempts takes the attempts and the dead-letter report that the
// commit p starts from carries.
func (o *owner) inheritAttempts(p *partState, d commitmeta.Decoded) {
	report := d.DeadLetter != nil && o.conf.DeadLetterReportFor > 0 && time.Since(d.DeadLetter.Since) < o.conf.DeadLetterReportFor
	p.att.inherit(d, report)
	if report {
		o.lists.losses.add(p)
	}
}

// commitSoon starts a commit now, or right after the one in flight.
func (o *owner) commitSoon() {
	if o.commits.committing {
		o.commits.again = true
		return
	}
	o.commit()
}
