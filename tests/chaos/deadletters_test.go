package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/watermark-connect/watermark-connect/internal/deadletter"
	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// dead is a dead letter of scenario()'s record 0/o with its provenance
// right, appended at ns.
func dead(o int64, ns int64) letter {
	return letter{offset: o, appended: ns, value: uint32(o),
		prov: deadletter.Provenance{Topic: "t", Partition: 0, Offset: o, Timestamp: time.Unix(o, 0), Attempts: deadLetterAttempts}}
}

// A poison record (4) and a record that shared its request (3) are
// dead-lettered, 4 twice; the sink never had them. A commit past them is
// sound once they were appended to the dead-letter topic, not before.
func TestDeadLettersCountAsDelivered(t *testing.T) {
	lg := scenario()
	ld := delivered(10e9, 0, 1, 2, 5, 8, 9)
	dl := &deadLetterFacts{topic: "t", letters: []letter{dead(4, 12e9), dead(3, 12e9), dead(4, 14e9)}, logged: 3,
		refused: map[[2]int64]refusal{{0, 3}: {Refused: 3, Beside: true}, {0, 4}: {Refused: 3, Poison: true}, {0, 5}: {Refused: 1}},
		slots:   []poisonSlot{{P: 0, From: 4, O: 4}, {P: 0, From: 20, O: -1}}}
	hist := [][]commitObs{{
		{offset: 2, meta: "wm1 o=2 e=-1 d=3.1", firstSeen: 11e9, lastSeen: 11e9}, // claims 5: received
		{offset: 5, firstSeen: 11e9, lastSeen: 11e9},                             // passes 3 and 4 before their dead letters
		{offset: 10, firstSeen: 13e9, lastSeen: 14e9},                            // after them
	}}
	audit := []auditRec{{p: 0, offset: 10, commitTs: 11_999, logOffset: 1}, {p: 0, offset: 10, commitTs: 12e3, logOffset: 2}}
	faults := []*faultRun{{plannedFault: plannedFault{Kind: kindStart}, At: 1e9, End: 2e9, Before: snapshot{commits: []commitObs{{offset: -1}}}}}
	a := account(lg, ld, hist, nil, audit, nil, faults, nil, 20e9, nil, dl)
	if a.Lost != 0 || a.Received != 6 {
		t.Errorf("lost %d, received %d: want 0 and 6 (3 and 4 are dead-lettered)", a.Lost, a.Received)
	}
	if a.ViolationsN != 2 || !strings.Contains(a.Violations[0], "offset 3") {
		t.Errorf("violations %v: want the poll of 5 and the commit at 11.999 s, both before 3's dead letter", a.Violations)
	}
	d := a.DeadLetters
	want := deadLetterResult{Copies: 3, Records: 2, Only: 2, MaxCopies: 2, Beside: 1, Refused: 3, Slots: 2, Poison: 1, PoisonDead: 1, Logged: 3}
	if d == nil || d.Copies != want.Copies || d.Records != want.Records || d.Only != want.Only || d.MaxCopies != want.MaxCopies ||
		d.Beside != want.Beside || d.RefusedOther != 0 || d.Refused != want.Refused || d.Slots != want.Slots || d.Poison != want.Poison ||
		d.PoisonDead != want.PoisonDead || d.Logged != want.Logged || d.BadProvenance != 0 || d.Unrefused != 0 || d.PoisonMissing != 0 {
		t.Fatalf("dead letters = %+v, want %+v", d, want)
	}
	if f := d.failures(); len(f) != 0 {
		t.Errorf("failures %v, want none", f)
	}
}

// A dead letter with a wrong provenance neither counts as delivered nor
// passes; a record the sink never refused may not be dead-lettered; a
// poison record must end in the sink or the topic (it can only be the
// topic).
func TestDeadLettersFindBreaches(t *testing.T) {
	lg := scenario()
	ld := delivered(10e9, 0, 1, 2, 3, 5, 8)
	bad := func(o int64, f func(*letter)) letter {
		l := dead(o, 12e9)
		f(&l)
		return l
	}
	letters := []letter{
		bad(4, func(l *letter) { l.value = 99 }),                       // another value: 4 is lost
		bad(4, func(l *letter) { l.prov.Attempts = 4 }),                // more attempts than max_attempts
		bad(4, func(l *letter) { l.prov.Topic = "other" }),             // another topic
		bad(4, func(l *letter) { l.key = 7 }),                          // another key
		bad(4, func(l *letter) { l.prov.Timestamp = time.Unix(9, 0) }), // another timestamp
		bad(7, func(*letter) {}),                                       // a marker
		bad(4, func(l *letter) { l.prov.Offset = 10 }),                 // past the log
		bad(4, func(l *letter) { l.parseErr = errors.New("no dead_letter_member") }),
		dead(5, 12e9), // received, and never refused
		dead(9, 12e9), // never refused either
	}
	dl := &deadLetterFacts{topic: "t", letters: letters, logged: 20,
		refused: map[[2]int64]refusal{{0, 4}: {Refused: 2, Poison: true}, {0, 9}: {Late: 1}},
		slots:   []poisonSlot{{P: 0, From: 4, O: 4}, {P: 0, From: 3, O: 3}}}
	faults := []*faultRun{{plannedFault: plannedFault{Kind: kindStart}, At: 1e9, End: 2e9, Before: snapshot{commits: []commitObs{{offset: -1}}}}}
	a := account(lg, ld, nil, nil, nil, nil, faults, nil, 20e9, nil, dl)
	if a.Lost != 1 || a.LostExamples[0] != "0/4" {
		t.Errorf("lost %d %v, want 0/4 (its dead letters are all wrong)", a.Lost, a.LostExamples)
	}
	d := a.DeadLetters
	if d.BadProvenance != 8 || d.Unrefused != 1 || d.PoisonMissing != 1 || d.PoisonInSink != 1 || d.Records != 2 {
		t.Errorf("dead letters = %+v, want 8 bad, 1 never refused (5; 9 was judged late), 4 missing, 3 in the sink, 2 records", d)
	}
	if f := d.failures(); len(f) != 5 {
		t.Errorf("failures %v, want bad provenance, never refused, missing, in the sink, logged too many", f)
	}
}

