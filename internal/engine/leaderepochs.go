package engine

// leaderEpochLog remembers the leader epochs of one partition's queued and pending
// records, so that a commit can carry the leader epoch of the record just
// before the committed offset. A restarted consumer hands that epoch to the
// broker, which detects a log truncated by an unclean leader election
// (KIP-320) instead of reading silently from a log that changed under it.
//
// It stores only the changes: entry i says that records from offset
// changes[i].from on carry changes[i].epoch, up to the next entry. Leader
// epochs change rarely (a leader election), so it holds one entry nearly
// always, and its size follows the elections among pending records, never
// max_pending_batches.
//
// Invariants: from strictly increases along changes; trim keeps the entry
// that covers the oldest offset still needed. Owned by the owner goroutine.
type leaderEpochLog struct {
	changes []leaderEpochChange
}

type leaderEpochChange struct {
	from  int64
	epoch int32
}

// note records that the record at offset, queued after every offset noted
// before, has leader epoch epoch.
func (l *leaderEpochLog) note(offset int64, epoch int32) {
	if n := len(l.changes); n > 0 && l.changes[n-1].epoch == epoch {
		return
	}
	l.changes = append(l.changes, leaderEpochChange{from: offset, epoch: epoch})
}

// at returns the leader epoch of the record at offset, or -1 (unknown: the
// broker skips the truncation check) when no noted record covers it.
func (l *leaderEpochLog) at(offset int64) int32 {
	for i := len(l.changes) - 1; i >= 0; i-- {
		if l.changes[i].from <= offset {
			return l.changes[i].epoch
		}
	}
	return -1
}

// trim forgets the changes no offset at or above offset needs: every entry
// before the one that covers offset.
func (l *leaderEpochLog) trim(offset int64) {
	i := 0
	for i+1 < len(l.changes) && l.changes[i+1].from <= offset {
		i++
	}
	if i > 0 {
		n := copy(l.changes, l.changes[i:])
		clear(l.changes[n:])
		l.changes = l.changes[:n]
	}
}
