package main

import (
	"strings"
	"testing"
	"time"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// eosLog is a source of two partitions: 0 holds data, an aborted record
// and a marker; 1 holds data only.
func eosLog() [][]logRec {
	d := func(v string) logRec { return logRec{kind: offData, hash: testkit.HashValue(v)} }
	return [][]logRec{
		{d("a"), d("b"), {kind: offAborted, hash: testkit.HashValue("x")}, {kind: offMarker}, d("c")},
		{d("d"), d("e")},
	}
}

func out(srcP int32, srcO int64, v string, ts int64) outRec {
	return outRec{srcP: srcP, srcO: srcO, hdr: true, hash: testkit.HashValue(v), ts: ts}
}

// One output per visible record, none for the aborted one: a clean run.
func TestEOSAccountCleanRun(t *testing.T) {
	outs := []outRec{out(0, 0, "a", 1), out(0, 1, "b", 2), out(0, 4, "c", 3), out(1, 0, "d", 4), out(1, 1, "e", 5)}
	a := eosAccount(eosLog(), outs, 7, nil, nil, nil, nil, nil, 10)
	e := a.EOS
	if a.Records != 5 || a.Aborted != 1 || a.Markers != 1 || e.Exactly != 5 || e.Outputs != 5 || e.AbortedOutputs != 7 {
		t.Fatalf("records %d aborted %d markers %d exactly %d outputs %d aborted outputs %d", a.Records, a.Aborted, a.Markers, e.Exactly, e.Outputs, e.AbortedOutputs)
	}
	if f := e.failures(); len(f) != 0 {
		t.Fatalf("a clean run fails: %v", f)
	}
}

// Every breach is found and named: a record with no output, one with two
// (the second charged to the fault in whose window it was produced), an
// output of an aborted record, of a marker, without headers, past the end,
// with another value.
func TestEOSAccountFindsBreaches(t *testing.T) {
	faults := []*faultRun{{plannedFault: plannedFault{Kind: kindStart}, At: 0, End: 1}, {plannedFault: plannedFault{Index: 1, Kind: kindMemberPause}, At: 100, End: 200}}
	outs := []outRec{
		out(0, 0, "a", 10), out(0, 0, "a", 150), // duplicated, the second in fault #1's window
		out(0, 1, "WRONG", 20), // corrupt
		out(0, 2, "x", 30),     // an aborted source record
		out(0, 3, "", 40),      // a marker
		out(1, 0, "d", 50),
		out(1, 9, "?", 60), // past the end
		{hash: 1, ts: 70},  // no headers
		// 0/4 "c" and 1/1 "e" have no output
	}
	a := eosAccount(eosLog(), outs, 0, nil, nil, nil, faults, nil, 300)
	e := a.EOS
	got := map[string]int64{"lost": e.Lost, "duplicates": e.Duplicates, "duplicated": e.Duplicated, "aborted": e.AbortedSource, "phantom": e.Phantom, "corrupt": e.Corrupt}
	want := map[string]int64{"lost": 2, "duplicates": 1, "duplicated": 1, "aborted": 1, "phantom": 3, "corrupt": 1}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %d, want %d", k, got[k], w)
		}
	}
	if a.Faults[1].Duplicates != 1 || a.Faults[0].Duplicates != 0 {
		t.Errorf("the duplicate is charged to %+v", a.Faults)
	}
	if n := len(e.failures()); n != 5 {
		t.Errorf("%d failures, want 5: %v", n, e.failures())
	}
	if len(e.dups) != 1 || e.dups[0].outs[0].ts != 10 {
		t.Errorf("duplicates listed %+v, first produced first", e.dups)
	}
}

func TestAbortCause(t *testing.T) {
	for line, want := range map[string]string{
		`msg="kafka_watermark: exactly_once: transaction aborted (batch t/2 offsets 1-7 failed: rejecting due to failed processing: failed assignment (line 2): chaos: flaky processor); 6 partition(s) go back"`: "nack: the flaky processor",
		`msg="kafka_watermark: exactly_once: transaction aborted (batch t/2 offsets 1-7 failed: boom); 1 partition(s) go back"`:                                                                                   "nack: other",
		`msg="kafka_watermark: exactly_once: transaction aborted (the commit failed: the transaction was aborted); 4 partition(s) go back"`:                                                                       "commit failed: the transaction was aborted",
		`msg="kafka_watermark: exactly_once: transaction aborted (partitions revoked: t/1); 2 partition(s) go back"`:                                                                                              "rebalance",
		`msg="kafka_watermark: exactly_once: transaction aborted (a batch of an epoch that ended settled (its records may be in the transaction)); 0 partition(s) go back"`:                                       "late_ack",
	} {
		if got := abortCause(line); got != want {
			t.Errorf("abortCause(%s) = %q, want %q", line, got, want)
		}
	}
}

