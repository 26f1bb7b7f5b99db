package status

import (
	"errors"
	"slices"
	"time"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// ErrUnknownGroup is Collect's error for a group the cluster does not know:
// no committed offset and no members (dead, empty or never created). It is
// most often a typo in the group name, which must not read as healthy.
var ErrUnknownGroup = errors.New("unknown group")

// Query is what Collect reads. A Query is a value; Collect does not keep or
// modify it.
type Query struct {
	Group string

	// Topics restricts the report to these topics, and adds their
	// partitions that have no commit yet. Empty: every partition the group
	// has a commit for.
	Topics []string

	// RegexpTopics reads Topics as regular expressions, unanchored, as the
	// input's regexp_topics does.
	RegexpTopics bool
}

// Report is one group's state as the brokers hold it: per partition, the
// committed offset, the log end, and what the commit metadata says about the
// records above the committed offset.
//
// A Report is a value once Collect returns it: safe for concurrent reads.
type Report struct {
	Group      string
	At         time.Time   // when the offsets were read; a stall's age is measured to it
	Partitions []Partition // sorted by topic, then partition
}

// Partition is one partition of a Report; a value, safe for concurrent
// reads.
type Partition struct {
	Topic     string
	Partition int32

	Committed int64 // the committed offset (the watermark); -1 when the group has none
	LogStart  int64 // the log start: the first offset the log still holds
	LogEnd    int64 // the high watermark: one past the last record

	// DeliveredAbove counts the records above Committed that the commit
	// metadata names as delivered: those a restart skips. 0 when the
	// metadata is not the input's, or is for another offset.
	DeliveredAbove int64

	// Stall is the failed batch that holds the watermark, from the commit
	// metadata; nil when the partition is not stalled. When the commit
	// had room for the stall's mark only, MarkOnly is set and First is
	// all it says: stalled all the same.
	Stall *commitmeta.Stall

	// Loss is the records Kafka deleted or rewrote before the input
	// delivered them, from the commit metadata; nil when the commit carries
	// no loss report (the input drops it lost_records_report_for after the
	// loss; status shows what the commit carries, whatever its age). The
	// partition may flow meanwhile: a loss is not a stall.
	Loss *commitmeta.Loss

	// BelowStart is the records deleted from below the log start before
	// the group delivered them, as status sees them from the committed
	// offset and the log start; nil when the commit is not below the log
	// start, or when its metadata accounts for every offset there. Like a
	// loss report, it makes the exit status ExitLost.
	BelowStart *GoneBelowStart

	// NotConsumed is true for a partition that has no commit and that no
	// member of the group is assigned, as the group coordinator answered
	// at the time of the report. Only partitions without a commit are
	// asked about (those --topics adds): one with a commit shows its lag
	// whether or not a member consumes it now.
	NotConsumed bool

	// delivered is the ranges above Committed that the commit metadata
	// names as delivered, as the input reads them when it resumes
	// (commitmeta.DecodeCommit): BelowStart leaves them out.
	delivered []commitmeta.Range

	// DeadLetter is the records the input dead-lettered lately (the output
	// kept refusing them, and they went to the dead-letter topic), from the
	// commit metadata; nil when the commit carries no dead-letter report.
	// Dead-lettering is by design: it changes no exit status.
	DeadLetter *commitmeta.DeadLetter

	// MetadataErr says why metadata that looked like the input's was not
	// used, or which of its reports was not: malformed, another version, or
	// written for another offset (an offset reset by an admin tool keeps the
	// old metadata). A malformed stall provenance, loss report or
	// dead-letter report leaves that report nil and the others, and the
	// ranges, in use. Another client's metadata is no error. nil when all
	// of it was used.
	MetadataErr error
}

// Lag returns the records from the committed offset to the log end that
// still exist: LogEnd - max(Committed, LogStart). False when there is no
// commit.
func (p Partition) Lag() (int64, bool) {
	if p.Committed < 0 {
		return 0, false
	}
	return p.LogEnd - max(p.Committed, p.LogStart), true
}

// Stalled reports whether p's commit names a stall.
func (p Partition) Stalled() bool { return p.Stall != nil }

// Lost reports whether p's commit carries a loss report, or status sees
// records deleted below the log start (BelowStart).
func (p Partition) Lost() bool { return p.Loss != nil || p.BelowStart != nil }

// Waiting reports whether p is not consumed while its log holds records:
// records wait that no member will deliver, and which of them a member
// assigned later delivers depends on its start_offset (latest skips them).
// An empty partition that no member consumes has nothing waiting.
func (p Partition) Waiting() bool { return p.NotConsumed && p.LogEnd > p.LogStart }

// DeadLettered reports whether p's commit carries a dead-letter report.
func (p Partition) DeadLettered() bool { return p.DeadLetter != nil }

// Healthy reports whether every partition flows: none is stalled, and
// none is not consumed with records waiting (Partition.Waiting). A loss
// does not count: a partition that lost records may flow.
func (r *Report) Healthy() bool {
	return !slices.ContainsFunc(r.Partitions, func(p Partition) bool { return p.Stalled() || p.Waiting() })
}

// Stalled returns the number of stalled partitions.
func (r *Report) Stalled() int { return r.count(Partition.Stalled) }

// Lost returns the number of partitions that lost records (Partition.Lost).
// Healthy does not count them: a partition that lost records may flow.
func (r *Report) Lost() int { return r.count(Partition.Lost) }

// DeadLettered returns the number of partitions whose commit carries a
// dead-letter report. Neither Healthy nor ExitStatus counts them:
// dead-lettering is how a partition keeps flowing past records its output
// refuses.
func (r *Report) DeadLettered() int { return r.count(Partition.DeadLettered) }

// Waiting returns the number of partitions that are not consumed while
// records wait in them (Partition.Waiting).
func (r *Report) Waiting() int { return r.count(Partition.Waiting) }

// NotConsumed returns the number of partitions without a commit that no
// member consumes, whether or not records wait in them.
func (r *Report) NotConsumed() int { return r.count(func(p Partition) bool { return p.NotConsumed }) }

// count returns the number of r's partitions for which f is true.
func (r *Report) count(f func(Partition) bool) int {
	n := 0
	for _, p := range r.Partitions {
		if f(p) {
			n++
		}
	}
	return n
}
