// Package plugin is the kafka_watermark Benthos input: it consumes Kafka
// topics in a consumer group with franz-go and commits, per partition, only
// the watermark computed by package tracker, so an offset is never committed
// past a batch that is unacknowledged or failed.
//
// # Epochs
//
// Each assignment of a partition to this member is an epoch, represented by
// one partState value: created on assign, dropped after a revoke's drain or
// at once on a loss. A batch and its ack carry the partState they were
// registered in; an ack whose partState is no longer the live one is late,
// counted and ignored, so a revoked (even re-assigned) partition's tracker
// is never touched by acks of an earlier epoch.
//
// # Goroutines
//
//   - owner (owner.run): holds every partState and tracker. Fed by ReadBatch
//     requests, acks, poll results, rebalance callbacks, commit results,
//     retry timers and the commit ticker, all over channels. Never does
//     network I/O, so acks are never delayed by a slow broker.
//   - poller (startPoller): polls kgo when the owner hands it a token and
//     passes the fetches to the owner; it lets rebalances proceed only after
//     the owner has queued them (BlockRebalanceOnPoll).
//   - committer (owner.committer): runs one periodic commit at a time and
//     reports each partition's result to the owner.
//   - kgo's group goroutine runs the rebalance callbacks: they ask the owner
//     to drain and commit the final watermark synchronously, bounded by
//     drain_timeout and rebalance_timeout.
//   - Benthos's reader calls ReadBatch; sinks call ack functions from any
//     goroutine; each ack is once-guarded and is a channel send.
//
// The goroutines' lifecycle follows a shutdown.Signaller: Close stops the
// poller, asks the owner to drain every partition, commits, leaves the group
// and then stops the owner.
package plugin
