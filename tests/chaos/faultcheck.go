package main

import (
	"fmt"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// The per-fault accounting of account: each fault's window runs from its
// start to the next fault's. It owns the duplicates that arrived in it,
// its exposure (the received records it put at risk of a replay), how long
// the group took to commit again, and the watermark ages seen in it.

// faults fills in a.Faults: per fault, its recovery, exposure, paused and
// stalled partitions, and the duplicates of its window with their sources.
func (c *checker) faults(hist [][]commitObs, faults []*faultRun, paused []pausedObs, runEnd int64, ld *testkit.Ledger) {
	a, lg := c.a, c.lg
	a.Faults = make([]faultResult, len(faults))
	names := map[uint16]string{0: "?"}
	for n, i := range ld.Instances {
		names[i] = n
	}
	windowEnd := func(i int) int64 {
		if i+1 < len(faults) {
			return faults[i+1].At
		}
		return runEnd
	}
	for i, f := range faults {
		f.Recovered = recoveredAt(lg, hist, f.End)
		res := &a.Faults[i]
		res.RecoveryS = -1
		if f.Recovered > 0 && f.Recovered <= windowEnd(i) {
			res.RecoveryS = float64(f.Recovered-f.At) / 1e9
		}
		cut, victim := exposureCut(f, ld.Instances)
		// The victim's own deliveries count until the group recovered
		// (a cut-off member delivers until it learns it lost its
		// partitions), at the latest until the next fault.
		victimCut := windowEnd(i)
		if f.Recovered > 0 && f.Recovered < victimCut {
			victimCut = f.Recovered
		}
		for p := range lg {
			base, meta := commitBase(f.Before, p)
			if p >= len(c.ledger) {
				continue
			}
			for o := base; o < int64(len(c.ledger[p])); o++ {
				e := c.ledger[p][o]
				if e.Count > 0 && (e.FirstArrive < cut || (victim != 0 && e.Inst == victim && e.FirstArrive < victimCut)) && !meta.Covered(o) {
					res.Exposure++
				}
			}
		}
		for _, pz := range paused {
			if pz.at >= f.At && pz.at < windowEnd(i) {
				res.MaxPaused = max(res.MaxPaused, pz.paused)
				res.MaxStalled = max(res.MaxStalled, pz.stalled)
			}
		}
		a.Exposure += res.Exposure
	}
	for _, d := range ld.Dups {
		i := faultAt(faults, d.At)
		if i < 0 {
			continue
		}
		res := &a.Faults[i]
		res.Duplicates++
		a.Duplicates++
		base, meta := commitBase(faults[i].Before, int(d.P))
		if d.O < base || meta.Covered(d.O) {
			res.Outside++
		}
		if res.Sources == nil {
			res.Sources = map[string]int64{}
		}
		first := c.ledger[d.P][d.O]
		when := "before"
		switch {
		case first.FirstArrive >= faults[i].End:
			when = "after"
		case first.FirstArrive >= faults[i].At:
			when = "during"
		}
		res.Sources[fmt.Sprintf("%s -> %s, first delivered %s the fault", names[first.Inst], names[d.Inst], when)]++
	}
}

// ages finds the watermark age: how long a visible record waited above the
// commit, the longest overall and per fault.
func (c *checker) ages(hist [][]commitObs, faults []*faultRun) {
	a, lg := c.a, c.lg
	for p := range hist {
		if p >= len(lg) {
			continue
		}
		for _, h := range hist[p] {
			o := max(h.offset, 0)
			for ; o < int64(len(lg[p])) && lg[p][o].kind != offData; o++ {
			}
			if o >= int64(len(lg[p])) || lg[p][o].ts >= h.lastSeen {
				continue
			}
			age := float64(h.lastSeen-lg[p][o].ts) / 1e9
			if age > a.MaxAgeS {
				a.MaxAgeS = age
				a.MaxAgeWhere = fmt.Sprintf("partition %d, commit %d, until %s", p, h.offset, fmtTime(h.lastSeen))
			}
			if i := faultAt(faults, h.lastSeen); i >= 0 {
				a.Faults[i].MaxAgeS = max(a.Faults[i].MaxAgeS, age)
			}
		}
	}
}

// exposureCut says which received records a fault puts at risk: those
// whose first delivery arrived before cut, and, for a member fault, the
// records the victim process delivered first until the group recovered
// (its requests in flight at a kill arrive after it; a stopping member
// delivers until its final commit; a member cut off delivers what it holds
// until it learns that its partitions are gone).
// A member fault threatens the victim's partitions from its signal on (the
// rejoin at its restart moves partitions with a drain and a commit); a
// broker fault threatens every partition until the broker serves again
// (members deliver while it shuts down and until their partitions are
// lost); a sink fault until the sink is normal again. A member that leaves
// or joins while a partition replays in place is a member fault; a kill
// inside a broker outage is both; the retention and unclean-election
// faults act on the sink and the brokers, and count as theirs.
func exposureCut(f *faultRun, instances map[string]uint16) (cut int64, victim uint16) {
	switch f.Kind {
	case kindMemberKill, kindMemberStop, kindMemberCut, kindReplayRebalance:
		return f.At, instances[f.VictimInstance]
	case kindKillInOutage:
		// A broker fault with a member fault inside it.
		return f.End, instances[f.VictimInstance]
	}
	return f.End, 0
}

// commitBase is the commit of partition p in s (offset 0 when there was
// none: the members start at the earliest offset) and its delivered ranges
// when its metadata belongs to that offset.
func commitBase(s snapshot, p int) (int64, commitmeta.Meta) {
	if p >= len(s.commits) || s.commits[p].offset < 0 {
		return 0, commitmeta.Meta{}
	}
	c := s.commits[p]
	if m, err := commitmeta.Decode(c.meta); err == nil && m.Base == c.offset {
		return c.offset, m
	}
	return c.offset, commitmeta.Meta{}
}

// faultAt is the index of the last fault that began at or before t.
func faultAt(faults []*faultRun, t int64) int {
	i := -1
	for j, f := range faults {
		if f.At <= t {
			i = j
		}
	}
	return i
}

// recoveredAt is when, after end, every partition that had a visible record
// waiting above its commit at end had committed past that commit; 0 when
// one never did.
func recoveredAt(lg [][]logRec, hist [][]commitObs, end int64) int64 {
	var latest int64
	for p := range hist {
		if p >= len(lg) {
			continue
		}
		base := int64(-1)
		for _, h := range hist[p] {
			if h.firstSeen <= end {
				base = h.offset
			}
		}
		pending := false
		for o := max(base, 0); o < int64(len(lg[p])); o++ {
			if lg[p][o].kind == offData && lg[p][o].ts < end {
				pending = true
				break
			}
		}
		if !pending {
			continue
		}
		var moved int64
		for _, h := range hist[p] {
			if h.firstSeen > end && h.offset > base {
				moved = h.firstSeen
				break
			}
		}
		if moved == 0 {
			return 0
		}
		latest = max(latest, moved)
	}
	if latest == 0 {
		latest = end
	}
	return latest
}
