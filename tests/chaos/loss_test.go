package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// The loss reports, read from the members' logs, and the checker's rules
// for records Kafka took away: deletions (the retention fault) and
// truncations (the unclean-election fault).

func TestParseLossLine(t *testing.T) {
	const (
		lostMsg  = `kafka_watermark: lost 120 record offset(s) of chaos-1-2345/7 before delivery: offsets 400-529 are no longer in the log, which now starts at 530 (cause: retention)`
		truncMsg = `kafka_watermark: log of chaos-1-2345/3 truncated at offset 812 by an unclean leader election: 37 delivered record offset(s) from 812 to 848 are no longer in the log and are delivered again from the new log (cause: truncation)`
	)
	logfmt := func(level, msg string) string {
		return `time="2026-12-02T03:52:00Z" level=` + level + ` msg="` + strings.ReplaceAll(msg, `"`, `\"`) + `" @service=redpanda-connect label="" path=root.input`
	}
	for _, c := range []struct {
		name, line string
		ok         bool
		err        bool
		want       lossEvent
	}{
		{name: "logfmt loss", line: logfmt("error", lostMsg), ok: true,
			want: lossEvent{Level: "error", Topic: "chaos-1-2345", Partition: 7, Count: 120, First: 400, Last: 529, LogStart: 530, Cause: causeRetention}},
		{name: "logfmt truncation", line: logfmt("error", truncMsg), ok: true,
			want: lossEvent{Level: "error", Truncated: true, Topic: "chaos-1-2345", Partition: 3, Count: 37, First: 812, Last: 848, LogStart: -1, Cause: causeTruncation}},
		{name: "json", line: `{"level":"error","msg":"` + lostMsg + `","path":"root.input"}`, ok: true,
			want: lossEvent{Level: "error", Topic: "chaos-1-2345", Partition: 7, Count: 120, First: 400, Last: 529, LogStart: 530, Cause: causeRetention}},
		{name: "bare message", line: lostMsg, ok: true,
			want: lossEvent{Topic: "chaos-1-2345", Partition: 7, Count: 120, First: 400, Last: 529, LogStart: 530, Cause: causeRetention}},
		{name: "cause unknown, some delivered", line: logfmt("error", `kafka_watermark: lost 3 record offset(s) of t/0 before delivery: offsets 10-19 are no longer in the log, which now starts at 20 (cause: unknown)`), ok: true,
			want: lossEvent{Level: "error", Topic: "t", Partition: 0, Count: 3, First: 10, Last: 19, LogStart: 20, Cause: causeUnknown}},
		{name: "lost of a truncation", line: logfmt("error", `kafka_watermark: lost 5 record offset(s) of t/2 before delivery: offsets 849-853 are no longer in the log, which now starts at 812 (cause: truncation)`), ok: true,
			want: lossEvent{Level: "error", Topic: "t", Partition: 2, Count: 5, First: 849, Last: 853, LogStart: 812, Cause: causeTruncation}},
		{name: "at warn", line: logfmt("warning", lostMsg), ok: true,
			want: lossEvent{Level: "warning", Topic: "chaos-1-2345", Partition: 7, Count: 120, First: 400, Last: 529, LogStart: 530, Cause: causeRetention}},
		// Lines that are no loss report.
		{name: "a partition lost in a rebalance", line: logfmt("warning", "kafka_watermark: lost chaos-1-2345/10: dropped without a commit; its in-flight acks are ignored")},
		{name: "a stall", line: logfmt("error", "kafka_watermark: partition chaos-1/3 stalled since 03:52:00 at its failed batch (through offset 12): commits stop before offset 10")},
		{name: "another component", line: `time="x" level=info msg="Input type kafka_watermark is now active"`},
		// Loss reports the checker cannot read: never skipped in silence.
		{name: "another wording", line: logfmt("error", "kafka_watermark: lost 12 record offset(s) of t/1 before delivery: offsets 1-12 are gone"), ok: true, err: true},
		{name: "count above the range", line: logfmt("error", "kafka_watermark: lost 12 record offset(s) of t/1 before delivery: offsets 1-5 are no longer in the log, which now starts at 6 (cause: retention)"), ok: true, err: true},
		{name: "retention not past the offsets", line: logfmt("error", "kafka_watermark: lost 5 record offset(s) of t/1 before delivery: offsets 1-5 are no longer in the log, which now starts at 3 (cause: retention)"), ok: true, err: true},
		{name: "truncation from elsewhere", line: logfmt("error", "kafka_watermark: log of t/1 truncated at offset 9 by an unclean leader election: 2 delivered record offset(s) from 8 to 10 are no longer in the log and are delivered again from the new log (cause: truncation)"), ok: true, err: true},
	} {
		got, ok, err := parseLossLine(c.line)
		if ok != c.ok || (err != nil) != c.err {
			t.Errorf("%s: parseLossLine = ok %v, err %v; want ok %v, err %v", c.name, ok, err, c.ok, c.err)
			continue
		}
		if c.ok && !c.err && got != c.want {
			t.Errorf("%s: parseLossLine = %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestLogfmtValue(t *testing.T) {
	line := `time="2026-12-02T03:52:00Z" level=error msg="a \"quoted\" msg=inside" xmsg=no`
	for key, want := range map[string]string{"level": "error", "msg": `a "quoted" msg=inside`, "time": "2026-12-02T03:52:00Z"} {
		if got, ok := logfmtValue(line, key); !ok || got != want {
			t.Errorf("logfmtValue(%s) = %q, %v; want %q", key, got, ok, want)
		}
	}
	if _, ok := logfmtValue(line, "label"); ok {
		t.Error("logfmtValue found a key the line does not have")
	}
}

// deletedScenario: one partition of 20 offsets, the harness deleted 0-11 at
// 50s while the commit stood at 4. The sink had 0-3 and 6 (an island above
// the commit, in its delivered ranges with 7, a marker); 5, 8-11 never
// came. 9 was a marker, the rest visible records; 12-19 are in the log.
func deletedScenario() ([][]logRec, *testkit.Ledger, *lossFacts) {
	lg := [][]logRec{make([]logRec, 20)}
	for o := range lg[0] {
		lg[0][o] = logRec{kind: offData, hash: uint32(o), ts: int64(o) * 1e9}
	}
	for o := range 12 {
		lg[0][o] = logRec{kind: offDeleted, was: offData, hash: uint32(o), gone: 50e9}
	}
	lg[0][7].was, lg[0][9].was = offUnknown, offUnknown
	ld := delivered(10e9, 0, 1, 2, 3, 6)
	ld.Parts[0] = append(ld.Parts[0], make([]testkit.Entry, 10)...)
	for o := int64(12); o < 20; o++ {
		ld.Parts[0][o] = testkit.Entry{Count: 1, Hash: uint32(o), FirstArrive: 40e9, FirstAck: 40e9, Inst: 1}
	}
	facts := &lossFacts{deletions: []deletion{{Fault: 1, P: 0, From: 0, To: 12, End: 20, Commit: 4, Meta: "wm1 o=4 e=-1 d=2.2", At: 50e9, Received: 5,
		Unreceived: []span{{4, 6}, {8, 12}}}}}
	return lg, ld, facts
}

func TestCheckLossesRetention(t *testing.T) {
	lg, ld, facts := deletedScenario()
	ev := func(inst string, count, first, last int64) lossEvent {
		return lossEvent{Instance: inst, Level: "error", Topic: "t", Partition: 0, Count: count, First: first, Last: last, LogStart: 12, Cause: causeRetention}
	}
	for _, c := range []struct {
		name       string
		events     []lossEvent
		reported   int64
		mismatches int
		unreported int64
	}{
		// 4 (the commit: the failed batch), 5, 8, 9, 10, 11: 6 offsets.
		{name: "exact", events: []lossEvent{ev("m1.1", 6, 4, 11)}, reported: 6},
		{name: "in two lines", events: []lossEvent{ev("m1.1", 2, 10, 11), ev("m1.1", 4, 4, 9)}, reported: 6},
		{name: "again by the next owner", events: []lossEvent{ev("m1.1", 6, 4, 11), ev("m2.1", 6, 4, 11), ev("m3.1", 2, 10, 11)}, reported: 6},
		// Unreported, the deleted visible records never delivered are lost:
		// 4, 5, 8, 10, 11 (9 was a marker).
		{name: "none", reported: 0, mismatches: 1, unreported: 5},
		// 8 of 8 names every offset: 6 (delivered) and 7 (in the commit's
		// ranges) are not lost.
		{name: "too many", events: []lossEvent{ev("m1.1", 8, 4, 11)}, reported: 8, mismatches: 2},
		{name: "another topic", events: []lossEvent{{Topic: "other", Partition: 0, Count: 6, First: 4, Last: 11, Cause: causeRetention}}, reported: 0, mismatches: 1, unreported: 5},
	} {
		r, ex := checkLosses(lg, ld, facts, c.events, "t")
		if r.Expected != 6 || r.ReportedLost != c.reported || len(r.Mismatches) != c.mismatches || r.LostUnreported != c.unreported || len(ex) != int(c.unreported) {
			t.Errorf("%s: expected %d, reported %d, mismatches %v, unreported %d %v; want 6, %d, %d mismatch(es), %d unreported",
				c.name, r.Expected, r.ReportedLost, r.Mismatches, r.LostUnreported, ex, c.reported, c.mismatches, c.unreported)
		}
		if r.Deleted != 12 || r.DeletedReceived != 5 {
			t.Errorf("%s: deleted %d (received %d), want 12 (5)", c.name, r.Deleted, r.DeletedReceived)
		}
	}
	// A deleted offset a member still delivered from memory afterwards is
	// no loss to report.
	ld.Parts[0][5] = testkit.Entry{Count: 1, Hash: 5, FirstArrive: 55e9, FirstAck: 55e9}
	r, _ := checkLosses(lg, ld, facts, []lossEvent{ev("m1.1", 5, 4, 11)}, "t")
	if r.Expected != 5 || r.LaterDelivered != 1 || len(r.Mismatches) != 0 {
		t.Errorf("delivered after the deletion: %+v", r)
	}
	// The message names the partition, both figures and the offsets.
	r, _ = checkLosses(lg, delivered(10e9, 0, 1, 2, 3, 6), facts, nil, "t")
	if len(r.Mismatches) != 1 || !strings.Contains(r.Mismatches[0], "partition 0: the members reported 0 offset(s) lost (none); the harness deleted 6 offset(s) before any sink had them ([4,6); [8,12))") {
		t.Errorf("mismatch message %q", r.Mismatches)
	}
}

// Seen in a run (seed 1, retention only, at f7c1160): the member reported
// "lost 33 ... offsets 698-731" (34 offsets, the delivered 702 left out),
// then at its next replay in place "lost 1 ... offsets 702-702". A process
// reports a loss once: its second line counts in full, and names a
// delivered offset.
// An offset a sink received at or above the commit, outside its ranges,
// whose ack no member may have seen (a request of a member killed or
// revoked mid-flight completes at the sink): a member that reports it lost
// reports what it knows, and is not faulted for it; seen in a 20-minute
// run (m1.13 reported 309 where 302 had reached no sink).
func TestCheckLossesExcusesReceivedButUnacked(t *testing.T) {
	lg, ld, facts := deletedScenario()
	ld.Parts[0][5] = testkit.Entry{Count: 1, Hash: 5, FirstArrive: 45e9, FirstAck: 45e9}
	ev := lossEvent{Instance: "m1.1", Level: "error", Topic: "t", Partition: 0, Count: 6, First: 4, Last: 11, LogStart: 12, Cause: causeRetention}
	r, _ := checkLosses(lg, ld, facts, []lossEvent{ev}, "t")
	if r.Expected != 5 || r.ReportedLost != 6 || len(r.Mismatches) != 0 || len(r.Notes) != 1 {
		t.Errorf("expected %d, reported %d, mismatches %v, notes %v; want 5, 6, none, one", r.Expected, r.ReportedLost, r.Mismatches, r.Notes)
	}
	// Still short of what no sink had is a mismatch.
	ev.Count, ev.First, ev.Last = 2, 10, 11
	if r, _ := checkLosses(lg, ld, facts, []lossEvent{ev}, "t"); len(r.Mismatches) != 1 {
		t.Errorf("2 of 5 reported: mismatches %v, want one", r.Mismatches)
	}
}

func TestCheckLossesSameProcessTwice(t *testing.T) {
	lg, ld, facts := deletedScenario()
	ev := func(count, first, last int64) lossEvent {
		return lossEvent{Instance: "m3.2", Level: "error", Topic: "t", Partition: 0, Count: count, First: first, Last: last, LogStart: 12, Cause: causeRetention}
	}
	r, _ := checkLosses(lg, ld, facts, []lossEvent{ev(6, 4, 11), ev(1, 6, 6)}, "t")
	if r.ReportedLost != 7 || r.Expected != 6 || len(r.Mismatches) != 2 || len(r.Overlaps) != 1 {
		t.Fatalf("reported %d, expected %d, mismatches %v, overlaps %v; want 7, 6, two, one", r.ReportedLost, r.Expected, r.Mismatches, r.Overlaps)
	}
	if !strings.Contains(r.Mismatches[0], "offset(s) [6,7) are not among those deleted before any sink had them") {
		t.Errorf("the line naming 6: %q", r.Mismatches[0])
	}
	if !strings.Contains(r.Mismatches[1], "partition 0: the members reported 7 offset(s) lost") {
		t.Errorf("the count: %q", r.Mismatches[1])
	}
}

// A commit may pass a deleted record the group never received once it is
// gone, never before; a deleted offset received before it went is no
// phantom, and is not lost.
func TestAccountDeletedOffsets(t *testing.T) {
	lg, ld, facts := deletedScenario()
	faults := []*faultRun{{plannedFault: plannedFault{Kind: kindStart}, At: 1e9, End: 2e9, Before: snapshot{commits: []commitObs{{offset: -1}}}}}
	hist := [][]commitObs{{
		{offset: 4, epoch: -1, meta: "wm1 o=4 e=-1 d=2.2", firstSeen: 20e9, lastSeen: 49e9},
		{offset: 20, epoch: -1, firstSeen: 61e9, lastSeen: 70e9}, // after the deletion and the rest
	}}
	a := account(lg, ld, hist, nil, nil, nil, faults, nil, 100e9, facts, nil)
	if a.Lost != 0 || a.Phantom != 0 || a.ViolationsN != 0 || a.Deleted != 12 || a.DeletedReceived != 5 || a.Records != 8 {
		t.Fatalf("deleted offsets: lost %d, phantom %d, violations %v, deleted %d (%d received), records %d; want 0, 0, none, 12 (5), 8",
			a.Lost, a.Phantom, a.Violations, a.Deleted, a.DeletedReceived, a.Records)
	}
	// The same commit of 20 seen before the deletion passed 4, 5, 8, 10
	// and 11, which were neither received nor gone yet.
	hist[0][1].firstSeen = 45e9
	a = account(lg, ld, hist, nil, nil, nil, faults, nil, 100e9, facts, nil)
	if a.ViolationsN != 1 {
		t.Errorf("a commit past deleted records before their deletion: violations %v, want 1", a.Violations)
	}
}

// truncScenario: one partition; an unclean election at 50s rewrote offsets
// 6-9 (divergence 6, leader epoch 3 to 5). The old log's 6-9 (hashes
// 106-109) were delivered before it; the new log holds 6-11 (hashes 6-11).
func truncScenario() ([][]logRec, *testkit.Ledger, *lossFacts) {
	lg := [][]logRec{make([]logRec, 12)}
	for o := range lg[0] {
		lg[0][o] = logRec{kind: offData, hash: uint32(o), ts: int64(o) * 1e9}
	}
	ld := delivered(10e9, 0, 1, 2, 3, 4, 5)
	ld.Parts[0] = append(ld.Parts[0], make([]testkit.Entry, 2)...)
	for o := int64(6); o < 10; o++ {
		ld.Parts[0][o] = testkit.Entry{Count: 1, Hash: uint32(100 + o), FirstArrive: 40e9, FirstAck: 40e9, Inst: 1}
	}
	for o := int64(6); o < 12; o++ {
		if o < 10 {
			ld.Parts[0][o].Count++
			ld.Alts = append(ld.Alts, testkit.Alt{P: 0, O: o, Hash: uint32(o), At: 60e9, Inst: 2})
		} else {
			ld.Parts[0][o] = testkit.Entry{Count: 1, Hash: uint32(o), FirstArrive: 60e9, FirstAck: 60e9, Inst: 2}
		}
	}
	facts := &lossFacts{truncations: []truncation{{Fault: 2, P: 0, Divergence: 6, OldEnd: 10, OldEpoch: 3, NewEpoch: 5, ElectedAt: 50e9,
		Old: map[int64]uint32{6: 106, 7: 107, 8: 108, 9: 109}, Rewritten: 4}}}
	return lg, ld, facts
}

func TestAccountTruncation(t *testing.T) {
	lg, ld, facts := truncScenario()
	faults := []*faultRun{{plannedFault: plannedFault{Kind: kindStart}, At: 1e9, End: 2e9, Before: snapshot{commits: []commitObs{{offset: -1}}}}}
	// Commits: 10 under epoch 3 (passing the old 6-9, delivered at 40s),
	// back to 6 (the divergence) under epoch 5, then 12.
	audit := []auditRec{
		{p: 0, offset: 10, epoch: 3, commitTs: 45e3, logOffset: 1},
		{p: 0, offset: 6, epoch: 3, commitTs: 55e3, logOffset: 2},
		{p: 0, offset: 12, epoch: 5, commitTs: 65e3, logOffset: 3},
	}
	hist := [][]commitObs{{
		{offset: 10, epoch: 3, firstSeen: 45e9, lastSeen: 46e9},
		{offset: 6, epoch: 3, firstSeen: 55e9, lastSeen: 56e9},
		{offset: 12, epoch: 5, firstSeen: 65e9, lastSeen: 66e9},
	}}
	backs := []backObs{{p: 0, from: 10, to: 6, at: 55e9}}
	a := account(lg, ld, hist, backs, audit, nil, faults, nil, 100e9, facts, nil)
	if a.Lost != 0 || a.Corrupt != 0 || a.ViolationsN != 0 || len(a.BackwardLog) != 0 || len(a.BackwardPolled) != 0 || a.BackSteps != 2 {
		t.Fatalf("truncation: lost %d, corrupt %d %v, violations %v, backward %v %v, steps %d; want 0, 0, none, none, 2 steps",
			a.Lost, a.Corrupt, a.BadExamples, a.Violations, a.BackwardLog, a.BackwardPolled, a.BackSteps)
	}

	// Nothing else goes back: a second step back, to the divergence again,
	// and a step back to anywhere else.
	audit2 := append(slices.Clone(audit), auditRec{p: 0, offset: 11, epoch: 5, commitTs: 66e3, logOffset: 4}, auditRec{p: 0, offset: 6, epoch: 5, commitTs: 67e3, logOffset: 5})
	a = account(lg, ld, hist, backs, audit2, nil, faults, nil, 100e9, facts, nil)
	if len(a.BackwardLog) != 2 {
		t.Errorf("backward in the log %v, want 12 -> 11 and 11 -> 6", a.BackwardLog)
	}
	// The one step back may land above the divergence point (the new
	// log's records delivered before the first commit after the
	// truncation), never below it.
	audit3 := []auditRec{{p: 0, offset: 10, epoch: 3, commitTs: 45e3, logOffset: 1}, {p: 0, offset: 5, epoch: 5, commitTs: 55e3, logOffset: 2}}
	hist3 := [][]commitObs{{hist[0][0], {offset: 5, epoch: 5, firstSeen: 55e9, lastSeen: 56e9}}}
	a = account(lg, ld, hist3, backs, audit3, nil, faults, nil, 100e9, facts, nil)
	if len(a.BackwardLog) != 1 || len(a.BackwardPolled) != 1 {
		t.Errorf("back to 5, below the divergence 6: backward %v %v, want one each", a.BackwardLog, a.BackwardPolled)
	}
	audit5 := []auditRec{{p: 0, offset: 10, epoch: 3, commitTs: 45e3, logOffset: 1}, {p: 0, offset: 8, epoch: 5, commitTs: 65e3, logOffset: 2}}
	hist5 := [][]commitObs{{hist[0][0], {offset: 8, epoch: 5, firstSeen: 65e9, lastSeen: 66e9}}}
	a = account(lg, ld, hist5, backs, audit5, nil, faults, nil, 100e9, facts, nil)
	if len(a.BackwardLog) != 0 || len(a.BackwardPolled) != 0 || a.ViolationsN != 0 {
		t.Errorf("back to 8, above the divergence 6, the new 6-7 delivered: backward %v %v, violations %v, want none",
			a.BackwardLog, a.BackwardPolled, a.Violations)
	}
	// A commit of 10 under the new epoch before the new 6-9 came passes
	// records not received.
	hist4 := [][]commitObs{{{offset: 10, epoch: 5, firstSeen: 58e9, lastSeen: 58e9}}}
	a = account(lg, ld, hist4, nil, nil, nil, faults, nil, 100e9, facts, nil)
	if a.ViolationsN != 1 {
		t.Errorf("a new-epoch commit past undelivered new records: violations %v, want 1", a.Violations)
	}

	// Every record of the new log is delivered: without the new 8, it is
	// lost though its offset was delivered (the old record).
	lg, ld, facts = truncScenario()
	ld.Alts = slices.DeleteFunc(ld.Alts, func(d testkit.Alt) bool { return d.O == 8 })
	a = account(lg, ld, nil, nil, nil, nil, faults, nil, 100e9, facts, nil)
	if a.Lost != 1 || !strings.Contains(a.LostExamples[0], "0/8") {
		t.Errorf("new 8 never delivered: lost %d %v, want 1 (0/8)", a.Lost, a.LostExamples)
	}
	// Seen in a run: the new log holds a transaction marker where the old
	// one held a record the group delivered. No phantom: the old record's.
	lg, ld, facts = truncScenario()
	lg[0][8].kind = offMarker
	ld.Alts = slices.DeleteFunc(ld.Alts, func(d testkit.Alt) bool { return d.O == 8 })
	a = account(lg, ld, nil, nil, nil, nil, faults, nil, 100e9, facts, nil)
	if a.Phantom != 0 || a.Lost != 0 || a.Markers != 1 {
		t.Errorf("a marker where an old record was delivered: phantom %d %v, lost %d, markers %d; want 0, 0, 1", a.Phantom, a.BadExamples, a.Lost, a.Markers)
	}
	if a = account(lg, ld, nil, nil, nil, nil, faults, nil, 100e9, nil, nil); a.Phantom != 1 {
		t.Errorf("a delivery at a marker without a truncation: phantom %d, want 1", a.Phantom)
	}
	// Another value at an offset no truncation rewrote is corruption.
	lg, ld, facts = truncScenario()
	ld.Alts = append(ld.Alts, testkit.Alt{P: 0, O: 3, Hash: 999, At: 70e9})
	a = account(lg, ld, nil, nil, nil, nil, faults, nil, 100e9, facts, nil)
	if a.Corrupt != 1 {
		t.Errorf("another value at 3: corrupt %d, want 1", a.Corrupt)
	}
	// Without the truncation facts, the same ledger is corrupt.
	lg, ld, _ = truncScenario()
	if a = account(lg, ld, nil, nil, nil, nil, faults, nil, 100e9, nil, nil); a.Corrupt == 0 {
		t.Error("old values at rewritten offsets accepted without a truncation")
	}
}

func TestCheckLossesTruncation(t *testing.T) {
	lg, ld, facts := truncScenario()
	trunc := lossEvent{Instance: "m1.1", Truncated: true, Topic: "t", Partition: 0, Count: 4, First: 6, Last: 9, LogStart: -1, Cause: causeTruncation}
	r, _ := checkLosses(lg, ld, facts, []lossEvent{trunc}, "t")
	if len(r.Mismatches) != 0 || r.ReportedTrunc != 4 || r.TruncDelivered != 4 || r.Rewritten != 4 || r.ReportedLost != 0 {
		t.Errorf("reported truncation: %+v", r)
	}
	// Seen in a run: the controller elected the new leader before the
	// harness saw it, and the members' first deliveries of the new log came
	// before the election's time as the harness knows it. Delivered values
	// of the new log are not old records, whenever they came.
	facts.truncations[0].OldEnd = 12
	ld.Parts[0][10].FirstArrive, ld.Parts[0][10].FirstAck = 45e9, 45e9
	r, _ = checkLosses(lg, ld, facts, []lossEvent{trunc}, "t")
	if len(r.Mismatches) != 0 || r.TruncDelivered != 4 || r.TruncNeverSeen != 2 {
		t.Errorf("new records delivered before the election's time: delivered %d, never %d, mismatches %v; want 4, 2, none", r.TruncDelivered, r.TruncNeverSeen, r.Mismatches)
	}
	facts.truncations[0].OldEnd = 10
	r, _ = checkLosses(lg, ld, facts, nil, "t")
	if len(r.Mismatches) != 1 || !strings.Contains(r.Mismatches[0], "no member reported the truncation at offset 6") {
		t.Errorf("unreported truncation: %v", r.Mismatches)
	}
	// Unreported, and no member could know: the group never committed past
	// the divergence under the old epoch (the old records were delivered
	// past the last commit by a member that lost the partition; seen in a
	// 20-minute run). A note, not a mismatch; with a commit past it, a
	// mismatch again.
	var asked []int64
	facts.groupKnew = func(p int32, at int64, epoch int32) bool {
		asked = append(asked, at, int64(epoch))
		return false
	}
	r, _ = checkLosses(lg, ld, facts, nil, "t")
	if len(r.Mismatches) != 0 || !slices.Equal(asked, []int64{6, 3}) || !strings.Contains(strings.Join(r.Notes, "\n"), "none could") {
		t.Errorf("unreported truncation nobody could know of: mismatches %v, asked %v, notes %v", r.Mismatches, asked, r.Notes)
	}
	facts.groupKnew = func(int32, int64, int32) bool { return true }
	if r, _ = checkLosses(lg, ld, facts, nil, "t"); len(r.Mismatches) != 1 {
		t.Errorf("unreported truncation the group knew of: %v, want one mismatch", r.Mismatches)
	}
	facts.groupKnew = nil
	trunc.First = 7
	r, _ = checkLosses(lg, ld, facts, []lossEvent{trunc}, "t")
	if len(r.Mismatches) != 2 {
		t.Errorf("a truncation at 7 where the logs diverged at 6: %v, want two mismatches", r.Mismatches)
	}
}

func TestCheckLossMetrics(t *testing.T) {
	events := []lossEvent{
		{Instance: "m1.1", Count: 6}, {Instance: "m1.1", Count: 2}, {Instance: "m2.1", Truncated: true, Count: 4},
	}
	counts := map[string]lossCounters{
		"m1.1": {Lost: 8, Final: true},
		"m2.1": {Truncated: 2}, // scraped before its last line: fine
		"m3.1": {Lost: 0},      // nothing
		"m3.2": {Lost: 1},      // a counter without a line
		"m2.2": {Lost: 0, Final: true},
	}
	bad := checkLossMetrics(counts, events)
	if len(bad) != 1 || !strings.HasPrefix(bad[0], "m3.2:") {
		t.Errorf("checkLossMetrics = %v, want m3.2 only", bad)
	}
	counts["m1.1"] = lossCounters{Lost: 6, Final: true}
	if bad := checkLossMetrics(counts, events); len(bad) != 2 {
		t.Errorf("a final scrape below the lines: %v", bad)
	}
}

// The opt-in kinds come only from --weights, draw their parameters from a
// generator of their own, and the cluster-only one needs --cluster 3.
func TestOptInKinds(t *testing.T) {
	for _, k := range optInKinds {
		if strings.Contains(defaultWeights, k+"=") || strings.Contains(clusterExtraWeights, k+"=") {
			t.Errorf("%s is in the default weights", k)
		}
	}
	w, err := parseWeights("retention=1,replay-rebalance=1,kill-in-outage=1,unclean-election=1")
	if err != nil {
		t.Fatal(err)
	}
	s := newSchedule(5, w, 3, 12, 3, 3*time.Second, 0)
	variants := map[string]bool{}
	for range 200 {
		f := s.next()
		variants[f.Kind+" "+f.Variant] = true
		switch f.Kind {
		case kindRetention, kindUnclean:
			if f.Hold <= 0 || f.Part < 0 || f.Part >= 12 {
				t.Errorf("%s: no hold or a bad partition", f)
			}
		case kindKillInOutage:
			if f.Victim == "" || f.Hold2 < 500*time.Millisecond || f.Delay < 0 || f.Delay > 2*time.Second {
				t.Errorf("%s: bad victim or times", f)
			}
		}
	}
	for _, v := range []string{"retention running", "retention down", "replay-rebalance leave-owner", "replay-rebalance leave-other", "replay-rebalance join", "kill-in-outage term", "kill-in-outage kill", "unclean-election "} {
		if !variants[v] {
			t.Errorf("200 faults and no %q", v)
		}
	}
	// An opt-in kind takes no more values of the schedule's own generator
	// than any other kind: with it in the place of sink-fail, every fault's
	// gap and overlap are the same.
	withFail, _ := parseWeights("member-kill=1,sink-fail=1,kill-in-outage=1")
	withOpt, _ := parseWeights("member-kill=1,retention=1,replay-rebalance=1")
	a, b := newSchedule(9, withFail, 3, 12, 1, time.Second, 0.2), newSchedule(9, withOpt, 3, 12, 1, time.Second, 0.2)
	for range 100 {
		if x, y := a.next(), b.next(); x.Gap != y.Gap || x.Wait != y.Wait {
			t.Fatalf("%s and %s: another gap or overlap", x, y)
		}
	}
	if _, err := parseOptions([]string{"--weights", "unclean-election=1"}); err == nil {
		t.Error("unclean-election accepted without --cluster 3")
	}
	if _, err := parseOptions([]string{"--weights", "retention=1,replay-rebalance=1,kill-in-outage=1"}); err != nil {
		t.Errorf("single-broker opt-in kinds: %v", err)
	}
}

func TestSpans(t *testing.T) {
	got := spansOf([]int64{3, 4, 5, 8, 10, 11})
	want := []span{{3, 6}, {8, 9}, {10, 12}}
	if !slices.Equal(got, want) || spansLen(got) != 6 {
		t.Errorf("spansOf = %v (%d), want %v (6)", got, spansLen(got), want)
	}
}
