package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// The harness's own logic, without a broker: the schedule, the accounting
// and the report's shape.

func TestScheduleIsSeeded(t *testing.T) {
	w, err := parseWeights(defaultWeights)
	if err != nil {
		t.Fatal(err)
	}
	draw := func(seed uint64) []plannedFault {
		s := newSchedule(seed, w, 3, 12, 1, 8*time.Second, 0.2)
		out := make([]plannedFault, 200)
		for i := range out {
			out[i] = s.next()
		}
		return out
	}
	a, b, c := draw(7), draw(7), draw(8)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatal("the same seed drew two schedules")
	}
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Fatal("seeds 7 and 8 drew the same schedule")
	}
	kinds := map[string]int{}
	for _, f := range a {
		kinds[f.Kind]++
		switch f.Kind {
		case kindMemberKill, kindMemberStop:
			if f.Victim == "" || f.Hold <= 0 {
				t.Errorf("%s: no victim or downtime", f)
			}
		case kindSinkFail:
			if f.Part < 0 || f.Part >= 12 || f.Hold <= 0 {
				t.Errorf("%s: bad partition or duration", f)
			}
		}
		if f.Gap <= 0 {
			t.Errorf("%s: no gap", f)
		}
	}
	for _, k := range allKinds {
		if kinds[k] == 0 && !slices.Contains(clusterKinds, k) && !slices.Contains(optInKinds, k) {
			t.Errorf("200 faults and no %s", k)
		}
	}
	only, _ := parseWeights("broker-kill=1,member-kill=0")
	s := newSchedule(1, only, 3, 12, 1, time.Second, 0)
	for range 50 {
		if f := s.next(); f.Kind != kindBrokerKill || !f.Wait {
			t.Fatalf("weights broker-kill=1 drew %s", f)
		}
	}
}

// The cluster's draws come after the single-broker ones: a seed's
// single-broker schedule (what docs/RELIABILITY.md records) does not depend
// on them, and the cluster's schedule names nodes and cut victims.
func TestClusterSchedule(t *testing.T) {
	single, _ := parseWeights(defaultWeights)
	clustered, _ := parseWeights(defaultWeights + "," + clusterExtraWeights)
	a := newSchedule(3, single, 3, 12, 1, 8*time.Second, 0.2)
	nodes := map[int]bool{}
	kinds := map[string]bool{}
	c := newSchedule(3, clustered, 3, 12, 3, 8*time.Second, 0.2)
	for range 300 {
		f := a.next()
		if f.Node != 0 || f.Coordinator {
			t.Fatalf("single broker: %s names a node", f)
		}
		g := c.next()
		kinds[g.Kind] = true
		if g.Kind == kindBrokerKill || g.Kind == kindBrokerTerm {
			nodes[g.Node] = true
		}
		if g.Kind == kindMemberCut && (g.Victim == "" || g.Hold < 5*time.Second) {
			t.Errorf("%s: no victim or a short cut", g)
		}
	}
	if len(nodes) != 3 || !kinds[kindLeaderMove] || !kinds[kindMemberCut] {
		t.Errorf("cluster schedule: broker faults on nodes %v, kinds %v", nodes, kinds)
	}
	if _, err := parseOptions([]string{"--weights", "member-cut=1"}); err == nil {
		t.Error("member-cut accepted without --cluster 3")
	}
	if _, err := parseOptions([]string{"--cluster", "3", "--weights", "member-cut=1"}); err != nil {
		t.Errorf("member-cut with --cluster 3: %v", err)
	}
}

