// Package share is the bookkeeping of the kafka_share input (plugin/share.go):
// which records of a share group the input holds, the verdict each one gets,
// the renewal of the locks of those still held, and the gate that keeps a
// member from polling while it holds records of its previous poll.
//
// # Vocabulary
//
//   - A member is one kgo client in the share group (kgo.ShareGroup). The
//     input runs several, so that records of several polls are in flight at
//     once.
//   - A poll is the records one PollRecords of one member returned. The
//     broker acquired each of them for that member under a lock that ends
//     after the group's record lock duration
//     (share.record.lock.duration.ms), unless it is renewed.
//   - A record is held from its poll until it has a verdict: accepted,
//     released (the broker delivers it again, its delivery count one
//     higher), rejected (archived), or dead-lettered (written to the
//     dead-letter topic, then accepted). A record whose dead-letter write is
//     under way is still held: its verdict is decided, not given.
//   - A verdict is given when it is passed to kgo (Record.Ack); kgo sends it
//     to the broker in the background.
//
// # The trap this package exists for
//
// kgo accepts, at a member's next poll, every record of its previous poll
// that has no verdict yet, and a renewal does not carry across polls
// (finalizePreviousPoll, consumer_share.go:485-496 in kgo v1.22.3). A record
// still in the pipeline would be accepted that way: lost if the pipeline then
// fails it. So:
//
//   - Invariant of Gate: a member is polled only by whoever took it from
//     Gate.Acquire, and Acquire gives a member only when every record of its
//     previous poll has a verdict given to kgo. Poll.Settle gives the verdict
//     (Record.Ack) before it counts the record settled, so when the last
//     record of a poll is settled, kgo holds a terminal verdict for every
//     one, and finalizePreviousPoll, whose accept does not override a
//     terminal verdict (tryAck, consumer_share.go:2175-2189), changes none.
//   - Depth comes from members, not from polls per member: with M members,
//     M polls are in flight at once.
//
// # Invariants of a Poll
//
//   - Each record's verdict is given at most once; a later Settle is a no-op
//     that reports false (a duplicate ack).
//   - The count of held records never increases; when it reaches zero the
//     poll's done function runs once (the gate then frees the member).
//   - Only held records are renewed, and only once per renewal interval.
//
// # Goroutines
//
// None of its own. Gate and Poll are called from the input's ReadBatch
// goroutine (Acquire, Hold, Idle), from Benthos's ack goroutines (Settle,
// Claim), from the input's renewal loop (Held, Renew) and from Close
// (ReleaseHeld); each guards its state with its own mutex and calls kgo
// only to give verdicts, which is safe from any goroutine (Record.Ack).
package share
