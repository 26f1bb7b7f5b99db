package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// Kinds of offsets in the log, as read back after the run.
const (
	offUnknown byte = 0
	offData    byte = 'd' // a record a read_committed consumer sees
	offAborted byte = 'a' // a record of an aborted transaction
	offMarker  byte = 'm' // a transaction marker (control record)
	offDeleted byte = 'x' // below the log start: deleted (what it was: logRec.was)
)

// logRec is one offset of the topic as read back after the run.
type logRec struct {
	kind byte
	hash uint32
	ts   int64 // the record's timestamp (the producer's clock), Unix ns
	// Deleted offsets only: what the producers wrote there (offData,
	// offAborted, or offUnknown for a marker or a record of unknown fate)
	// and when a fault of the harness deleted it (Unix ns; 0: not the
	// harness).
	was  byte
	gone int64
}

// readTopic reads every partition of topic from starts to ends, once at
// read_committed (visible records and markers) and once at
// read_uncommitted (what is left are the aborted records). Offsets below a
// partition's start are offDeleted.
func readTopic(ctx context.Context, brokers, topic string, starts, ends []int64) ([][]logRec, error) {
	out := make([][]logRec, len(ends))
	for p, e := range ends {
		out[p] = make([]logRec, e)
		for o := int64(0); o < min(starts[p], e); o++ {
			out[p][o].kind = offDeleted
		}
	}
	for _, committed := range []bool{true, false} {
		if err := readPass(ctx, brokers, topic, starts, ends, committed, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func readPass(ctx context.Context, brokers, topic string, starts, ends []int64, committed bool, out [][]logRec) error {
	offsets := map[int32]kgo.Offset{}
	left := 0
	for p, e := range ends {
		if e > starts[p] {
			offsets[int32(p)] = kgo.NewOffset().AtStart()
			left++
		}
	}
	if left == 0 {
		return nil
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(seedList(brokers)...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.KeepControlRecords(),
		kgo.ClientID("chaos-reader"),
	}
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	done := make([]bool, len(ends))
	for left > 0 {
		fs := cl.PollFetches(rctx)
		if rctx.Err() != nil {
			return fmt.Errorf("read back %s (read_committed %v): %d partitions not read to their end: %w", topic, committed, left, rctx.Err())
		}
		fs.EachError(func(_ string, p int32, err error) {
			if ctx.Err() == nil {
				fmt.Printf("chaos: read back partition %d: %v\n", p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			p := r.Partition
			if int(p) >= len(ends) || r.Offset >= ends[p] || r.Offset < starts[p] {
				return
			}
			lr := &out[p][r.Offset]
			switch {
			case r.Attrs.IsControl():
				lr.kind = offMarker
			case committed:
				*lr = logRec{kind: offData, hash: testkit.HashValue(string(r.Value)), ts: r.Timestamp.UnixNano()}
			case lr.kind == offUnknown:
				*lr = logRec{kind: offAborted, hash: testkit.HashValue(string(r.Value)), ts: r.Timestamp.UnixNano()}
			}
			if r.Offset == ends[p]-1 && !done[p] {
				done[p] = true
				left--
			}
		})
	}
	return nil
}

// auditRec is one OffsetCommit record of the group in __consumer_offsets.
type auditRec struct {
	p         int32
	offset    int64
	epoch     int32 // the leader epoch the commit carries (-1: none)
	meta      string
	commitTs  int64 // ms, the broker's clock
	logOffset int64
}

// readCommitLog reads __consumer_offsets from its start to its end and
// returns the group's OffsetCommit records for topic, in log order.
func readCommitLog(ctx context.Context, brokers, group, topic string) ([]auditRec, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seedList(brokers)...), kgo.ClientID("chaos-auditor"))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	actx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	ends, err := adm.ListEndOffsets(actx, "__consumer_offsets")
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("end offsets of __consumer_offsets: %w", err)
	}
	want := map[int32]int64{}
	offsets := map[int32]kgo.Offset{}
	ends.Each(func(l kadm.ListedOffset) {
		if l.Offset > 0 {
			want[l.Partition] = l.Offset
			offsets[l.Partition] = kgo.NewOffset().AtStart()
		}
	})
	if len(want) == 0 {
		return nil, nil
	}
	rd, err := kgo.NewClient(kgo.SeedBrokers(seedList(brokers)...), kgo.ClientID("chaos-auditor"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"__consumer_offsets": offsets}))
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	var out []auditRec
	for len(want) > 0 {
		fs := rd.PollFetches(actx)
		if actx.Err() != nil {
			return nil, fmt.Errorf("read __consumer_offsets: %w", actx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if e, ok := want[r.Partition]; ok && r.Offset >= e-1 {
				delete(want, r.Partition)
			}
			if len(r.Key) < 2 || r.Value == nil {
				return
			}
			if v := int16(binary.BigEndian.Uint16(r.Key)); v != 0 && v != 1 {
				return // group metadata and other record types
			}
			var k kmsg.OffsetCommitKey
			if k.ReadFrom(r.Key) != nil || k.Group != group || k.Topic != topic {
				return
			}
			var v kmsg.OffsetCommitValue
			if err := v.ReadFrom(r.Value); err != nil {
				return
			}
			epoch := int32(-1)
			if v.Version >= 3 {
				epoch = v.LeaderEpoch
			}
			out = append(out, auditRec{p: k.Partition, offset: v.Offset, epoch: epoch, meta: v.Metadata, commitTs: v.CommitTimestamp, logOffset: r.Offset})
		})
	}
	slices.SortStableFunc(out, func(a, b auditRec) int { return int(a.logOffset - b.logOffset) })
	return out, nil
}

// faultRun is one fault as it was run (index 0 is the start of the group).
type faultRun struct {
	plannedFault
	VictimInstance string   // the member process the fault hit
	At             int64    // Unix ns: when it began
	End            int64    // when its action was over (the victim back, the sink normal)
	Before         snapshot // the commits polled last before At
	AtEnd          snapshot // the commits polled last before End
	Err            string
	Note           string
	Recovered      int64 // computed: when every partition committed again after End (0: never)
}

// faultResult is the accounting of one fault.
type faultResult struct {
	Duplicates int64   `json:"duplicates"`
	Exposure   int64   `json:"exposure"`
	Outside    int64   `json:"outside_replay"` // duplicates below the commit or inside its ranges
	RecoveryS  float64 `json:"recovery_s"`     // -1: commits did not move again before the next fault / the end
	MaxAgeS    float64 `json:"max_watermark_age_s"`
	MaxPaused  int     `json:"max_paused_partitions"`
	MaxStalled int     `json:"max_stalled_partitions"`
	// Sources breaks the duplicates down: "first deliverer -> repeat
	// deliverer, first delivered before|during|after the fault".
	Sources map[string]int64 `json:"duplicate_sources,omitempty"`
}

// accounting is everything the checker concludes.
type accounting struct {
	Records         int64
	Aborted         int64
	Markers         int64
	Received        int64 // distinct visible records received
	Deliveries      int64
	Lost            int64
	LostExamples    []string
	AbortedReceived int64
	Phantom         int64 // received offsets that hold no visible record
	Corrupt         int64
	Deleted         int64 // offsets below the log start at the end
	DeletedReceived int64 // of those, offsets received before they went
	BadExamples     []string
	Violations      []string
	ViolationsN     int64
	BackwardLog     []string
	BackwardPolled  []string
	StaleReads      int64
	Duplicates      int64
	Exposure        int64
	Faults          []faultResult
	MaxAgeS         float64
	MaxAgeWhere     string
	Audited         int // OffsetCommit records read from the log
	StallsInCommits int // distinct stalls (partition, failed batch) the polled commits carried
	RangesChecked   int64
	BackSteps       int // backward commits a truncation allowed (in the log and polled)
	Loss            lossResult
	LossMetrics     []string // loss counters that disagree with the loss lines
}

// staleGrace is how long after a broker is back a poll may still read an
// older commit (the coordinator still loading __consumer_offsets; see the
// broker notes): such a poll is a stale read, not a backward commit. The
// commit log audit has no such allowance.
const staleGrace = 20 * time.Second

const maxExamples = 20

func (a *accounting) violation(format string, args ...any) {
	a.ViolationsN++
	if len(a.Violations) < maxExamples {
		a.Violations = append(a.Violations, fmt.Sprintf(format, args...))
	}
}

// account checks the guarantee against the log read back, the sink's
// ledger, the commits polled and the commit log, and counts duplicates and
// exposure per fault. facts (nil: none) is what the harness itself did to
// the log: records it deleted are not expected to be delivered, and offsets
// an unclean election rewrote hold an old record (delivered or not) and a
// new one (which must be delivered).
func account(lg [][]logRec, ld *testkit.Ledger, hist [][]commitObs, backs []backObs, audit []auditRec,
	outages []window, faults []*faultRun, paused []pausedObs, runEnd int64, facts *lossFacts) *accounting {
	a := &accounting{}
	ledger, dups := ld.Parts, ld.Dups
	at := func(p int, o int64) testkit.Entry {
		if p < len(ledger) && o >= 0 && o < int64(len(ledger[p])) {
			return ledger[p][o]
		}
		return testkit.Entry{}
	}
	alts := map[[2]int64][]testkit.Alt{}
	for _, d := range ld.Alts {
		k := [2]int64{int64(d.P), d.O}
		alts[k] = append(alts[k], d)
	}
	// acked is when the value the log holds at p/o was first received
	// (Unix ns; MaxInt64 when it never was): the first delivery, or a later
	// one with another value than the first (an offset an unclean election
	// rewrote).
	acked := func(p int, o int64, hash uint32) int64 {
		e := at(p, o)
		if e.Count > 0 && e.Hash == hash {
			return e.FirstAck
		}
		t := int64(math.MaxInt64)
		for _, d := range alts[[2]int64{int64(p), o}] {
			if d.Hash == hash {
				t = min(t, d.At)
			}
		}
		return t
	}

	// onlyOld: every value delivered at p/o is a record of the old log that
	// an unclean election rewrote (whatever the new log holds there now:
	// even a marker or an aborted record).
	onlyOld := func(p int, o int64, e testkit.Entry) bool {
		if e.Count == 0 || !facts.oldValue(p, o, e.Hash, e.FirstArrive) {
			return false
		}
		for _, d := range alts[[2]int64{int64(p), o}] {
			if !facts.oldValue(p, o, d.Hash, d.At) {
				return false
			}
		}
		return true
	}

	// Records, lost, aborted received, phantoms, corruption.
	for p := range lg {
		for o, r := range lg[p] {
			e := at(p, int64(o))
			switch r.kind {
			case offData:
				a.Records++
				if acked(p, int64(o), r.hash) == math.MaxInt64 {
					a.Lost++
					if len(a.LostExamples) < maxExamples {
						what := fmt.Sprintf("%d/%d", p, o)
						if e.Count > 0 {
							what += " (only another value was delivered)"
						}
						a.LostExamples = append(a.LostExamples, what)
					}
				} else {
					a.Received++
				}
				if e.Count > 0 && e.Hash != r.hash && !facts.oldValue(p, int64(o), e.Hash, e.FirstArrive) {
					a.Corrupt++
					a.bad("%d/%d received with another value than the log holds", p, o)
				}
				for _, d := range alts[[2]int64{int64(p), int64(o)}] {
					if d.Hash != r.hash && !facts.oldValue(p, int64(o), d.Hash, d.At) {
						a.Corrupt++
						a.bad("%d/%d received again with another value than the log holds", p, o)
					}
				}
			case offDeleted:
				a.Deleted++
				if e.Count > 0 {
					a.DeletedReceived++
				}
			case offAborted:
				a.Aborted++
				if e.Count > 0 && !onlyOld(p, int64(o), e) {
					a.AbortedReceived++
					a.bad("%d/%d is a record of an aborted transaction, received %d time(s)", p, o, e.Count)
				}
			case offMarker:
				a.Markers++
				if e.Count > 0 && !onlyOld(p, int64(o), e) {
					a.Phantom++
					a.bad("%d/%d is a transaction marker, received %d time(s)", p, o, e.Count)
				}
			default:
				if e.Count > 0 && !onlyOld(p, int64(o), e) {
					a.Phantom++
					a.bad("%d/%d was not read back from the log, received %d time(s)", p, o, e.Count)
				}
			}
		}
		if p < len(ledger) {
			for o := int64(len(lg[p])); o < int64(len(ledger[p])); o++ {
				if ledger[p][o].Count > 0 && facts.rewritten(p, o) == nil {
					a.Phantom++
					a.bad("%d/%d is past the log end %d, received", p, o, len(lg[p]))
				}
			}
		}
		for o := range ledger[p] {
			a.Deliveries += int64(ledger[p][o].Count)
		}
	}

	// complete[p][c]: when every visible record below c had been received
	// (Unix ns; MaxInt64 when one never was). A visible record the harness
	// deleted counts from when it was received or deleted, whichever came
	// first: a commit may pass it once it is gone.
	complete := make([][]int64, len(lg))
	for p := range lg {
		c := make([]int64, len(lg[p])+1)
		for o, r := range lg[p] {
			t := int64(0)
			switch {
			case r.kind == offData:
				t = acked(p, int64(o), r.hash)
			case r.kind == offDeleted && r.was == offData && r.gone > 0:
				t = r.gone
				if e := at(p, int64(o)); e.Count > 0 {
					t = min(t, e.FirstAck)
				}
			}
			c[o+1] = max(c[o], t)
		}
		complete[p] = c
	}
	// need is when everything a commit of p at c passed had been received.
	// A commit under an old leader epoch above a truncation's divergence
	// passed records of the old log: below the divergence the logs agree,
	// above it any delivery of the offset counts (the old record's).
	need := func(p int, c int64, epoch int32, t int64) int64 {
		tr := facts.oldCommit(p, c, epoch, t)
		if tr == nil {
			return complete[p][c]
		}
		n := complete[p][min(tr.Divergence, int64(len(lg[p])))]
		for o := tr.Divergence; o < c; o++ {
			e := at(p, o)
			if e.Count == 0 {
				return math.MaxInt64
			}
			n = max(n, e.FirstAck)
		}
		return n
	}
	// firstMissing is the first visible record below c not received by t.
	firstMissing := func(p int, c, t int64, ms bool) int64 {
		for o := int64(0); o < c && o < int64(len(lg[p])); o++ {
			if lg[p][o].kind != offData {
				continue
			}
			e := at(p, o)
			ack := e.FirstAck
			if ms {
				ack /= 1e6
			}
			if e.Count == 0 || ack > t {
				return o
			}
		}
		return -1
	}
	// checkRanges checks that every visible record in the delivered ranges
	// of meta (when they belong to offset) was received by t. Under an old
	// leader epoch (old), above the divergence any delivery counts.
	checkRanges := func(p int, offset int64, meta string, t int64, ms bool, who string, old *truncation) {
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
				e := at(p, o)
				ack := e.FirstAck
				if !oldRec {
					ack = acked(p, o, lg[p][o].hash)
				}
				if ms && ack != math.MaxInt64 {
					ack /= 1e6
				}
				if e.Count == 0 || ack > t {
					a.violation("%s: partition %d: commit %d claims [%d,%d) delivered, but offset %d was not received by then", who, p, offset, r.From, r.To, o)
					break
				}
			}
		}
	}

	// Every distinct commit polled: nothing below it, nor in its ranges,
	// unreceived when it was first seen.
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
			case need(p, h.offset, h.epoch, h.firstSeen) > h.firstSeen:
				a.violation("poll: partition %d: commit %d seen at %s, but offset %d had not been received by then",
					p, h.offset, fmtTime(h.firstSeen), firstMissing(p, h.offset, h.firstSeen, false))
			}
			checkRanges(p, h.offset, h.meta, h.firstSeen, false, "poll", old)
			if _, f, err := commitmeta.DecodeFields(h.meta); err == nil {
				if st, ok, err := commitmeta.StallFromFields(f); err == nil && ok {
					stalls[fmt.Sprintf("%d/%d", p, st.First)] = true
				}
			}
		}
	}
	a.StallsInCommits = len(stalls)

	// Every OffsetCommit record in the log: the same, at its commit
	// timestamp (ms; the sink records before it answers, so a receipt in
	// the same millisecond is in time), and never below the one before.
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
		case r.offset >= 0 && need(p, r.offset, r.epoch, r.commitTs*1e6)/1e6 > r.commitTs:
			a.violation("log: partition %d: commit %d at %s (log offset %d), but offset %d had not been received by then",
				p, r.offset, fmtTime(r.commitTs*1e6), r.logOffset, firstMissing(p, r.offset, r.commitTs, true))
		}
		checkRanges(p, r.offset, r.meta, r.commitTs, true, "log", old)
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

	// Polls that read an older commit: stale reads right after a broker
	// restart, backward commits otherwise. On a partition an unclean
	// election truncated, the polled history is walked again with the
	// truncation's one step back allowed.
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

	// Per fault: the window from its start to the next one's.
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
			if p >= len(ledger) {
				continue
			}
			for o := base; o < int64(len(ledger[p])); o++ {
				e := ledger[p][o]
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
	for _, d := range dups {
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
		first := ledger[d.P][d.O]
		when := "before"
		switch {
		case first.FirstArrive >= faults[i].End:
			when = "after"
		case first.FirstArrive >= faults[i].At:
			when = "during"
		}
		res.Sources[fmt.Sprintf("%s -> %s, first delivered %s the fault", names[first.Inst], names[d.Inst], when)]++
	}

	// Watermark age: how long a visible record waited above the commit.
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
	return a
}

func (a *accounting) bad(format string, args ...any) {
	if len(a.BadExamples) < maxExamples {
		a.BadExamples = append(a.BadExamples, fmt.Sprintf(format, args...))
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

func fmtTime(ns int64) string {
	return time.Unix(0, ns).UTC().Format("15:04:05.000")
}