func TestJavaStringHash(t *testing.T) {
	// "chaos-g-1".hashCode() in Java.
	for s, want := range map[string]int32{"": 0, "a": 97, "ab": 3105, "chaos-g-1": 1493308542} {
		if got := javaStringHash(s); got != want {
			t.Errorf("javaStringHash(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestParseWeights(t *testing.T) {
	for _, bad := range []string{"", "member-kill", "nope=1", "member-kill=-1", "member-kill=0"} {
		if _, err := parseWeights(bad); err == nil {
			t.Errorf("parseWeights(%q) accepted", bad)
		}
	}
}

// scenario: one partition, offsets 0-9: 0-5 visible records, 6 aborted,
// 7 its marker, 8-9 visible.
func scenario() [][]logRec {
	lg := [][]logRec{make([]logRec, 10)}
	for o := range lg[0] {
		lg[0][o] = logRec{kind: offData, hash: uint32(o), ts: int64(o) * 1e9}
	}
	lg[0][6].kind, lg[0][7].kind = offAborted, offMarker
	return lg
}

// delivered makes a ledger where offsets in offs were received once at
// times t (Unix ns) with the right values.
func delivered(t int64, offs ...int64) *testkit.Ledger {
	ld := &testkit.Ledger{Parts: [][]testkit.Entry{make([]testkit.Entry, 10)}, Instances: map[string]uint16{"m1.1": 1, "m2.1": 2}}
	for _, o := range offs {
		ld.Parts[0][o] = testkit.Entry{Count: 1, Hash: uint32(o), FirstArrive: t, FirstAck: t, Inst: 1}
	}
	return ld
}

func TestAccountCleanRun(t *testing.T) {
	lg := scenario()
	ld := delivered(10e9, 0, 1, 2, 3, 4, 5, 8, 9)
	hist := [][]commitObs{{{offset: 4, meta: "wm1 o=4 e=-1", firstSeen: 11e9, lastSeen: 12e9}, {offset: 10, firstSeen: 13e9, lastSeen: 14e9}}}
	audit := []auditRec{{p: 0, offset: 4, commitTs: 11e3, logOffset: 1}, {p: 0, offset: 10, commitTs: 13e3, logOffset: 2}}
	faults := []*faultRun{{plannedFault: plannedFault{Kind: kindStart}, At: 1e9, End: 2e9, Before: snapshot{commits: []commitObs{{offset: -1}}}}}
	a := account(lg, ld, hist, nil, audit, nil, faults, nil, 20e9, nil, nil)
	if a.Records != 8 || a.Aborted != 1 || a.Markers != 1 || a.Lost != 0 || a.ViolationsN != 0 || len(a.BackwardLog) != 0 {
		t.Fatalf("clean run: %+v", a)
	}
}

func TestAccountFindsBreaches(t *testing.T) {
	lg := scenario()
	// 5 is never received, 6 (aborted) is, 9 arrives only after the commit
	// of 10 was seen.
	ld := delivered(10e9, 0, 1, 2, 3, 4, 8)
	ld.Parts[0][6] = testkit.Entry{Count: 1, Hash: 6, FirstArrive: 10e9, FirstAck: 10e9}
	ld.Parts[0][9] = testkit.Entry{Count: 1, Hash: 9, FirstArrive: 15e9, FirstAck: 15e9}
	hist := [][]commitObs{{
		{offset: 3, meta: "wm1 o=3 e=-1 d=5.1", firstSeen: 11e9, lastSeen: 11e9}, // claims 8 delivered: it was
		{offset: 3, meta: "wm1 o=3 e=-1 d=2.1", firstSeen: 12e9, lastSeen: 12e9}, // claims 5 delivered: never
		{offset: 10, firstSeen: 13e9, lastSeen: 14e9},                            // passes 5 and 9
	}}
	audit := []auditRec{{p: 0, offset: 4, commitTs: 11e3, logOffset: 1}, {p: 0, offset: 3, commitTs: 12e3, logOffset: 2}}
	backs := []backObs{{p: 0, from: 10, to: 3, at: 30e9}, {p: 0, from: 10, to: 3, at: 100e9}}
	outages := []window{{from: 25e9, to: 28e9}}
	faults := []*faultRun{{plannedFault: plannedFault{Kind: kindStart}, At: 1e9, End: 2e9, Before: snapshot{commits: []commitObs{{offset: -1}}}}}
	a := account(lg, ld, hist, backs, audit, outages, faults, nil, 200e9, nil, nil)
	if a.Lost != 1 || a.LostExamples[0] != "0/5" {
		t.Errorf("lost %d %v, want 1 [0/5]", a.Lost, a.LostExamples)
	}
	if a.AbortedReceived != 1 {
		t.Errorf("aborted received %d, want 1", a.AbortedReceived)
	}
	if a.ViolationsN != 2 {
		t.Errorf("violations %d, want 2 (the range over 5, the commit past 5): %v", a.ViolationsN, a.Violations)
	}
	if len(a.BackwardLog) != 1 {
		t.Errorf("backward in the log %v, want one (4 then 3)", a.BackwardLog)
	}
	if a.StaleReads != 1 || len(a.BackwardPolled) != 1 {
		t.Errorf("stale reads %d and polled backward %v: want the one 2s after the outage stale, the other backward", a.StaleReads, a.BackwardPolled)
	}
}

func TestDuplicatesAgainstExposure(t *testing.T) {
	lg := scenario()
	ld := delivered(10e9, 0, 1, 2, 3, 4, 5, 8, 9)
	ld.Parts[0][9].FirstArrive = 25e9 // after the kill, from another member
	ld.Parts[0][9].Inst = 2
	ld.Parts[0][8].FirstArrive = 21e9 // after the kill, from the victim (in flight): at risk
	// The last commit before the kill at 20s: offset 2, with 4 in its ranges.
	before := snapshot{commits: []commitObs{{offset: 2, meta: "wm1 o=2 e=-1 d=2.1"}}}
	faults := []*faultRun{
		{plannedFault: plannedFault{Kind: kindStart}, At: 1e9, End: 2e9, Before: snapshot{commits: []commitObs{{offset: -1}}}},
		{plannedFault: plannedFault{Index: 1, Kind: kindMemberKill, Victim: "m1"}, VictimInstance: "m1.1", At: 20e9, End: 22e9, Before: before},
	}
	// Replayed after the kill: 2, 3, 5, 8 (inside the exposure) and 1
	// (below the commit: outside the replay).
	for _, o := range []int64{1, 2, 3, 5, 8} {
		ld.Dups = append(ld.Dups, testkit.Dup{P: 0, O: o, At: 30e9})
		ld.Parts[0][o].Count++
	}
	a := account(lg, ld, nil, nil, nil, nil, faults, nil, 100e9, nil, nil)
	got := a.Faults[1]
	// Exposure: offsets >= 2 received before the kill or by the victim,
	// not in the ranges: 2, 3, 5, 8 (4 is covered, 9 came later from m2).
	if got.Duplicates != 5 || got.Exposure != 4 || got.Outside != 1 {
		t.Errorf("kill: %+v, want 5 duplicates, exposure 4, 1 outside the replay", got)
	}
	if a.Faults[0].Duplicates != 0 {
		t.Errorf("startup charged with duplicates: %+v", a.Faults[0])
	}
}

func TestRecoveredAt(t *testing.T) {
	lg := [][]logRec{scenario()[0], scenario()[0]}
	hist := [][]commitObs{
		{{offset: 2, firstSeen: 1e9}, {offset: 5, firstSeen: 12e9}},
		{{offset: 10, firstSeen: 1e9}}, // at its end: nothing pending
	}
	if got := recoveredAt(lg, hist, 10e9); got != 12e9 {
		t.Errorf("recoveredAt = %d, want 12e9", got)
	}
	hist[0] = hist[0][:1]
	if got := recoveredAt(lg, hist, 10e9); got != 0 {
		t.Errorf("recoveredAt = %d without a move, want 0", got)
	}
}

// The JSON keys the issue names, and the Markdown's sections.
func TestReportShape(t *testing.T) {
	r := &report{ByFault: map[string]*kindResult{kindMemberKill: {Count: 2, Duplicates: 3, Exposure: 40, MaxRecoveryS: 7.5}}, Passed: true, Failures: []string{}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"faults", "records", "lost", "violations", "backward", "duplicates", "exposure", "by_fault"} {
		if _, ok := m[k]; !ok {
			t.Errorf("chaos-report.json has no %q", k)
		}
	}
	kill := m["by_fault"].(map[string]any)[kindMemberKill].(map[string]any)
	for _, k := range []string{"count", "duplicates", "exposure", "max_recovery_s"} {
		if _, ok := kill[k]; !ok {
			t.Errorf("by_fault.%s has no %q", kindMemberKill, k)
		}
	}
	md := markdown(r)
	for _, s := range []string{"## Summary", "## Faults by kind", "## Schedule", "**lost** (must be 0)", "| member-kill | 2 | 3 | 40 |"} {
		if !strings.Contains(md, s) {
			t.Errorf("chaos-report.md lacks %q", s)
		}
	}
}

func TestReproduceCommand(t *testing.T) {
	o, err := parseOptions([]string{"--duration", "30m", "--seed", "9", "--protocol", "consumer", "--fault-gap", "3s"})
	if err != nil {
		t.Fatal(err)
	}
	want := "go run ./tests/chaos --duration 30m0s --seed 9 --protocol consumer --fault-gap 3s"
	if got := reproduceCommand(o); got != want {
		t.Errorf("reproduceCommand = %q, want %q", got, want)
	}
	if _, err := parseOptions([]string{"--port", "40000"}); err == nil {
		t.Error("a port in the ephemeral range was accepted")
	}
}

// A transaction kgo reported committed whose record the log holds aborted
// fails the run, unless it was in flight across a broker outage: then it is
// counted, tolerated, and the log says what the producer's next marker did.
func TestCrossCheckTxnOutcomeAcrossOutage(t *testing.T) {
	const pid = 7
	// Partition 0: a record at 0 of producer 7, aborted in the read-back,
	// and at 1 that producer's commit marker.
	lg := func() [][]logRec {
		return [][]logRec{{
			{kind: offAborted, hash: 11, pid: pid},
			{kind: offMarker, pid: pid, commit: true},
		}}
	}
	rec := txnRec{prodRec: prodRec{p: 0, o: 0, hash: 11}, state: 'c', began: 100e9, ended: 101e9}
	for _, tc := range []struct {
		name      string
		outages   []window
		tolerated int
		notes     int
	}{
		{"no outage", nil, 0, 1},
		{"outage long before", []window{{from: 10e9, to: 20e9}}, 0, 1},
		{"outage during", []window{{from: 99e9, to: 100.5e9}}, 1, 0},
		{"restart ended just before it began", []window{{from: 80e9, to: 95e9}}, 1, 0},
		{"outage still open", []window{{from: 100.5e9}}, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &harness{live: &liveProducer{}, txn: &txnProducer{recs: []txnRec{rec}}}
			got := h.crossCheckProducers(lg(), &lossFacts{}, tc.outages)
			if got != tc.tolerated || len(h.notes) != tc.notes {
				t.Errorf("tolerated %d, notes %q; want %d tolerated, %d notes", got, h.notes, tc.tolerated, tc.notes)
			}
		})
	}
	if got := markerAfter(lg()[0], 0); !strings.Contains(got, "(offset 1) commits") {
		t.Errorf("markerAfter: %q", got)
	}
	abort := lg()[0]
	abort[1].commit = false
	if got := markerAfter(abort, 0); !strings.Contains(got, "(offset 1) aborts") {
		t.Errorf("markerAfter: %q", got)
	}
}
