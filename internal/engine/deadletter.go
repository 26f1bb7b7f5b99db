package engine

import (
	"context"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
	"github.com/watermark-connect/watermark-connect/internal/errclass"
)

// With a dead-letter topic every stall has an ending: a batch whose records
// were tried dead_letter.max_attempts times (attempts.go) is written to the
// dead-letter topic, and only once the broker acknowledged that write does
// it resolve, as delivered: the commit barrier. Until then the batch holds
// its partition's watermark like any failed batch, and a write that fails
// is retried with backoff, counted and shown in the stall provenance, so
// nothing is committed past a record that reached neither the sink nor the
// dead-letter topic. A crash between the write and the commit writes the
// record again after the restart (at-least-once), never zero times.

// DeadLetterWriter writes dead letters: the plugin's producer, which knows
// the topic and the headers. Write returns once the broker acknowledged
// every record, with the topic(s) written, or the first error; it is called
// from a goroutine of its own per batch, and must be safe for concurrent
// use. The tries of one batch pass the same *Letter, one at a time: the
// writer may keep what it worked out (Topics) for the next try.
type DeadLetterWriter interface {
	Write(ctx context.Context, l *Letter) (dest string, err error)
}

// Letter is one batch's records to dead-letter and what is known of their
// failures. The records are shared, never to be changed.
type Letter struct {
	Records     []*kgo.Record
	Attempts    int
	Error       string // the error class of the last failure
	FirstFailed time.Time
	Member      string
	// Topics is the writer's: the dead-letter topic of each record, which
	// it works out on its first try and keeps for the next, so that every
	// try of a record goes to the same place.
	Topics []string
}

// deadLetterDone is the outcome of one try of a dead-letter write.
type deadLetterDone struct {
	b    *Batch
	dest string
	err  error
	wait time.Duration // before the next try, when err is set
}

// deadLetters reports whether a dead-letter topic is configured.
func (o *owner) deadLetters() bool { return o.conf.DeadLetter != nil }

// deadLetterNow reports whether nacked b goes to the dead-letter topic now:
// its records reached max_attempts, or its in-process retries are spent and
// no replay in place would try it again.
func (o *owner) deadLetterNow(p *partState, b *Batch) bool {
	if !o.deadLetters() || p.draining {
		return false
	}
	return b.tried() >= o.conf.MaxAttempts || (!o.retriesLeft(b) && o.conf.StallReplayAfter <= 0)
}

// deadLetter starts the write of b's records that failed (b.only, or all)
// to the dead-letter topic. b stays unresolved and in the pipeline (a drain
// waits for the write) until the write's outcome comes back.
func (o *owner) deadLetter(p *partState, b *Batch, attempts int) {
	records, _ := b.Records()
	l := Letter{Records: records, Attempts: attempts, Error: b.lastErr, FirstFailed: b.nackedAt, Member: o.commits.member}
	if l.Error == "" {
		l.Error, _ = p.att.provenance()
	}
	// The batch at the offset this epoch started from failed before it
	// (a replay in place, a restart): its first failure is that stall's.
	if _, since := p.att.provenance(); b.prior > 0 && p.resume.startsAt(b.raw.first) && !since.IsZero() &&
		(l.FirstFailed.IsZero() || since.Before(l.FirstFailed)) {
		l.FirstFailed = since
	}
	// Stalled from now until written, also when it was not handed out in
	// this epoch (stallInfo).
	if b.nackedAt.IsZero() {
		b.nackedAt, b.lastErr = l.FirstFailed, l.Error
		if b.nackedAt.IsZero() {
			b.nackedAt = o.now()
		}
		o.markDirty(p)
		o.lists.gauges.add(p)
	}
	ctx, cancel := context.WithCancel(o.ioCtx)
	p.att.startWrite(b, cancel)
	o.txnHandedOut(b)
	b.deadLettering, b.letterAttempts = true, attempts
	go o.writeDeadLetter(ctx, b, l, p.labels)
}

// writeDeadLetter tries the write until it succeeds or ctx ends (the epoch
// ended, or the input stopped: the next owner writes the records again).
// Runs on a goroutine of its own.
func (o *owner) writeDeadLetter(ctx context.Context, b *Batch, l Letter, labels [2]string) {
	wait := o.conf.NackBackoff
	for {
		dest, err := o.conf.DeadLetter.Write(ctx, &l)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			o.m.deadLetterErrors.Incr(1, labels[:]...)
		}
		select {
		case o.inbox.deadLetterCh <- deadLetterDone{b: b, dest: dest, err: err, wait: wait}:
		case <-ctx.Done():
			return
		}
		if err == nil {
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		wait = min(2*wait, o.conf.NackMaxBackoff)
	}
}

