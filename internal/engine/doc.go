// Package engine is the kafka_watermark input's engine: it consumes Kafka
// topics in a consumer group with franz-go and commits, per partition, only
// the watermark computed by package tracker, so an offset is never committed
// past a batch that is unacknowledged or failed.
//
// # Epochs
//
// Each assignment of a partition to this member is an epoch, represented by
// one partState value: created on assign, dropped after a revoke's drain, at
// close, or at once on a loss. A batch and its ack carry the partState they were
// registered in; an ack whose partState is no longer the live one is late,
// counted and ignored, so a revoked (even re-assigned) partition's tracker
// is never touched by acks of an earlier epoch.
//
// # The life of an ack
//
//  1. ReadBatch asks the owner for a batch; the owner registers it with its
//     partition's tracker (the next sequence, the batch's last offset) and
//     hands it out. ReadBatch converts its records to fresh messages and
//     returns them with an ack function bound to that batch and epoch.
//  2. The sink calls the ack function, from any goroutine, in any order. A
//     once-guard in the batch lets the first call of each hand-out through
//     (inflight.takeAck); it is one channel send to the owner, and never
//     waits on the network.
//  3. The owner drops an ack of an ended epoch (late), schedules a retry
//     for a nack with retries left, or resolves the batch in the tracker,
//     which advances the watermark over the delivered prefix.
//  4. On the next commit tick the owner gives the committer every live
//     partition whose watermark is ahead of its last commit, with the leader
//     epoch of the record before it.
//  5. The committer sends one OffsetCommit through kgo and reports each
//     partition's result back to the owner, which records what the broker
//     accepted; a refused partition is simply tried again next tick.
//  6. The broker stores the offset: the group resumes there after a crash.
//     A revoke or a close commits its final watermarks synchronously
//     instead, on kgo's callback goroutine or in Close.
//
// # Goroutines
//
//   - owner (owner.run): holds every partState and tracker. Fed by ReadBatch
//     requests, acks, poll results, rebalance callbacks, commit results,
//     retry timers and its clocks (commit, gauges, log ends), all over
//     channels. Never does network I/O: the few kgo calls it makes go
//     through groupClient and only flip client state, so acks are never
//     delayed by a slow broker.
//   - poller (startPoller): polls kgo when the owner hands it a token and
//     passes the fetches to the owner; it lets rebalances proceed only after
//     the owner has queued them (BlockRebalanceOnPoll).
//   - committer (owner.committer): runs one periodic commit at a time and
//     reports each partition's result to the owner.
//   - a log-end query (owner.queryEnds), at most one at a time, every
//     topic_lag_refresh_period while a partition is paused.
//   - kgo's group goroutine runs the rebalance callbacks: they ask the owner
//     to drain and commit the final watermark synchronously, bounded by
//     drain_timeout and rebalance_timeout.
//   - Benthos's reader calls ReadBatch; sinks call ack functions from any
//     goroutine; each ack is once-guarded and is a channel send.
//   - with timely_nacks_maximum_wait, Benthos's wrapper
//     (service.ForceTimelyNacksBatched) runs a timer goroutine per batch in
//     flight; at the wait it nacks the batch through the same ack function,
//     and the sink's later verdict is dropped by the wrapper's own once-guard.
//
// The goroutines' lifecycle follows a shutdown.Signaller: Close stops the
// poller, asks the owner for every partition's final watermark (revokes
// still draining are answered, after Close's commit, with nothing to
// commit), commits once, leaves the group and then stops the owner.
package engine
