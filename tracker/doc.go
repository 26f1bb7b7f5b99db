// Package tracker computes, for one Kafka partition, the offset that is safe to
// commit when batches are acknowledged out of order.
//
// # Vocabulary
//
// A batch is a run of records of one partition, handed to the pipeline as a
// unit. The driver registers every batch in the order it is issued with a
// sequence number (0, 1, 2, ...) and the offset of its last record, which
// strictly increases from batch to batch; a gap in the sequence or a last
// offset that does not increase is a driver bug and panics. Sinks resolve
// batches in any order, as Delivered or Failed.
//
// The watermark is one past the last offset of the contiguous prefix of
// delivered batches: the offset a consumer resumes from, and so the only offset
// that may be committed. Three invariants hold for the life of a tracker:
//
//   - The watermark never moves backwards.
//   - Nothing at or above the first unresolved batch is ever committable: an
//     acknowledgement that arrives early waits for every batch before it.
//   - A failed batch that reaches the head of the window stalls the tracker for
//     good. What was delivered before it is still reported; nothing after it
//     ever is. Replay after a restart or reassignment starts at the failed
//     batch (at-least-once, never silent loss).
//
// The tracker counts batches, not offsets, so offset gaps (compaction,
// transaction markers) need no special case: a batch's successor starts
// wherever the log continues.
//
// # Concurrency
//
// A PartitionTracker is not safe for concurrent use. The input's owner
// goroutine holds every tracker and serialises all calls; acks reach it over a
// channel.
package tracker
