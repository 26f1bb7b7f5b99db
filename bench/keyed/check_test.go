package keyed

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

func TestCheck(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	rec := func(p int32, o int64, key string) testkit.Record {
		return testkit.Record{T: "t", P: p, O: o, V: key + " pad"}
	}
	type req struct {
		recs    []testkit.Record
		arrived time.Time
		acked   time.Time
	}
	for _, tc := range []struct {
		name                                         string
		reqs                                         []req
		reordered, overlapped, dups, distinct, mixed int64
	}{
		{"a key in order, one at a time", []req{
			{[]testkit.Record{rec(0, 0, "a")}, ms(0), ms(5)},
			{[]testkit.Record{rec(0, 3, "a")}, ms(6), ms(12)},
		}, 0, 0, 0, 2, 0},
		{"a later offset acknowledged first", []req{
			{[]testkit.Record{rec(0, 3, "a")}, ms(0), ms(5)},
			{[]testkit.Record{rec(0, 0, "a")}, ms(1), ms(9)},
		}, 1, 0, 0, 2, 0},
		{"in order but both in flight at once", []req{
			{[]testkit.Record{rec(0, 0, "a")}, ms(0), ms(5)},
			{[]testkit.Record{rec(0, 3, "a")}, ms(2), ms(9)},
		}, 0, 1, 0, 2, 0},
		{"one key twice in one request is not an overlap", []req{
			{[]testkit.Record{rec(0, 0, "a"), rec(0, 3, "a")}, ms(0), ms(5)},
		}, 0, 0, 0, 2, 0},
		{"a redelivery below the key's highest is a duplicate", []req{
			{[]testkit.Record{rec(0, 0, "a")}, ms(0), ms(5)},
			{[]testkit.Record{rec(0, 3, "a")}, ms(6), ms(9)},
			{[]testkit.Record{rec(0, 0, "a")}, ms(10), ms(15)},
		}, 0, 0, 1, 2, 0},
		{"keys of several partitions in one request", []req{
			{[]testkit.Record{rec(0, 0, "a"), rec(5, 0, "b")}, ms(0), ms(5)},
			{[]testkit.Record{rec(5, 1, "b"), rec(0, 1, "c")}, ms(1), ms(7)},
		}, 0, 1, 0, 4, 2},
	} {
		c := NewCheck("t", 8)
		for _, r := range tc.reqs {
			if a := c.Judge(testkit.Batch{Records: r.recs, Arrived: r.arrived}, r.acked); a != testkit.Accept {
				t.Errorf("%s: judge = %v, want Accept", tc.name, a)
			}
		}
		got := [5]int64{c.Reordered, c.Overlapped, c.Duplicates, c.Distinct, c.MixedBatches}
		want := [5]int64{tc.reordered, tc.overlapped, tc.dups, tc.distinct, tc.mixed}
		if got != want {
			t.Errorf("%s: (reordered, overlapped, duplicates, distinct, mixed) = %v, want %v; examples %q", tc.name, got, want, c.Examples)
		}
	}
}

func TestCheckForeign(t *testing.T) {
	c := NewCheck("t", 2)
	c.Judge(testkit.Batch{Records: []testkit.Record{{T: "other", P: 0, O: 0, V: "a"}, {T: "t", P: 2, O: 0, V: "a"}}}, time.Now())
	if c.Foreign != 2 || c.Distinct != 0 {
		t.Errorf("(foreign, distinct) = (%d, %d), want (2, 0)", c.Foreign, c.Distinct)
	}
}

func TestCheckFirst(t *testing.T) {
	c := NewCheck("t", 1)
	var got []string
	c.First = func(r testkit.Record, key string, _ time.Time) { got = append(got, fmt.Sprintf("%s@%d", key, r.O)) }
	for _, recs := range [][]testkit.Record{
		{{T: "t", O: 0, V: "a x"}, {T: "t", O: 1, V: "b x"}},
		{{T: "t", O: 0, V: "a x"}, {T: "t", O: 2, V: "a y"}}, // offset 0 again: a duplicate
	} {
		c.Judge(testkit.Batch{Records: recs}, time.Now())
	}
	if want := []string{"a@0", "b@1", "a@2"}; !slices.Equal(got, want) {
		t.Errorf("First saw %q, want %q", got, want)
	}
}