// --eos takes its own default weights, refuses the kinds it has nothing
// for, and member-pause needs it; the reproduce command names it.
func TestEOSOptions(t *testing.T) {
	o, err := parseOptions([]string{"--eos", "--seed", "3"})
	if err != nil {
		t.Fatal(err)
	}
	if o.weights != eosWeights || o.errorOneIn != 2000 {
		t.Errorf("weights %q, error-one-in %d", o.weights, o.errorOneIn)
	}
	if got, want := reproduceCommand(o), "go run ./tests/chaos --duration 3m0s --seed 3 --eos"; got != want {
		t.Errorf("reproduceCommand = %q, want %q", got, want)
	}
	o, _ = parseOptions([]string{"--eos", "--seed", "3", "--error-one-in", "0", "--weights", "member-pause=1"})
	if got := reproduceCommand(o); !strings.Contains(got, "--weights member-pause=1") || !strings.Contains(got, "--error-one-in 0") {
		t.Errorf("reproduceCommand = %q", got)
	}
	for _, bad := range [][]string{
		{"--eos", "--weights", "sink-fail=1"},
		{"--eos", "--weights", "poison=1"},
		{"--eos", "--cluster", "3"},
		{"--eos", "--self-check"},
		{"--eos", "--ordering", "key"},
		{"--eos", "--error-one-in", "1"},
		{"--weights", "member-pause=1"},
		{"--eos-control"},
	} {
		if _, err := parseOptions(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	o, _ = parseOptions([]string{"--eos", "--eos-control", "--seed", "3"})
	if got := reproduceCommand(o); !strings.HasSuffix(got, "--eos --eos-control") {
		t.Errorf("reproduceCommand = %q", got)
	}
	if o, err := parseOptions(nil); err != nil || o.eos || o.weights != defaultWeights {
		t.Errorf("the default run changed: %+v, %v", o, err)
	}
}

// member-pause stops its victim past the 6s session timeout; it takes no
// more draws than the kinds it could replace.
func TestMemberPauseSchedule(t *testing.T) {
	w, _ := parseWeights(eosWeights)
	s := newSchedule(11, w, 3, 12, 1, 8*time.Second, 0.2)
	n := 0
	for range 200 {
		f := s.next()
		if f.Kind != kindMemberPause {
			continue
		}
		n++
		if f.Victim == "" || f.Hold < 8*time.Second || f.Hold > 24*time.Second {
			t.Errorf("%s: bad victim or pause", f)
		}
	}
	if n == 0 {
		t.Error("200 faults and no member-pause")
	}
	withStop, _ := parseWeights("member-kill=1,member-stop=1")
	withPause, _ := parseWeights("member-kill=1,member-pause=1")
	a, b := newSchedule(9, withStop, 3, 12, 1, time.Second, 0.2), newSchedule(9, withPause, 3, 12, 1, time.Second, 0.2)
	for range 100 {
		if x, y := a.next(), b.next(); x.Gap != y.Gap || x.Wait != y.Wait || x.Victim != y.Victim {
			t.Fatalf("%s and %s: another gap, overlap or victim", x, y)
		}
	}
}

// The member's config under --eos: exactly_once under its own stable
// transactional id, the pipeline of tests/eos_test.go, the output bound
// to the group.
func TestEOSYAML(t *testing.T) {
	c := memberConf{seeds: func(string) string { return "127.0.0.1:1" }, topic: "src", group: "g", protocol: "classic", ordering: "none",
		eos: true, outTopic: "dst", txnPrefix: "chaos-eos-1-", errorOneIn: 2000}
	y := c.yaml("m2", "m2.3", "127.0.0.1:2")
	for _, s := range []string{`exactly_once: true`, `transactional_id: "chaos-eos-1-m2"`, `transaction_timeout: 20s`, `- split: { size: 10 }`,
		`random_int(max: 1999) == 0`, `reject_errored:`, `topic: "dst"`, `max_in_flight: 16`, `exactly_once: { consumer_group: "g" }`, `'^kafka_(partition|offset)$'`} {
		if !strings.Contains(y, s) {
			t.Errorf("the --eos config lacks %q:\n%s", s, y)
		}
	}
	c.errorOneIn = 0
	if y := c.yaml("m2", "m2.3", "127.0.0.1:2"); strings.Contains(y, "throw(") {
		t.Error("--error-one-in 0 still throws")
	}
	c.control = true
	if y := c.yaml("m2", "m2.3", "127.0.0.1:2"); strings.Contains(y, "exactly_once") || strings.Contains(y, "transactional_id") || !strings.Contains(y, `topic: "dst"`) {
		t.Errorf("the --eos-control config:\n%s", y)
	}
	c.eos = false
	c.sinkURL = "http://sink"
	if y := c.yaml("m2", "m2.3", "127.0.0.1:2"); strings.Contains(y, "exactly_once") || !strings.Contains(y, "http_client") {
		t.Error("the at-least-once config changed")
	}
}

func TestEOSReportShape(t *testing.T) {
	r := &report{ByFault: map[string]*kindResult{kindMemberPause: {Count: 1}}, Passed: true, Failures: []string{},
		EOS: &eosResult{OutputTopic: "dst", Outputs: 9, Exactly: 9, TxnAborted: 2, AbortCauses: map[string]int{"rebalance": 2}}, Pauses: 1}
	md := markdown(r)
	for _, s := range []string{"**lost**: source records with no output (must be 0)", "**duplicates**", "of which rebalance | 2", "| member-pause | 1 |"} {
		if !strings.Contains(md, s) {
			t.Errorf("chaos-report.md lacks %q", s)
		}
	}
	if !strings.Contains(summaryLine(r), "eos outputs=9") {
		t.Errorf("summary %q", summaryLine(r))
	}
}
