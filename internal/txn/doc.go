// Package txn is the transactional side of exactly_once: the one kgo client
// that consumes a consumer group and produces, inside one Kafka transaction
// at a time, the records of the output bound to that group, and commits
// the input's offsets and delivered ranges in the same transaction.
//
// # Why one client
//
// A transaction's TxnOffsetCommit must carry the consumer group's member id
// and generation, so that a member the group has moved on from (a zombie:
// paused past its session, or cut off) cannot commit (KIP-447). kgo fills
// them in only for the client that consumes the group: commitTransactionOffsets
// takes cl.consumer.g (franz-go v1.22.3 pkg/kgo/txn.go:1191-1227) and
// prepareTxnOffsetCommit copies its member id and generation into the
// request (txn.go:1461-1474). So the input that consumes the group with
// exactly_once makes its client a kgo.GroupTransactSession (Session here),
// and the output bound to the group produces through it (Bind finds it in a
// process-wide registry, which streams mode shares too).
//
// # What a transaction commits
//
// kgo's GroupTransactSession.End commits the client's polled positions
// (UncommittedOffsets, txn.go:265-266), which are not our watermark: the
// engine plans each partition's offset and its commit metadata (delivered
// ranges, stall, loss, attempts), and Commit puts that plan into the
// TxnOffsetCommit through kgo.PreTxnCommitFnContext, which runs on the
// request after kgo built it and before it is sent (txn.go:1498-1502). That
// keeps the rest of End, which is subtle and which we want: the flush, the
// AddOffsetsToTxn before KIP-890 part 2, the forced heartbeat that secures
// the rebalance timeout for EndTxn (txn.go:371-423), the abort when a
// revoke or a loss came during the transaction (the session's wrappers of
// the group callbacks, txn.go:91-129), the retries of EndTxn as an abort
// (txn.go:465-505). Building the requests by hand with Client.ProducerID
// and Client.GroupMetadata would lose all of that, and EndTransaction ends
// nothing broker-side when no record was produced (txn.go:829-855) though
// a hand-built commit added offsets to the transaction: the offsets would
// hang until the transaction timeout aborted them.
//
// # The gate
//
// The engine ends a transaction only when every batch it handed out has
// settled (acknowledged or not) and no hand-out is allowed meanwhile: then
// no write of the output is in progress, and every record in the
// transaction comes from a batch the transaction commits, or from one that
// failed, which makes it abort. The gate (a read-write lock) makes that a
// rule rather than a timing: a write holds it shared while its records are
// produced and acknowledged; Commit and Abort hold it alone from the flush
// to the next Begin, so no record can fall between two transactions.
//
// kgo's caveat: End must not be called from inside a revoke or loss
// callback (the session's wrappers hold the lock End takes, txn.go:59-62).
// The engine's callbacks never wait for an End: under exactly_once a
// revoke only marks the open transaction for an abort.
package txn
