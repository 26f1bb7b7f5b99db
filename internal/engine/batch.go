package engine

import (
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// rawBatch is a run of fetched records of one partition, in offset order,
// not yet converted to Benthos messages. A skip batch is registered and
// resolved delivered at once, never handed out: it holds records that a
// commit's delivered ranges show delivered, or (control) transaction
// markers, which are no data but whose offsets the watermark must pass.
type rawBatch struct {
	records     []*kgo.Record
	first, last int64
	logEnd      int64 // the partition's log end when fetched, for kafka_lag
	skip        bool
	control     bool
}

// Batch is one registered batch between the owner and the sink. The
// owner creates it at registration and hands the same value out again on a
// retry; ReadBatch converts raw to fresh messages on every hand-out, so a
// retry never sees what processors did to an earlier attempt's messages.
//
// part, seq and raw never change after creation and may be read from any
// goroutine; attempt and unread are the owner's, but the reader that
// received b reads attempt before it makes the ack function (the owner
// changes it only on a retry, after that ack was applied). acked is the one
// field the ack functions write.
//
// A Batch belongs to one epoch and is never reused or pooled: a late
// ack, whatever its epoch or hand-out, touches only its own batch.
//
// Of its exported methods, TakeAck is safe for concurrent use; Records and
// LogEnd read what never changes; Attempt is read by the reader that
// received the batch, before the hand-out's ack function exists.
type Batch struct {
	part    *partState
	seq     uint64
	raw     rawBatch
	attempt int  // 0 on first delivery
	unread  bool // given back by a cancelled ReadBatch: not an attempt
	// acked is the once-guard of this batch's ack functions, one for each
	// hand-out: the attempt whose ack was last let through, plus one (0:
	// none yet). It only grows (takeAck), so a second ack of a hand-out,
	// and an ack of a hand-out older than one already acknowledged, are
	// both duplicates.
	acked atomic.Int64
	// only holds the indices in raw.records of the records the next
	// attempt re-delivers: those a batch error named failed. nil: all.
	// Only a batch error naming records changes it: a plain nack of a
	// narrowed retry fails what that retry held, not the whole batch.
	only []int
	// nackedAt is the first nack of this batch, zero if none; lastErr is
	// the error class of the last one (internal/errclass/errclass.go).
	nackedAt time.Time
	lastErr  string
	// prior is the attempts made on b's records before this epoch
	// (attempts.go); gated says its attempts are carried in commits since it
	// waited for the gate, until it is resolved.
	prior int
	gated bool
	// deadLettering: its dead-letter write is in flight, as attempt
	// letterAttempts; deadLetterErr is the error class of the write's last
	// failure ("" while it has none).
	deadLettering  bool
	letterAttempts int
	deadLetterErr  string
	// txnOut, under exactly once, says b is counted in the pipeline
	// (txnPart.out): handed out, or its dead-letter write in flight.
	txnOut bool
	// key is b's part in ordering: key (keyed.go), nil under none: one
	// pointer, so that none's batches stay the size they were.
	key *keyBatch
}

// TakeAck claims the ack of b's hand-out of attempt (Attempt, read when the
// ack function is made): true once for that hand-out, false for a
// second ack of it and for any ack of an older hand-out, which the guard
// has passed. A hand-out that a cancelled ReadBatch gave back made no ack
// function, and the next one shares its attempt. Safe for concurrent use:
// a sink may ack one hand-out from two goroutines at once, and only one of
// them wins the CompareAndSwap.
func (b *Batch) TakeAck(attempt int) bool {
	h := int64(attempt) + 1
	for {
		last := b.acked.Load()
		if last >= h {
			return false
		}
		if b.acked.CompareAndSwap(last, h) {
			return true
		}
	}
}

// Attempt is the hand-out b is on: 0 for its first delivery. Read it when
// the hand-out's ack function is made (TakeAck's argument): the owner
// changes it only on a retry, after that ack was applied.
func (b *Batch) Attempt() int { return b.attempt }

// Records returns the records this hand-out of b delivers, in offset order,
// and sent, which maps each index into them to its index in the whole
// batch: a retry after a batch error that named the failed records delivers
// only those (b.only); sent is nil when the hand-out is the whole batch.
// The records are shared, never to be changed.
func (b *Batch) Records() (records []*kgo.Record, sent []int) {
	if b.only == nil {
		return b.raw.records, nil
	}
	records = make([]*kgo.Record, len(b.only))
	for i, r := range b.only {
		records[i] = b.raw.records[r]
	}
	return records, b.only
}

// LogEnd is the partition's log end when b was fetched (for kafka_lag), or
// -1 when not known.
func (b *Batch) LogEnd() int64 { return b.raw.logEnd }
