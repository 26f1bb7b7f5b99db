package testkit

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func val(p int32, o int64) string { return fmt.Sprintf("p%d-o%d", p, o) }

// batch returns the records [from, to) of partition p of topic "t", with
// the values val gives.
func batch(inst string, p int32, from, to int64) Batch {
	b := Batch{Instance: inst, Arrived: time.Unix(0, from+1)}
	for o := from; o < to; o++ {
		b.Records = append(b.Records, Record{T: "t", P: p, O: o, V: val(p, o)})
	}
	return b
}

func TestLedgerAccounting(t *testing.T) {
	l := NewLedger("t", 2, val)
	l.Record(batch("a", 0, 0, 10), 100)
	l.Record(batch("a", 0, 20, 30), 200)
	l.Record(batch("b", 0, 10, 20), 300) // after a later batch of its partition
	l.Record(batch("b", 0, 5, 6), 400)   // a duplicate
	l.Record(batch("a", 1, 3, 5), 500)   // partition 1 has a gap at 0-2

	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"Prefix(0)", l.Prefix(0), int64(30)},
		{"Prefix(1)", l.Prefix(1), int64(0)},
		{"Missing(0, 0, 30)", l.Missing(0, 0, 30), int64(-1)},
		{"Missing(0, 0, 31)", l.Missing(0, 0, 31), int64(30)},
		{"Missing(1, 3, 5)", l.Missing(1, 3, 5), int64(-1)},
		{"Missing(1, 0, 5)", l.Missing(1, 0, 5), int64(0)},
		{"Missing(7, 4, 5)", l.Missing(7, 4, 5), int64(4)},
		{"End(1)", l.End(1), int64(5)},
		{"Count(0, 5)", l.Count(0, 5), 2},
		{"Count(0, 40)", l.Count(0, 40), 0},
		{"Distinct()", l.Distinct(), int64(32)},
		{"Records", l.Records, int64(33)},
		{"OutOfOrder", l.OutOfOrder, int64(2)},
		{"ByInstance", l.ByInstance, map[string]int64{"a": 22, "b": 11}},
		{"Instances", l.Instances, map[string]uint16{"a": 1, "b": 2}},
		{"Dups", l.Dups, []Dup{{P: 0, O: 5, At: 400, Inst: 2}}},
		{"BadCount", l.BadCount, 0},
		{"first delivery of 0/15", l.Parts[0][15], Entry{Count: 1, Hash: HashValue(val(0, 15)), FirstArrive: 11, FirstAck: 300, Inst: 2}},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	received, missing := l.ReceivedIn(1, 0, 6)
	if received != 2 || !reflect.DeepEqual(missing, []int64{0, 1, 2, 5}) {
		t.Errorf("ReceivedIn(1, 0, 6) = %d, %v, want 2, [0 1 2 5]", received, missing)
	}

	old := l.Clone()
	l.Record(batch("a", 1, 0, 3), 600)
	l.Record(batch("a", 1, 4, 5), 700)
	if got, want := l.Since(old), map[int32]map[int64]int{1: {0: 1, 1: 1, 2: 1, 4: 1}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Since = %v, want %v", got, want)
	}
	if got, want := old.Prefix(1), int64(0); got != want {
		t.Errorf("the clone's Prefix(1) = %d after the original moved on, want %d", got, want)
	}
	if got, want := l.Prefix(1), int64(5); got != want {
		t.Errorf("Prefix(1) = %d, want %d", got, want)
	}
}

func TestLedgerOtherValues(t *testing.T) {
	l := NewLedger("", 1, nil) // no topic or value check
	l.Record(Batch{Instance: "x", Records: []Record{{P: 0, O: 0, V: "old"}}}, 1)
	l.Record(Batch{Instance: "y", Records: []Record{{P: 0, O: 0, V: "new"}}}, 2)
	l.Record(Batch{Instance: "y", Records: []Record{{P: 0, O: 0, V: "old"}}}, 3)
	if got, want := l.Alts, []Alt{{P: 0, O: 0, Hash: HashValue("new"), At: 2, Inst: 2}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Alts = %v, want %v", got, want)
	}
	if got, want := l.Dups, []Dup{{P: 0, O: 0, At: 3, Inst: 2}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Dups = %v, want %v", got, want)
	}
	if got, want := l.Count(0, 0), 3; got != want {
		t.Errorf("Count(0, 0) = %d, want %d", got, want)
	}
}

func TestLedgerBadRecords(t *testing.T) {
	for _, c := range []struct {
		name    string
		recs    []Record
		counted int64 // distinct offsets recorded
		bad     string
	}{
		{"other topic", []Record{{T: "u", P: 0, O: 0, V: val(0, 0)}}, 0, "unexpected place"},
		{"partition out of range", []Record{{T: "t", P: 2, O: 0, V: val(2, 0)}}, 0, "unexpected place"},
		{"negative partition", []Record{{T: "t", P: -2, O: 0}}, 0, "unexpected place"},
		{"negative offset", []Record{{T: "t", P: 0, O: -1}}, 0, "unexpected place"},
		{"wrong value", []Record{{T: "t", P: 1, O: 3, V: "x"}}, 1, `has value "x", want "p1-o3"`},
		{"two partitions", []Record{{T: "t", P: 0, O: 0, V: val(0, 0)}, {T: "t", P: 1, O: 0, V: val(1, 0)}}, 2, "holds partitions 0 and 1"},
	} {
		l := NewLedger("t", 2, val)
		l.Record(Batch{Records: c.recs}, 1)
		if l.BadCount != 1 || len(l.Bad) != 1 || !strings.Contains(l.Bad[0], c.bad) {
			t.Errorf("%s: Bad = %q (BadCount %d), want one problem containing %q", c.name, l.Bad, l.BadCount, c.bad)
		}
		if got := l.Distinct(); got != c.counted {
			t.Errorf("%s: Distinct() = %d, want %d", c.name, got, c.counted)
		}
	}
	l := NewLedger("t", 1, nil)
	for range maxBad + 5 {
		l.Note("x")
	}
	if len(l.Bad) != maxBad || l.BadCount != maxBad+5 {
		t.Errorf("after %d notes: len(Bad) = %d, BadCount = %d, want %d, %d", maxBad+5, len(l.Bad), l.BadCount, maxBad, maxBad+5)
	}
}

// A Ledger that a checker's tests build by hand has no bookkeeping of its
// own: Prefix and Missing read Parts.
func TestLedgerByHand(t *testing.T) {
	l := &Ledger{Parts: [][]Entry{make([]Entry, 10)}}
	for _, o := range []int64{0, 1, 2, 4} {
		l.Parts[0][o].Count = 1
	}
	if got, want := l.Prefix(0), int64(3); got != want {
		t.Errorf("Prefix(0) = %d, want %d", got, want)
	}
	if got, want := l.Missing(0, 0, 5), int64(3); got != want {
		t.Errorf("Missing(0, 0, 5) = %d, want %d", got, want)
	}
}
