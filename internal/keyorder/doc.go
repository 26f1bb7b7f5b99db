// Package keyorder is the core of key-ordered delivery (ordering: key,
// issue 21), kept pure as the tracker is: no franz-go or Benthos imports,
// no goroutines, no clock.
//
// Under key order, within a partition, a record is never handed out while
// an earlier record with the same key is waiting to go out or is in a batch
// handed out and not yet done (delivered or dead-lettered). Records of other
// keys go on past a waiting key, out of offset order: a batch is a set of
// offsets, not a range. Two parts decide it:
//
//   - Scheduler: which fetched records may go out now, and which wait for
//     their key (held). Keys are compared as bytes; an empty key is a key;
//     a record without a key (a null key) stands alone and never waits.
//   - Offsets: where the partition's commit may go: the first offset not
//     done, however the done ones were batched, and the runs done above it
//     (the delivered ranges of the commit metadata).
//
// Neither type is safe for concurrent use: the input's owner goroutine owns
// one of each per partition epoch.
//
// The engine uses both under ordering: key, one pair per partition epoch
// (keyPart, internal/engine/keyed.go).
package keyorder
