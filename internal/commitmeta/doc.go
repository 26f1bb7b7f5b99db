// Package commitmeta encodes and decodes the Kafka offset-commit metadata of
// one partition: the string the broker stores next to a committed offset and
// hands back on OffsetFetch (and to every admin tool). The input writes, with
// each commit, which records above the committed offset were already
// delivered, so that the next owner of the partition, after a crash or a
// rebalance, skips them instead of delivering them again.
//
// # Vocabulary
//
// The base is the committed offset: the watermark, one past the contiguous
// delivered prefix, and so the first offset that is not known to be
// delivered. A delivered range is a half-open run of absolute offsets
// [From, To) above the base whose records all reached the output. The ranges
// are the islands past the watermark; they let a consumer skip, never commit.
//
// A report is what a commit tells of the partition besides its offsets:
// the stall provenance (the failed batch that holds the watermark), the
// loss report (records gone before delivery) and the dead-letter report
// (records set aside). Kind names them. Each is a Report, which offsets
// (First..Last), since when (Since) and why (Reason), with what is its own
// (Stall, Loss, DeadLetter); Report says why they are three types on one,
// not one type. The three are written, read and merged by one codec, and
// a malformed one is a *ReportError of its Kind.
//
// # Format
//
// Metadata is printable ASCII (0x20-0x7E), readable in any admin tool:
//
//	wm1 o=1200 e=3 d=10.50,20.40 l=4
//
// Byte by byte:
//
//   - "wm" is the magic and "1" the version, in decimal, followed by one
//     space. A string that does not start with "wm", digits and a space is
//     not ours (another client's metadata, kgo's member ID, or "").
//   - Then fields separated by single spaces, no leading, trailing or double
//     space. A field is key=value: the key is one or more of [a-z], the value
//     zero or more of 0x21-0x7E (no space). Each key appears at most once;
//     fields may come in any order (EncodeCommit writes o, e, d, the stall
//     provenance, the loss report, a, the dead-letter report, then l;
//     Encode writes o, e, d, then extra).
//   - o=<base>: required. The committed offset, a decimal int64 >= 0.
//   - e=<epoch>: required. The leader epoch of the record before the base, a
//     decimal int32 >= 0, or -1 when unknown.
//   - d=<gap>.<len>,<gap>.<len>,...: optional, may be empty. The delivered
//     ranges in order. The first gap is From - base, each later gap is From
//     minus the previous To; len is To - From. Gaps and lengths are >= 1, so
//     ranges are strictly above the base, sorted, non-overlapping and
//     non-adjacent (the writer merges adjacent ranges before EncodeCommit or
//     Encode, which panic on them). The example means base 1200, epoch 3,
//     delivered [1210,1260) and [1280,1320).
//   - l=<epoch>: required with ranges, absent without. The leader epoch of
//     the last record of the last range (the record at its To-1), a decimal
//     int32 >= 0, or -1 when unknown, in the same form as e. A record in or
//     below the ranges whose leader epoch is higher was written after the
//     metadata, by a leader that rewrote the log the ranges describe (an
//     unclean election): the reader skips nothing from it on. The example's
//     record 1319 was written in epoch 4. Ranges without a valid l= are
//     left out by DecodeCommit (see LastEpochError); without ranges, l= is
//     ignored whatever its value.
//   - a=<gap>.<len>.<n>,<gap>.<len>.<n>,...: optional, never empty. Runs
//     of records handed out n times without being delivered (Attempts), in
//     order. The first gap is From - base, each later gap is From minus the
//     previous To; len is To - From; n is 1 to 2147483647. Unlike d=, gaps
//     may be 0: a run may start at the base (the batch at the watermark is
//     the one that fails), and runs may touch. Lengths are >= 1. So runs
//     are sorted, at or above the base and non-overlapping. Any number out
//     of its bounds or form, a To past math.MaxInt64, or a separator out of
//     place makes the whole field malformed (see AttemptsError): a reader
//     then counts no attempts.
//   - Any other key is ignored by Decode and returned by DecodeFields: room
//     for later fields (such as the stall provenance and the loss report)
//     without a new version. Decode and DecodeFields also treat l, a and the
//     dead-letter report's keys as such fields; DecodeCommit reads l, a and
//     the three reports. At most MaxUnknownFields such fields are accepted;
//     EncodeCommit writes at most eighteen.
//
// Numbers are decimal with no sign (except e=-1 and l=-1), no leading zeros
// (except "0" itself) and no overflow: a value past int64 (int32 for e and
// l), or a gap or length that carries an offset past math.MaxInt64, is
// malformed. So every Meta has exactly one encoding of o, e and d, every
// last epoch one of l, and every list of Attempts one of a.
//
// While a partition is stalled (the batch at its watermark was nacked and is
// not yet delivered), its commits also carry the stall provenance, six
// fields that Stall.Fields writes and StallFromFields reads back from
// DecodeFields:
//
//	wm1 o=1200 e=3 d=10.50 sf=1200 sl=1209 ss=1767225600000 sa=3 sm=orders-sink%40pod-7 sr=http+503 l=3
//
// Field by field:
//
//   - sf=<first> sl=<last>: the offsets of the failed batch, decimal int64s
//     with 0 <= first <= last. sf marks a stall: without it there is none.
//     With it, either every other s field is there, or none is (the stall
//     mark, below); some but not all of them is malformed.
//   - ss=<since>: its first nack, in Unix milliseconds (a decimal >= 0).
//   - sa=<attempts>: how many times it was delivered, 1 to 2147483647.
//   - sm=<member>: who saw it, the client ID and host name; at most
//     MaxMemberLen bytes of printable ASCII, query-escaped (url.QueryEscape:
//     a space is '+', other bytes outside [A-Za-z0-9-_.~] are %XX).
//   - sr=<reason>: the error class, at most MaxReasonLen bytes of printable
//     ASCII, escaped the same way.
//
// The provenance is at most MaxStallFieldsLen bytes. Its room is taken right
// after the header's (see Priority): when the budget is short, the ranges
// and the loss report are cut before it is. Like the ranges it is
// meaningful only when o equals the committed offset.
//
// When the whole provenance does not fit after the header, the commit
// carries the stall mark instead, sf= alone, and ends there:
//
//	wm1 o=1200 e=3 sf=1200
//
// It says that the partition is stalled at the failed batch starting at
// 1200, and that the rest of the provenance did not fit (StallFromFields
// returns a Stall with MarkOnly set). It is at most MaxStallMarkLen bytes,
// so that the longest header and mark together take MinCommitBudget (61)
// bytes: within the smallest commit_metadata_max_bytes (64), and the least
// a writer lowers its budget to. A reader of an earlier version finds sl=
// missing and reports a malformed provenance, not a healthy partition.
//
// After records were lost, deleted by retention or rewritten by an unclean
// leader election before the input delivered them, its commits also carry
// the loss report, five fields that Loss.Fields writes and LossFromFields
// reads back from DecodeFields:
//
//	wm1 o=1500 e=3 lf=100 ll=1499 ln=1100 ls=1767225600000 lc=retention
//
// Field by field:
//
//   - lf=<first> ll=<last>: the lost offsets lie within first..last,
//     inclusive, decimal int64s with 0 <= first <= last. lf marks a loss:
//     without it there is none, and with it every other l field is
//     required.
//   - ln=<count>: how many offsets within them were lost, from 1 to
//     last-first+1 (fewer than all when several events were merged, see
//     MergeLoss).
//   - ls=<since>: the earliest loss event, in Unix milliseconds (a decimal
//     >= 0).
//   - lc=<cause>: "retention" (the log start moved past records not yet
//     delivered), "truncation" (an unclean leader election rewrote them) or
//     "unknown" (CauseRetention, CauseTruncation, CauseUnknown).
//
// The key l= is another field (above), not part of the report. The example
// says that 1100 of
// the offsets 100 to 1499 were lost to retention, first on 2026-01-01 at
// 00:00 UTC. The writer carries the report for a configured time
// (lost_records_report_for, 24h by default) after ls, then drops it with its
// next commit; while no member commits the partition (the pipeline is
// stopped) the broker keeps the last commit, report included. The report is
// at most MaxLossFieldsLen bytes; its room is taken after the stall
// provenance's and before any range's (see Priority). It too is meaningful
// only when o equals the committed offset.
//
// Records the output kept refusing are written to a dead-letter topic, so
// that the watermark moves past them; the commits that follow carry the
// dead-letter report, five fields that DeadLetter.Fields writes and
// DeadLetterFromFields reads back from DecodeFields, after the runs of
// attempts that led to it:
//
//	wm1 o=1241 e=3 a=0.9.2 xf=100 xl=140 xn=12 xs=1767265200000 xr=http+503
//
// Field by field, as the loss report's:
//
//   - xf=<first> xl=<last>: the dead-lettered offsets lie within
//     first..last, inclusive, decimal int64s with 0 <= first <= last. xf
//     marks a report: without it there is none, and with it every other x
//     field is required.
//   - xn=<count>: how many offsets within them were dead-lettered, from 1
//     to last-first+1 (see MergeDeadLetter).
//   - xs=<since>: the earliest event merged, in Unix milliseconds (a
//     decimal >= 0).
//   - xr=<error>: the error class of the last failure, at most
//     MaxReasonLen bytes of printable ASCII, escaped as sr= is.
//
// The example says that 12 of the offsets 100 to 140 were dead-lettered,
// the first on 2026-01-01 at 11:00 UTC, the last for "http 503", and that
// the records 1241 to 1249 were handed out twice already. The report is at
// most MaxDeadLetterFieldsLen bytes. Dead-lettering is by design: the
// report is information, not a loss. Like the other parts, a= and the
// report are meaningful only when o equals the committed offset.
//
// # Priority
//
// The broker keeps at most offset.metadata.max.bytes of metadata (4096 by
// default), and a writer may choose less. EncodeCommit gives the room to the
// parts of a commit in this order. A whole part (the header and the three
// reports) is written only if it fits together with every part written
// before it, and the first that does not ends the metadata; the attempts
// and the ranges are written as their longest prefix that fits, and never
// end it:
//
//  1. the header: Prefix, o= and e=; when it does not fit there is no
//     metadata at all ("");
//  2. the stall provenance, when the partition is stalled: what holds it
//     is what an operator needs first. When the whole does not fit, its
//     mark (sf= alone) is written instead, and ends the metadata; when not
//     even the mark fits there is no metadata at all (""), never a header
//     alone, which would read as a partition that is not stalled;
//  3. the loss report, when one is carried;
//  4. the attempts, a=: the longest prefix of Commit.Attempts (the runs
//     nearest the base) that fits. When not even the first run fits, a=
//     is not written and the parts after it still get their room, in
//     order;
//  5. the dead-letter report, when one is carried;
//  6. the delivered ranges: the longest prefix (the ranges nearest the
//     base) that fits together with the l= of its last range, l= included.
//
// EncodeCommit plans this in one pass, so the l= it writes is always that
// of the last range it keeps, and one more range would not fit; after the
// attempts it keeps, one more run would not fit either (EncodeCommitKept
// says how many it kept). The order of the bytes (the Format above) is not
// the order of priority: the ranges come before the reports in the string,
// and are cut first. A cut range is only delivered again after a restart,
// never lost; a cut run of attempts only starts counting again from zero;
// a cut report is only missing from that commit.
//
// Encode, which writes a Meta and a string of extra fields, gives the room
// to the header and all of extra together (none of it when they do not fit
// together), then to the ranges, without l=.
//
// # Guarantees of a decoded Meta
//
// Decode is written for untrusted input: anyone can commit metadata to a
// group. It never panics, refuses metadata longer than MaxDecodeBytes, does
// work linear in its input and allocates at most four times its length (the
// ranges; the error or the fields are small), and either fails or returns a
// Meta that holds:
//
//   - Base >= 0 and Epoch >= -1;
//   - every range has Base < From < To <= math.MaxInt64;
//   - ranges are sorted and neither overlap nor touch: each From is greater
//     than the previous To;
//   - Records() is exact (it cannot saturate).
//
// What Decode cannot check is that the string belongs to the offset it was
// committed with. A consumer must use Delivered only when Base equals that
// offset: this is why the base is repeated in the metadata, so that an offset
// an admin tool resets while keeping the old metadata invalidates the ranges
// instead of skipping records the operator asked to replay. On any error the
// consumer resumes at the committed offset and redelivers (at-least-once).
//
// The ranges name offsets, not records: they assume the log above Base was
// not truncated and rewritten since, which only an unclean leader election
// does. Epoch lets a consumer validate the base with OffsetForLeaderEpoch,
// not the ranges above it.
//
// The broker rejects a commit whose metadata exceeds its
// offset.metadata.max.bytes (4096 by default), so the maxBytes given to
// EncodeCommit or Encode must not exceed it.
//
// # Guarantees of a Decoded
//
// DecodeCommit fails where Decode fails. When it does not, its Meta keeps
// the guarantees above, and:
//
//   - LastEpoch >= -1, and LastEpoch == -1 when Delivered is empty;
//   - Delivered is empty when RangesErr is set: ranges are never returned
//     without their l=;
//   - Stall, Loss and DeadLetter keep the bounds that StallFromFields,
//     LossFromFields and DeadLetterFromFields guarantee, and are nil when
//     StallErr, LossErr or DeadLetterErr is set;
//   - every run of Attempts has Base <= From < To <= math.MaxInt64 and N
//     from 1 to math.MaxInt32; runs are sorted and do not overlap (each
//     From is at least the previous To); Attempts is nil when AttemptsErr
//     is set or there is no a=.
//
// DecodeCommit keeps Decode's bounds: no panic, work linear in its input,
// and at most four times its length allocated for the ranges and the runs
// together (each takes at least six bytes of d= or a= for at most 24 of
// memory).
//
// # Concurrency
//
// Meta and Range are values with no hidden state. A Meta is safe for
// concurrent use by readers once built; its Delivered slice must not be
// modified while others read it. Report, Stall, Loss, DeadLetter, Attempts,
// Kept, Decoded and the errors are values; a Commit is one too, but for
// what its pointers, slices and EpochOf share. EncodeCommit,
// EncodeCommitKept, DecodeCommit, Encode, Decode, DecodeFields,
// Stall.Fields, StallFromFields, Loss.Fields, LossFromFields, MergeLoss,
// DeadLetter.Fields, DeadLetterFromFields and MergeDeadLetter are pure
// functions (but for the EpochOf they call), safe to call from any
// goroutine.
package commitmeta
