package engine

import "github.com/watermark-connect/watermark-connect/internal/commitmeta"

// resume is where an epoch started: the group's commit when it was
// assigned (or the rewind of a replay in place, or the divergence point of
// a truncation), and the delivered ranges that commit's metadata carried,
// which the epoch skips as it fetches them (onFetched, skipping).
//
// Invariants: skip is a suffix of inherited, sorted and disjoint, strictly
// above fetched; once a record proves the ranges stale (a newer leader
// epoch than skipEpoch), both are dropped for good (skipTruncated). Owned
// by the owner goroutine, inside its partState.
type resume struct {
	// fetched is the offset the group had committed when this epoch was
	// assigned (OffsetFetch), or -1, with the leader epoch it was
	// committed with (-1: none).
	fetched      int64
	fetchedEpoch int32
	// skip holds the delivered ranges still above the fetch position.
	skip []commitmeta.Range
	// inherited is the whole of those ranges, kept for the commits of this
	// epoch until it has registered past them (deliveredRanges).
	inherited []commitmeta.Range
	// skipEpoch is the leader epoch of the last record the skip ranges
	// cover; skipTruncated says a later epoch was met in them and the
	// ranges were dropped.
	skipEpoch     int32
	skipTruncated bool
	// skippedRanges and skippedRecords count what this epoch skipped, for
	// its one log line; skipLogged says it was written.
	skippedRanges, skippedRecords int
	skipLogged                    bool
}

// inherit makes ranges, whose last record has leader epoch epoch, the
// delivered ranges this epoch skips and carries.
func (r *resume) inherit(ranges []commitmeta.Range, epoch int32) {
	r.skip, r.inherited = ranges, ranges
	r.skipEpoch = epoch
	r.skippedRanges = len(ranges)
}

// distrust drops the inherited ranges: they do not describe this log.
func (r *resume) distrust() {
	r.skip, r.inherited, r.skippedRanges = nil, nil, 0
}
