package main

import "fmt"

// What the harness itself did to the log (losscheck.go holds the members'
// loss reports against it).
//
// A deletion (the retention fault) moves a partition's log start past
// records the group had not delivered. The harness records, from the sink's
// own ledger, exactly which offsets no sink had received when the log start
// moved: those at or above the group's commit and outside that commit's
// delivered ranges (below the commit every visible record was delivered,
// and what is left there, markers and aborted records, was never anyone's
// to deliver). Those offsets, less any a member still delivered from memory
// afterwards, are what the members must report lost (reported_lost): each
// exactly once over the group, whatever the offset held (a deleted record
// cannot be told from a marker, so the input counts offsets).
//
// A truncation (the unclean-election fault) rewrites a partition from the
// divergence point on: the old leader held records there that the new
// leader never had, and the new leader writes other records at those
// offsets. The old records are gone (not "lost" by the input: a record the
// group never fetched cannot be reported by it), every record of the new
// log must be delivered, and the commits may go back once, to the
// divergence point.

// deletion is one DeleteRecords of the retention fault.
type deletion struct {
	Fault    int    `json:"fault"`
	P        int32  `json:"partition"`
	From     int64  `json:"log_start_before"`
	To       int64  `json:"log_start_after"`
	End      int64  `json:"log_end"`
	Commit   int64  `json:"commit"`      // the group's commit of P when the log start moved
	Meta     string `json:"commit_meta"` // its metadata (delivered ranges)
	At       int64  `json:"at"`          // Unix ns, when DeleteRecords answered
	Down     bool   `json:"members_down"`
	Received int64  `json:"received"` // offsets of [From, To) the sink had received by then
	// Unreceived are the offsets of [max(From, Commit), To) that no sink
	// had received at At, outside the commit's delivered ranges, as ranges.
	Unreceived []span `json:"unreceived"`
}

// span is the offsets [From, To).
type span struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

func (s span) String() string { return fmt.Sprintf("[%d,%d)", s.From, s.To) }

// spansOf turns sorted offsets into spans.
func spansOf(offs []int64) []span {
	var out []span
	for _, o := range offs {
		if n := len(out); n > 0 && out[n-1].To == o {
			out[n-1].To++
			continue
		}
		out = append(out, span{o, o + 1})
	}
	return out
}

func spansLen(ss []span) int64 {
	var n int64
	for _, s := range ss {
		n += s.To - s.From
	}
	return n
}

// truncation is one unclean election the harness proved.
type truncation struct {
	Fault      int   `json:"fault"`
	P          int32 `json:"partition"`
	Divergence int64 `json:"divergence"` // the first offset the new log holds another record at
	OldEnd     int64 `json:"old_end"`    // one past the old leader's last record (known to the harness)
	OldEpoch   int32 `json:"old_leader_epoch"`
	NewEpoch   int32 `json:"new_leader_epoch"`
	ElectedAt  int64 `json:"elected_at"` // Unix ns: the new leader took over
	// Old is the hash of every old record the harness knows (the records
	// it wrote to the old leader alone and those its live producer saw
	// acknowledged there), by offset.
	Old map[int64]uint32 `json:"-"`
	// Rewritten counts the known old records whose offset now holds another
	// record (or lies past the new log's end): the proof.
	Rewritten int    `json:"rewritten"`
	Proof     string `json:"proof"`
}

// lossFacts is what the checker is told the harness did to the log.
type lossFacts struct {
	deletions   []deletion
	truncations []truncation
	// groupKnew, when set, reports whether the group ever committed
	// partition p past offset at, or with delivered ranges above it, under
	// a leader epoch no newer than epoch: whether the group could know that
	// records of the old log at or above a truncation's divergence point
	// were delivered. Old records delivered past the last commit by a
	// member that then lost the partition are known to no member.
	groupKnew func(p int32, at int64, epoch int32) bool
}

// rewritten is the truncation whose rewritten range holds p/o, if any.
func (f *lossFacts) rewritten(p int, o int64) *truncation {
	if f == nil {
		return nil
	}
	for i := len(f.truncations) - 1; i >= 0; i-- {
		t := &f.truncations[i]
		if int(t.P) == p && o >= t.Divergence && o < t.OldEnd {
			return t
		}
	}
	return nil
}

// oldValue reports whether hash, delivered at p/o at time at, is a record
// of the old log that a truncation rewrote: one the harness knows, or one
// delivered before the new leader took over.
func (f *lossFacts) oldValue(p int, o int64, hash uint32, at int64) bool {
	t := f.rewritten(p, o)
	if t == nil {
		return false
	}
	if h, ok := t.Old[o]; ok && h == hash {
		return true
	}
	return at < t.ElectedAt
}

// oldCommit is the truncation under whose old leader epoch a commit of
// partition p at offset c was made, when the new log does not hold what it
// passed: c above the divergence, and the commit's leader epoch older than
// the new leader's (or, without an epoch, the commit older than the
// election).
func (f *lossFacts) oldCommit(p int, c int64, epoch int32, at int64) *truncation {
	if f == nil {
		return nil
	}
	for i := len(f.truncations) - 1; i >= 0; i-- {
		t := &f.truncations[i]
		if int(t.P) != p || c <= t.Divergence {
			continue
		}
		if (epoch >= 0 && epoch < t.NewEpoch) || (epoch < 0 && at < t.ElectedAt) {
			return t
		}
	}
	return nil
}

// backwardStep decides whether a commit of partition p going from prev
// (made with prevEpoch at prevAt) down to next is the one step back a
// truncation allows: from a commit under the old leader epoch that the new
// log does not hold, to the divergence point or above it, once per
// truncation (used records which ones were taken). Above: the input goes on
// from the divergence point at once, and its first commit after the
// truncation carries the new log's records it delivered by then (the
// commit check holds it below every undelivered record that exists, as it
// does every commit).
func (f *lossFacts) backwardStep(p int, prev int64, prevEpoch int32, prevAt int64, next int64, used map[*truncation]bool) bool {
	t := f.oldCommit(p, prev, prevEpoch, prevAt)
	if t == nil || next < t.Divergence || used[t] {
		return false
	}
	used[t] = true
	return true
}
