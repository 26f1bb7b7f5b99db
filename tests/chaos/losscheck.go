package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// How the checker holds the members' loss reports against what the
// harness itself did to the log (lossfacts.go).

// lossResult is what the checker concludes on losses.
type lossResult struct {
	Deleted         int64    `json:"deleted_offsets"`           // offsets the harness's DeleteRecords took
	DeletedReceived int64    `json:"deleted_received"`          // of those, offsets a sink had received before
	Expected        int64    `json:"expected_lost"`             // deleted offsets no sink had: what the members must report
	LaterDelivered  int64    `json:"deleted_then_delivered"`    // deleted before any sink had them, delivered afterwards from memory
	ReportedLost    int64    `json:"reported_lost"`             // from the members' ERROR lines, cause retention or unknown
	ReportedTrLost  int64    `json:"reported_lost_truncation"`  // loss lines of cause truncation
	ReportedTrunc   int64    `json:"reported_truncated"`        // truncation lines
	TruncDelivered  int64    `json:"truncated_delivered"`       // old records of rewritten offsets a sink received
	TruncNeverSeen  int64    `json:"truncated_never_delivered"` // old records no sink received (gone with the old log)
	Rewritten       int64    `json:"rewritten_offsets"`         // offsets the unclean elections rewrote
	LostUnreported  int64    `json:"deleted_lost_unreported"`   // deleted visible records never delivered nor reported: part of lost
	Overlaps        []string `json:"overlapping_reports,omitempty"`
	Mismatches      []string `json:"mismatches,omitempty"` // failures
	Notes           []string `json:"notes,omitempty"`      // facts worth reading, not failures
}

