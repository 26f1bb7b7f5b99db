package main

import (
	"fmt"
	"math"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// The commit checks of account: no commit, polled or in the commit log,
// passes a visible record (or claims one in its delivered ranges) that the
// sink had not received, nor the dead-letter topic appended with its
// provenance right (deadletters.go), when the commit was made, and none
// goes backwards.

// need is when everything a commit of p at c passed had been received. A
// commit under an old leader epoch above a truncation's divergence passed
// records of the old log: below the divergence the logs agree, above it
// any delivery of the offset counts (the old record's).
func (c *checker) need(p int, off int64, epoch int32, t int64) int64 {
	tr := c.facts.oldCommit(p, off, epoch, t)
	if tr == nil {
		return c.complete[p][off]
	}
	n := c.complete[p][min(tr.Divergence, int64(len(c.lg[p])))]
	for o := tr.Divergence; o < off; o++ {
		e := c.at(p, o)
		if e.Count == 0 {
			return math.MaxInt64
		}
		n = max(n, e.FirstAck)
	}
	return n
}

// firstMissing is the first visible record below off not received by t (t
// in ms when ms is set, else ns).
func (c *checker) firstMissing(p int, off, t int64, ms bool) int64 {
	for o := int64(0); o < off && o < int64(len(c.lg[p])); o++ {
		if c.lg[p][o].kind != offData {
			continue
		}
		ack := c.deliveredAt(p, o, c.lg[p][o].hash)
		if ms && ack != math.MaxInt64 {
			ack /= 1e6
		}
		if ack > t {
			return o
		}
	}
	return -1
}

// checkRanges checks that every visible record in the delivered ranges of
// meta (when they belong to offset) was received by t. Under an old leader
// epoch (old), above the divergence any delivery counts.
func (c *checker) checkRanges(p int, offset int64, meta string, t int64, ms bool, who string, old *truncation) {
	a, lg := c.a, c.lg
	m, _, err := commitmeta.DecodeFields(meta)
	if err != nil || m.Base != offset {
		return
	}
	for _, r := range m.Delivered {
		for o := r.From; o < r.To; o++ {
			a.RangesChecked++
			oldRec := old != nil && o >= old.Divergence
			if o >= int64(len(lg[p])) && !oldRec {
				a.violation("%s: partition %d: commit %d claims [%d,%d) delivered, past the log end %d", who, p, offset, r.From, r.To, len(lg[p]))
				break
			}
			if !oldRec && lg[p][o].kind != offData {
				continue
			}
			ack := int64(math.MaxInt64)
			switch e := c.at(p, o); {
			case !oldRec:
				ack = c.deliveredAt(p, o, lg[p][o].hash)
			case e.Count > 0:
				ack = e.FirstAck
			}
			if ms && ack != math.MaxInt64 {
				ack /= 1e6
			}
			if ack > t {
				a.violation("%s: partition %d: commit %d claims [%d,%d) delivered, but offset %d was not received by then", who, p, offset, r.From, r.To, o)
				break
			}
		}
	}
}

// polled checks every distinct commit polled: nothing below it, nor in its
// ranges, unreceived when it was first seen. It counts the stalls the
// commits carried.
func (c *checker) polled(hist [][]commitObs) {
	a, lg, facts := c.a, c.lg, c.facts
	stalls := map[string]bool{}
	for p := range hist {
		if p >= len(lg) {
			continue
		}
		for _, h := range hist[p] {
			old := facts.oldCommit(p, h.offset, h.epoch, h.firstSeen)
			switch {
			case h.offset > int64(len(lg[p])) && old == nil:
				a.violation("poll: partition %d: commit %d is past the log end %d", p, h.offset, len(lg[p]))
			case h.offset > int64(len(lg[p])):
			case c.need(p, h.offset, h.epoch, h.firstSeen) > h.firstSeen:
				a.violation("poll: partition %d: commit %d seen at %s, but offset %d had not been received by then",
					p, h.offset, fmtTime(h.firstSeen), c.firstMissing(p, h.offset, h.firstSeen, false))
			}
			c.checkRanges(p, h.offset, h.meta, h.firstSeen, false, "poll", old)
			if _, f, err := commitmeta.DecodeFields(h.meta); err == nil {
				if st, ok, err := commitmeta.StallFromFields(f); err == nil && ok {
					stalls[fmt.Sprintf("%d/%d", p, st.First)] = true
				}
			}
		}
	}
	a.StallsInCommits = len(stalls)
}

// commitLog checks every OffsetCommit record in the log: the same as
// polled, at its commit timestamp (ms; the sink records before it answers,
// so a receipt in the same millisecond is in time), and never below the
// one before.
func (c *checker) commitLog(audit []auditRec) {
	a, lg, facts := c.a, c.lg, c.facts
	a.Audited = len(audit)
	lastLog := map[int32]auditRec{}
	usedLog := map[*truncation]bool{}
	for _, r := range audit {
		p := int(r.p)
		if p >= len(lg) {
			continue
		}
		old := facts.oldCommit(p, r.offset, r.epoch, r.commitTs*1e6)
		switch {
		case r.offset > int64(len(lg[p])) && old == nil:
			a.violation("log: partition %d: commit %d (log offset %d) is past the log end %d", p, r.offset, r.logOffset, len(lg[p]))
		case r.offset > int64(len(lg[p])):
		case r.offset >= 0 && c.need(p, r.offset, r.epoch, r.commitTs*1e6)/1e6 > r.commitTs:
			a.violation("log: partition %d: commit %d at %s (log offset %d), but offset %d had not been received by then",
				p, r.offset, fmtTime(r.commitTs*1e6), r.logOffset, c.firstMissing(p, r.offset, r.commitTs, true))
		}
		c.checkRanges(p, r.offset, r.meta, r.commitTs, true, "log", old)
		if prev, ok := lastLog[r.p]; ok && r.offset < prev.offset {
			if facts.backwardStep(p, prev.offset, prev.epoch, prev.commitTs*1e6, r.offset, usedLog) {
				a.BackSteps++
			} else {
				a.BackwardLog = append(a.BackwardLog, fmt.Sprintf("partition %d: commit %d (log offset %d, %s) after %d (log offset %d, %s)",
					p, r.offset, r.logOffset, fmtTime(r.commitTs*1e6), prev.offset, prev.logOffset, fmtTime(prev.commitTs*1e6)))
			}
		}
		lastLog[r.p] = r
	}
}

// backward sorts the polls that read an older commit: stale reads right
// after a broker restart, backward commits otherwise. On a partition an
// unclean election truncated, the polled history is walked again with the
// truncation's one step back allowed.
func (c *checker) backward(hist [][]commitObs, backs []backObs, outages []window) {
	a, facts := c.a, c.facts
	if facts != nil && len(facts.truncations) > 0 {
		truncated := map[int32]bool{}
		for _, t := range facts.truncations {
			truncated[t.P] = true
		}
		var kept []backObs
		for _, b := range backs {
			if !truncated[b.p] {
				kept = append(kept, b)
			}
		}
		used := map[*truncation]bool{}
		for p := range hist {
			if !truncated[int32(p)] {
				continue
			}
			var top commitObs
			seen := false
			for _, h := range hist[p] {
				switch {
				case !seen || h.offset >= top.offset:
					top, seen = h, true
				case facts.backwardStep(p, top.offset, top.epoch, top.firstSeen, h.offset, used):
					a.BackSteps++
					top = h
				default:
					kept = append(kept, backObs{p: int32(p), from: top.offset, to: h.offset, at: h.firstSeen})
				}
			}
		}
		backs = kept
	}
	for _, b := range backs {
		stale := false
		for _, w := range outages {
			to := w.to
			if to == 0 {
				to = math.MaxInt64 - int64(staleGrace)
			}
			if b.at >= w.from && b.at <= to+int64(staleGrace) {
				stale = true
			}
		}
		if stale {
			a.StaleReads++
			continue
		}
		a.BackwardPolled = append(a.BackwardPolled, fmt.Sprintf("partition %d: polled %d at %s after %d", b.p, b.to, fmtTime(b.at), b.from))
	}
}