// onDeadLetterDone applies one try's outcome: a failed write shows in the
// stall provenance and the log and is tried again; a written batch resolves
// as delivered, which moves the watermark.
func (o *owner) onDeadLetterDone(d deadLetterDone) {
	b, p := d.b, d.b.part
	if o.txn.on && d.err != nil {
		o.txnDeadLetterFailed(b, d.err)
		return
	}
	o.txnSettled(b, nil, !p.live())
	if !p.live() {
		return // the epoch ended: the next owner writes them again
	}
	if d.err != nil {
		b.deadLetterErr = errclass.Class(d.err)
		o.markDirty(p) // the stall provenance names the failing write
		o.lists.gauges.add(p)
		o.log.Errorf("kafka_watermark: cannot write %s/%d offsets %d-%d to the dead-letter topic, retrying in %v; the partition stays stalled: %v",
			p.tp.topic, p.tp.partition, b.raw.first, b.raw.last, d.wait, d.err)
		return
	}
	p.att.endWrite(b)
	records, _ := b.Records()
	n := int64(len(records))
	first, last := records[0].Offset, records[len(records)-1].Offset
	o.m.deadLettered.Incr(n, p.labels[:]...)
	o.log.Warnf("kafka_watermark: dead-lettered %d record(s) of %s/%d offsets %d-%d to %s after %d attempt(s); last error: %s",
		n, p.tp.topic, p.tp.partition, first, last, d.dest, b.letterAttempts, letterError(b))
	o.carryDeadLetter(p, commitmeta.DeadLetter{Report: commitmeta.Report{First: first, Last: last, Since: o.now(), Reason: cutReason(letterError(b))}, Count: n})
	b.deadLettering, b.deadLetterErr = false, ""
	o.resolve(b, nil)
}

// carryDeadLetter adds d to the dead-letter report p's commits carry, for
// dead_letter.report_for.
func (o *owner) carryDeadLetter(p *partState, d commitmeta.DeadLetter) {
	if o.conf.DeadLetterReportFor <= 0 || !o.conf.CommitMetadata {
		return
	}
	p.att.addReport(d)
	o.lists.losses.add(p)
	o.markDirty(p)
}

// cancelDeadLetters stops the dead-letter writes of an epoch that ends.
func (p *partState) cancelDeadLetters() { p.att.cancelWrites() }

// startWrite records cancel, which stops the dead-letter write of b now
// in flight.
func (a *attemptPart) startWrite(b *Batch, cancel func()) {
	if a.writes == nil {
		a.writes = map[*Batch]func(){}
	}
	a.writes[b] = cancel
}

// endWrite forgets the dead-letter write of b, which landed, releasing its
// context.
func (a *attemptPart) endWrite(b *Batch) {
	if cancel := a.writes[b]; cancel != nil {
		cancel()
		delete(a.writes, b)
	}
}

// cancelWrites stops every dead-letter write in flight.
func (a *attemptPart) cancelWrites() {
	for b, cancel := range a.writes {
		cancel()
		delete(a.writes, b)
	}
}

// addReport adds d to the dead-letter report commits carry.
func (a *attemptPart) addReport(d commitmeta.DeadLetter) {
	a.report = commitmeta.MergeDeadLetter(a.report, d)
}

// letterError is the error class a dead letter of b carries: its last failure's, or
// the one its carried attempts came with.
func letterError(b *Batch) string {
	if b.lastErr != "" {
		return b.lastErr
	}
	reason, _ := b.part.att.provenance()
	return reason
}

// cutReason cuts an error class to what the metadata's reasons hold, after
// the last whole word that fits, as errclass cuts a class: a prefix such as
// "dead_letter_write: " pushed a class of 120 bytes over, and the byte cut
// ended the stall reason mid-word. A first word longer than the limit is
// cut where the limit falls.
func cutReason(s string) string {
	if len(s) <= commitmeta.MaxReasonLen {
		return s
	}
	cut := s[:commitmeta.MaxReasonLen]
	if s[commitmeta.MaxReasonLen] == ' ' {
		return cut
	}
	if i := strings.LastIndexByte(cut, ' '); i > 0 {
		return strings.TrimRight(cut[:i], " ")
	}
	return cut
}