// A slot binds the first record at or above it in the first request after
// it was armed, above what the sink accepted; every request holding it is
// refused and recorded.
func TestPoisonSlots(t *testing.T) {
	r := newRefusals(func(string, ...any) {})
	batch := func(p int32, from, to int64) testkit.Batch {
		b := testkit.Batch{Arrived: time.Now()}
		for o := from; o < to; o++ {
			b.Records = append(b.Records, testkit.Record{P: p, O: o})
		}
		return b
	}
	r.verdict(batch(1, 0, 50), testkit.Accept, time.Now())
	if s := r.arm(1, 1, 20); s.From != 50 {
		t.Fatalf("arm below what was accepted: from %d, want 50", s.From)
	}
	r.arm(1, 1, 60)
	if r.judge(batch(2, 50, 100)) || r.judge(batch(1, 40, 50)) {
		t.Fatal("a request without a record at or above a slot was poisoned")
	}
	b := batch(1, 55, 100)
	if !r.judge(b) {
		t.Fatal("the first request past the slots was not poisoned")
	}
	r.verdict(b, testkit.Fail, time.Now())
	if !r.judge(batch(1, 60, 61)) || r.judge(batch(1, 56, 60)) {
		t.Error("poison is not exactly offsets 55 and 60")
	}
	late := batch(3, 0, 1)
	late.Arrived = time.Now().Add(-clientTimeout)
	r.verdict(late, testkit.Accept, time.Now())
	refused, slots := r.snapshot()
	if slots[0].O != 55 || slots[1].O != 60 {
		t.Errorf("slots %+v, want 55 and 60", slots)
	}
	if f := refused[[2]int64{1, 55}]; f.Refused != 1 || !f.Poison {
		t.Errorf("1/55: %+v, want refused once, poison", f)
	}
	if f := refused[[2]int64{1, 57}]; f.Refused != 1 || f.Poison || !f.Beside {
		t.Errorf("1/57: %+v, want refused once, beside a poison record", f)
	}
	r.verdict(batch(1, 200, 210), testkit.Fail, time.Now()) // sink-fail
	if again, _ := r.snapshot(); again[[2]int64{1, 200}] != (refusal{Refused: 1}) {
		t.Errorf("1/200: %+v, want refused once, no poison near", again[[2]int64{1, 200}])
	}
	if f := refused[[2]int64{3, 0}]; f.Late != 1 {
		t.Errorf("3/0: %+v, want judged late once", f)
	}
}

// poison is opt-in, draws from the opt-in generator, and refuses the kinds
// that need a stall to last.
func TestPoisonSchedule(t *testing.T) {
	w, _ := parseWeights("poison=1,member-kill=1")
	s := newSchedule(7, w, 3, 12, 1, time.Second, 0)
	seen := 0
	for range 100 {
		f := s.next()
		if f.Kind != kindPoison {
			continue
		}
		seen++
		if len(f.Ahead) < 1 || len(f.Ahead) > 3 || f.Part < 0 || f.Part >= 12 || f.Ahead[0] < 0 || f.Ahead[len(f.Ahead)-1] >= poisonAheadMax {
			t.Errorf("%s: bad slots or partition", f)
		}
	}
	if seen == 0 {
		t.Error("100 faults and no poison")
	}
	for _, k := range notWithPoison {
		args := []string{"--weights", "poison=1," + k + "=1"}
		if k == kindUnclean {
			args = append(args, "--cluster", "3")
		}
		if _, err := parseOptions(args); err == nil {
			t.Errorf("poison with %s accepted", k)
		}
	}
	if _, err := parseOptions([]string{"--weights", "poison=2,member-kill=1,sink-fail=1,kill-in-outage=1"}); err != nil {
		t.Errorf("poison with member-kill, sink-fail, kill-in-outage: %v", err)
	}
	if !strings.Contains(memberConf{seeds: func(string) string { return "b" }, deadLetter: "t-dlq"}.yaml("m1", "m1.1", "a"),
		"dead_letter:\n      topic: \"t-dlq\"\n      max_attempts: 3\npipeline:") {
		t.Error("the members' config has no dead_letter block")
	}
	if strings.Contains(memberConf{seeds: func(string) string { return "b" }}.yaml("m1", "m1.1", "a"), "dead_letter") {
		t.Error("a run without poison configures dead_letter")
	}
}