// checkLosses holds the members' loss reports (events) against what the
// harness deleted and truncated (facts), with the sink's final ledger and
// the log read back. It returns the figures, and how many deleted visible
// records were neither delivered nor reported (they count as lost), with
// examples.
func checkLosses(lg [][]logRec, ld *testkit.Ledger, facts *lossFacts, events []lossEvent, topic string) (lossResult, []string) {
	var r lossResult
	if facts == nil {
		facts = &lossFacts{}
	}
	received := func(p int32, o int64) bool {
		return int(p) < len(ld.Parts) && o >= 0 && o < int64(len(ld.Parts[p])) && ld.Parts[p][o].Count > 0
	}

	// Expected: per partition, the union of what each deletion found
	// unreceived, less what was delivered afterwards.
	expected := map[int32]map[int64]bool{}
	for _, d := range facts.deletions {
		r.Deleted += d.To - d.From
		r.DeletedReceived += d.Received
		if expected[d.P] == nil {
			expected[d.P] = map[int64]bool{}
		}
		for _, s := range d.Unreceived {
			for o := s.From; o < s.To; o++ {
				if received(d.P, o) {
					r.LaterDelivered++
					continue
				}
				expected[d.P][o] = true
			}
		}
	}
	for _, m := range expected {
		r.Expected += int64(len(m))
	}
	// Excusable: deleted offsets at or above the group's commit and outside
	// its delivered ranges that a sink had received, but whose ack no
	// member may have seen (a request of a member killed or revoked
	// mid-flight completes at the sink): a member that reports them lost
	// reports what it knows. They may be in a report, and need not be.
	excusable := map[int32]map[int64]bool{}
	for _, d := range facts.deletions {
		m, merr := commitmeta.Decode(d.Meta)
		ranged := merr == nil && m.Base == d.Commit
		for o := max(d.From, d.Commit); o < d.To; o++ {
			if expected[d.P][o] || (ranged && m.Covered(o)) || !received(d.P, o) {
				continue
			}
			if excusable[d.P] == nil {
				excusable[d.P] = map[int64]bool{}
			}
			excusable[d.P][o] = true
		}
	}

	// Reported: the loss lines of this topic, each loss counted once over
	// the group. The input reports a loss once per process, so every line
	// of a process counts in full, and one that covers offsets a line of
	// the same process covered already is listed. A line of another process
	// whose offsets lie inside one counted before (the same loss seen again
	// by the next owner, when the report had not reached the commits) adds
	// nothing; one that overlaps it in part adds its count less the overlap
	// (an undercount at worst, and listed).
	reported := map[int32][]lossEvent{}
	got := map[int32]int64{}
	for _, e := range events {
		switch {
		case e.Topic != topic:
			continue
		case e.Truncated:
			r.ReportedTrunc += e.Count
			continue
		case e.Cause == causeTruncation:
			r.ReportedTrLost += e.Count
			continue
		}
		n := e.Count
		for _, prev := range reported[e.Partition] {
			lo, hi := max(prev.First, e.First), min(prev.Last, e.Last)
			switch {
			case lo > hi:
				continue
			case prev.Instance == e.Instance:
				r.Overlaps = append(r.Overlaps, fmt.Sprintf("%s covers offsets %d-%d again, which the same process reported before (%s)", e, lo, hi, prev))
				continue
			case lo == e.First && hi == e.Last:
				n = 0
			default:
				r.Overlaps = append(r.Overlaps, fmt.Sprintf("%s overlaps %s", e, prev))
				n = max(0, n-(hi-lo+1))
			}
			if n == 0 {
				break
			}
		}
		got[e.Partition] += n
		r.ReportedLost += n
		reported[e.Partition] = append(reported[e.Partition], e)
		// A line that counts every offset of its range names them: each
		// must be one the harness deleted before any sink had it.
		if e.Count == e.Last-e.First+1 {
			var wrong []int64
			for o := e.First; o <= e.Last; o++ {
				if !expected[e.Partition][o] && !excusable[e.Partition][o] {
					wrong = append(wrong, o)
				}
			}
			if len(wrong) > 0 {
				r.Mismatches = append(r.Mismatches, fmt.Sprintf("%s: offset(s) %s are not among those deleted before any sink had them, nor received at or above the commit without an ack the members could know of (delivered before the deletion, or not deleted)",
					e, strings.Join(spanStrings(spansOf(wrong)), " ")))
			}
		}
	}

	// Per partition, reported against expected.
	parts := map[int32]bool{}
	for p := range expected {
		parts[p] = true
	}
	for p := range reported {
		parts[p] = true
	}
	for _, p := range slices.Sorted(maps.Keys(parts)) {
		want := int64(len(expected[p]))
		if got[p] >= want && got[p] <= want+int64(len(excusable[p])) {
			if got[p] > want {
				r.Notes = append(r.Notes, fmt.Sprintf("partition %d: the members reported %d offset(s) lost, %d more than were deleted before any sink had them: offsets a sink had received at or above the commit, whose acks no member saw (at most %d such)",
					p, got[p], got[p]-want, len(excusable[p])))
			}
			continue
		}
		var wantSpans []span
		for _, d := range facts.deletions {
			if d.P == p {
				wantSpans = append(wantSpans, d.Unreceived...)
			}
		}
		var lines []string
		for _, e := range reported[p] {
			lines = append(lines, e.String())
		}
		r.Mismatches = append(r.Mismatches, fmt.Sprintf(
			"partition %d: the members reported %d offset(s) lost (%s); the harness deleted %d offset(s) before any sink had them (%s)",
			p, got[p], orNone(lines), want, orNone(spanStrings(wantSpans))))
	}

	// Deleted visible records that no sink received and no report covers:
	// lost, as if the log still held them.
	var lostEx []string
	for p := range lg {
		for o, rec := range lg[p] {
			if rec.kind != offDeleted || rec.was != offData || received(int32(p), int64(o)) {
				continue
			}
			covered := false
			for _, e := range reported[int32(p)] {
				if int64(o) >= e.First && int64(o) <= e.Last {
					covered = true
					break
				}
			}
			if !covered {
				r.LostUnreported++
				if len(lostEx) < maxExamples {
					lostEx = append(lostEx, fmt.Sprintf("%d/%d (deleted, never delivered, not reported)", p, o))
				}
			}
		}
	}

	// Truncations: what the old log held and the group delivered. A
	// delivery at a rewritten offset is of the old log when its value is
	// not the one the new log holds there (the election's time, as the
	// harness saw it, may come after the first deliveries from the new log).
	for _, t := range facts.truncations {
		r.Rewritten += t.OldEnd - t.Divergence
		var delivered, never int64
		for o := t.Divergence; o < t.OldEnd; o++ {
			newHash, inNew := uint32(0), false
			if int(t.P) < len(lg) && o < int64(len(lg[t.P])) && lg[t.P][o].kind == offData {
				newHash, inNew = lg[t.P][o].hash, true
			}
			isOld := func(h uint32) bool { return !inNew || h != newHash }
			e := testkit.Entry{}
			if int(t.P) < len(ld.Parts) && o < int64(len(ld.Parts[t.P])) {
				e = ld.Parts[t.P][o]
			}
			old := e.Count > 0 && isOld(e.Hash)
			if !old {
				for _, a := range ld.Alts {
					if a.P == t.P && a.O == o && isOld(a.Hash) {
						old = true
						break
					}
				}
			}
			if old {
				delivered++
			} else {
				never++
			}
		}
		r.TruncDelivered += delivered
		r.TruncNeverSeen += never
		var got int64
		for _, e := range events {
			if e.Topic == topic && e.Truncated && e.Partition == t.P && e.First == t.Divergence {
				got += e.Count
			}
		}
		r.Notes = append(r.Notes, fmt.Sprintf("fault #%d: partition %d rewritten from offset %d to %d (leader epoch %d to %d): the group had delivered %d old record(s) there, %d never; the members reported %d truncated",
			t.Fault, t.P, t.Divergence, t.OldEnd-1, t.OldEpoch, t.NewEpoch, delivered, never, got))
		if delivered > 0 && got == 0 && facts.groupKnew != nil && !facts.groupKnew(t.P, t.Divergence, t.OldEpoch) {
			r.Notes = append(r.Notes, fmt.Sprintf("fault #%d: no member reported the truncation of partition %d at offset %d, and none could: the group never committed past it, nor ranges above it, under leader epoch %d or older (the old records were delivered past the last commit by a member that lost the partition)",
				t.Fault, t.P, t.Divergence, t.OldEpoch))
		} else if delivered > 0 && got == 0 {
			r.Mismatches = append(r.Mismatches, fmt.Sprintf("partition %d: the unclean election of fault #%d rewrote offsets %d-%d, of which the group had delivered %d, and no member reported the truncation at offset %d",
				t.P, t.Fault, t.Divergence, t.OldEnd-1, delivered, t.Divergence))
		}
	}
	for _, e := range events {
		if e.Topic != topic || !e.Truncated {
			continue
		}
		known := false
		for _, t := range facts.truncations {
			if t.P == e.Partition && t.Divergence == e.First {
				known = true
			}
		}
		if !known {
			r.Mismatches = append(r.Mismatches, fmt.Sprintf("%s: no unclean election of the harness truncated partition %d there", e, e.Partition))
		}
	}
	return r, lostEx
}

func spanStrings(ss []span) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.String())
	}
	return out
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	if len(s) > 8 {
		s = append(s[:8:8], fmt.Sprintf("and %d more", len(s)-8))
	}
	return strings.Join(s, "; ")
}
