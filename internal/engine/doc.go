// Package engine is the kafka_watermark input's engine: the owner goroutine
// that registers every batch it hands out, applies acknowledgements in any
// order, and commits per partition only the watermark of the delivered
// batches, so an offset is never committed past a batch that is
// unacknowledged or failed. The plugin package is its Benthos face: it parses
// the config, builds the kgo client with Options, and puts Read, Ack and
// Close to Benthos's use.
//
// # Vocabulary
//
//   - An assignment epoch ("epoch" alone, always) is one assignment of a
//     partition to this member, represented by one partState: made on
//     assign, on a replay in place or after a truncation, ended after a
//     revoke's drain, at close, at once on a loss, or when a replay or a
//     truncation makes the next one. A batch and its ack carry the partState
//     they were registered in; an ack of an ended epoch is late, counted and
//     ignored.
//   - A leader epoch is Kafka's (KIP-320): the epoch of the partition
//     leader that wrote a record. Every name that means it says so.
//   - The watermark is one past the last offset of the contiguous delivered
//     prefix: the offset a commit carries and a consumer resumes from. It
//     never moves backwards within an epoch (after a truncation, one
//     commit goes back: loss.go).
//   - A partition is stalled while the batch at its watermark has been
//     nacked and is not delivered, whether it waits for a retry or has
//     failed for good (the README's word; stall.go). A batch has failed
//     for good when its retries are spent: the tracker then calls it
//     stalled, which this package calls headFailed.
//   - An offset is lost when the log no longer holds it and it was not
//     delivered; truncated when it was delivered from a log that an unclean
//     election then rewrote (loss.go).
//   - Delivered ranges are the offsets above the watermark already
//     delivered; every commit carries them (plan.go), and the next epoch
//     skips them (resume.go).
//   - An attempt is one hand-out of a record to the pipeline, counted
//     across retries, replays in place and processes (attempts.go): the
//     commits carry those of the batches that failed, by offset range.
//   - A record is dead-lettered when, after dead_letter.max_attempts, it
//     was written to the dead-letter topic and the broker acknowledged the
//     write: it then counts as delivered (deadletter.go).
//   - Under exactly once (exactly_once), a commit is a transaction's end:
//     the pipeline is empty when it ends (the barrier), and an abort ends
//     every live epoch in a successor at its last commit; see txn.go.
//
// # State
//
// One goroutine owns all state; one struct does not hold it. A partState is
// made of parts, each declared in the file that keeps it (the list is on
// partState, assignment.go): led (ledger.go: what is registered: the
// tracker, the window, the leader epochs and the counts, updated together
// by register, resolve and advance), queue (queue.go: batches waiting to go
// out), resume (resume.go: the commit the epoch started from), commits
// (commit.go: what the broker holds), replay (replay.go), loss (loss.go),
// att (attempts.go: the attempts carried, the gate, the dead-letter writes)
// and dlv (delivery.go: the ordering mode; under ordering: key a keyPart,
// keyed.go: the key scheduler, the done offsets and the hand-outs out).
// led, queue, resume, att and loss change only through their own methods,
// declared in their files; each type's comment lists the invariants those
// methods keep, as ledger's does. No part is plain data by design: commits
// and replay are still read and written from other files (issue 28), and
// led's lastMoved and window are read outside ledger.go.
// The owner's own state is in parts
// too: inbox (owner.go), lists (lists.go), polls (replay.go), commits
// (commitLoop, commit.go), queries (lag.go), lost (lossBook, lossbook.go),
// fence (fence.go).
//
// # The life of an ack
//
//  1. Engine.Read (api.go) asks the owner for a batch; serve (handout.go)
//     registers it in its partition's ledger (register, ledger.go) and
//     hands it out. Under ordering: key, keyPart.admit (keyed.go)
//     registers fetched segments as they arrive, and serve hands out a set
//     of their records that keyPart.next (keyed.go) chose.
//     The plugin converts its records to fresh messages and makes an ack
//     function bound to that batch and hand-out (plugin/input.go).
//  2. The sink calls the ack function, from any goroutine, in any order. A
//     once-guard in the batch lets the first call of each hand-out through
//     (Batch.TakeAck, batch.go); Engine.Ack is one channel send, and never
//     waits on the network.
//  3. The owner (owner.go, run and drainAcks) drops an ack of an ended epoch,
//     schedules a retry for a nack with retries left, starts the write of a
//     nack that reached max_attempts to the dead-letter topic (deadletter.go:
//     the batch resolves as delivered once the broker acknowledged it), or
//     resolves the batch in the ledger, which advances the watermark (ack.go,
//     ledger.go). With a dead-letter topic, a retry, and an epoch's first
//     batch at its watermark, go out only after a commit carries their new
//     attempt, or once no commit has room for it (the gate, attempts.go).
//  4. On the next commit tick (commit.go) the owner plans a commit of every
//     partition on its dirty list (plan.go): the watermark, with the leader
//     epoch of the record before it, and its metadata
//     (commitmeta.EncodeCommitKept: the delivered ranges, the stall, the
//     loss, the attempts and the dead-letter report).
//     It is sent when it changes what the broker holds: a higher offset, or
//     the same offset with other metadata (a same-offset commit, when only
//     the ranges or the stall changed).
//  5. The committer (committer.go) sends one OffsetCommit through kgo
//     (kgoclient.go). A partition whose metadata the broker refuses as too
//     large is committed again at once without it, a second OffsetCommit,
//     and later metadata is kept to half that size. The result goes back to
//     the owner, which records what the broker accepted (onCommitDone); a
//     refused partition is planned again next tick.
//  6. A revoke or a close commits its final watermarks synchronously
//     instead (planFinalCommits, drain.go; finalCommit, commit.go), on kgo's
//     callback goroutine or in Close.
//
// A replay in place (stall.go, replay.go) ends an epoch too: after
// stall_replay_after a partition whose head failed for good is drained, its
// epoch ends, and a new one reads it again from the watermark, skipping
// what the old one delivered. So does a truncation (truncate.go). Either way
// the new epoch is the old one's successor, made by succeed
// (successor.go), the one place that says what survives an epoch's end.
//
// # Ordering
//
// ordering: none and ordering: key differ in one seam: each epoch's
// delivery (delivery.go), an interface chosen once, in newEpoch, from the
// configuration, with one implementation per mode: unordered
// (delivery_none.go) and keyPart (keyed.go, keyed_ack.go,
// keyed_commit.go). What differs is asked of it, and only of it: what is
// registered when (admit, next), when a partition may hand out and must
// pause (canHandOut, atLimit), what is in the pipeline (inPipeline), what
// a nack and a final verdict do (nacked, resolve), and what a commit
// carries (commitBase, leaderEpochBefore, delivered, attemptRanges, the
// stall's first offset). No other file asks which mode a partition is
// in: a new mode is a new delivery, a case in newEpoch and its config.
//
// # Goroutines
//
//   - owner (owner.run): holds every partState. Fed over channels (inbox) by
//     reads, acks, poll results, rebalance callbacks, commit results, drain
//     timers, query results and its clocks (commit, gauges, retries, log
//     ends, retention). Never does network I/O: the kgo calls it makes
//     (pause, resume, set offsets) only flip client state.
//   - poller (poll.go): polls kgo when the owner hands it a token and passes
//     the fetches to the owner; it lets a rebalance proceed only after the
//     owner has queued them (BlockRebalanceOnPoll).
//   - committer (owner.committer): runs one periodic commit at a time.
//   - drain timers (startDrain), one per drain, each a send on drainDone.
//     (The nacked batches in backoff wait behind one timer the owner
//     selects on itself: retries, retries.go.)
//   - dead-letter writes (writeDeadLetter): one per batch being
//     dead-lettered, calling the plugin's DeadLetterWriter until a try
//     succeeds, each outcome a send on deadLetterCh; cancelled when its
//     epoch ends or the input stops.
//   - queries: one log-end query at a time (lag.go, every
//     topic_lag_refresh_period while a partition is paused or its head has
//     failed) and one retention description at a time (retention.go).
//   - kgo's group goroutine runs the rebalance callbacks (Options): they ask
//     the owner to drain and commit the final watermark synchronously,
//     bounded by drain_timeout and rebalance_timeout. kgo's hook goroutines
//     report heartbeat answers to the fence (fence.go) under the consumer
//     protocol.
//   - Benthos's reader calls Read (through ReadBatch); sinks call ack
//     functions from any goroutine. With timely_nacks_maximum_wait,
//     Benthos's wrapper runs a timer goroutine per batch in flight and nacks
//     through the same ack function.
//
// Close stops the poller, asks the owner for every partition's final
// watermark (revokes still draining are answered, after Close's commit,
// with nothing to commit), commits once, leaves the group and then stops
// the owner, the committer and every query.
//
// # Performance
//
// The tricks below are kept because each was measured to pay for itself
// (docs/BENCHMARKS.md, part 2; make bench-ack). Anything else is plain.
//
//   - Bursts of acks: run applies up to ackBurst queued acks with
//     non-blocking receives before it selects again, and reads the clock
//     once per event. With the walk lists below, the ack path ran at 2.4 to
//     3.5 times the acks/s of the design before them, in every round.
//   - Walk lists (lists.go): a commit tick, a gauge refresh and the stall
//     and loss checks walk what changed, not what is assigned: 10,000 idle
//     partitions cost a tick nothing.
//   - Hot fields first (partState): the fields an ack touches span four
//     adjacent cache lines where there were eight: 1.39x [1.1-1.72] acks/s
//     at 10,000 partitions (7422b04); ended spares the map lookup of the
//     epoch check.
//   - No allocation per batch in the engine from hand-out to ack: the
//     window and the ready queue reuse their arrays (keepEmpty), the run
//     queue shifts down (popFront), the read request is reused
//     (Engine.read), the once-guard lives in the Batch: 2 allocations per
//     batch besides the conversion, down from 9 (cb8b996, 6554965, a2db936).
//   - The tracker's ring and the window follow the pending batches, not
//     max_pending_batches: an idle partition's state is a few hundred bytes
//     (make bench-scale, BenchmarkStateSize).
package engine
