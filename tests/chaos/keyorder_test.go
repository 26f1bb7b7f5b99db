package main

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// keyLog is a one-partition log read back whose records have the keys
// given: "-" is a null key, "" the empty key.
func keyLog(keys ...string) [][]logRec {
	lg := [][]logRec{make([]logRec, len(keys))}
	for o, k := range keys {
		lg[0][o] = logRec{kind: offData, hash: uint32(o), key: testkit.HashValue(k), nullKey: k == "-"}
	}
	return lg
}

// req is a request of inst holding offsets of partition 0, arrived and
// answered (accepted) at the given milliseconds.
func req(inst string, arrived, answered int64, offsets ...int64) sinkRequest {
	q := sinkRequest{Inst: inst, Arrived: arrived * 1e6, Answered: answered * 1e6, Accepted: true}
	for _, o := range offsets {
		q.Recs = append(q.Recs, recRef{P: 0, O: o})
	}
	return q
}

// deliveries is the ledger's view of reqs: each offset's first accepted
// answer, and the deliveries after it.
func deliveries(reqs []sinkRequest) (func(p int, o int64) int64, []testkit.Dup) {
	first := map[int64]int64{}
	var again []testkit.Dup
	byAnswer := slices.Clone(reqs)
	slices.SortStableFunc(byAnswer, func(a, b sinkRequest) int { return cmp.Compare(a.Answered, b.Answered) })
	for _, q := range byAnswer {
		if !q.Accepted {
			continue
		}
		for _, r := range q.Recs {
			if _, ok := first[r.O]; ok {
				again = append(again, testkit.Dup{P: r.P, O: r.O, At: q.Answered})
				continue
			}
			first[r.O] = q.Answered
		}
	}
	return func(_ int, o int64) int64 {
		if t, ok := first[o]; ok {
			return t
		}
		return math.MaxInt64
	}, again
}

func TestKeyOrderCheck(t *testing.T) {
	//            0    1    2    3    4    5    6   7   8    9
	lg := keyLog("a", "b", "a", "a", "-", "-", "", "", "b", "a")
	for _, c := range []struct {
		name string
		reqs []sinkRequest
		// first overrides the first deliveries the requests give (nil:
		// theirs), for a record first delivered elsewhere (a dead letter).
		first                                  map[int64]int64
		firstOrder, overlaps, inRequest, again int64
		closely                                int64 // requests right after their key's previous answer
	}{
		{name: "in order, nulls in overlapping requests, a key twice in one request", reqs: []sinkRequest{
			req("m1.1", 100, 110, 0, 1),
			req("m1.1", 120, 130, 2, 3), // a twice, in log order
			req("m1.1", 131, 150, 4),
			req("m1.1", 132, 140, 5), // null keys overlap: each stands alone
			req("m1.1", 141, 145, 6),
			req("m1.1", 146, 147, 7), // the empty key, after its earlier record's answer
			req("m1.1", 148, 149, 8, 9),
		}, closely: 1}, // 7, 1 ms after 6's answer
		{name: "a re-delivery after a newer record, by the next process", reqs: []sinkRequest{
			req("m1.1", 100, 110, 0, 1),
			req("m1.1", 120, 130, 2),
			req("m1.1", 135, 200, 3), // m1.1 is killed with it in flight; it completes late
			req("m2.1", 150, 160, 0), // the next owner delivers again what m1.1's commit did not cover: 0 after 2
			req("m2.1", 165, 170, 2), // 2 again, before any newer record of a
			req("m2.1", 175, 180, 3), // 3 first delivered here; m1.1's late answer is a delivery again
		}, again: 1, closely: 3},
		{name: "a re-delivery after a newer record, by the same process once answered", reqs: []sinkRequest{
			req("m1.1", 100, 110, 0),
			req("m1.1", 120, 130, 2),
			req("m1.1", 140, 150, 0), // a replay of the partition: 0 again after 2
		}, again: 1},
		{name: "an inverted first delivery", reqs: []sinkRequest{
			req("m1.1", 100, 110, 2),
			req("m1.1", 120, 130, 0), // 0 first delivered after 2, though not overlapping
		}, firstOrder: 1},
		{name: "an inverted first delivery through a dead letter", reqs: []sinkRequest{
			req("m1.1", 100, 110, 3),
		}, first: map[int64]int64{2: 120e6}, firstOrder: 1},
		{name: "overlapping same-key requests of one process", reqs: []sinkRequest{
			req("m1.1", 100, 150, 0), // still unanswered when the next arrives
			req("m1.1", 120, 130, 2),
		}, firstOrder: 1, overlaps: 1},
		{name: "the earlier record arrives second, while the later one is open", reqs: []sinkRequest{
			req("m1.1", 100, 150, 2),
			req("m1.1", 120, 130, 0),
		}, overlaps: 1},
		{name: "overlap on the empty key", reqs: []sinkRequest{
			req("m1.1", 100, 150, 6),
			req("m1.1", 120, 160, 7),
		}, overlaps: 1},
		{name: "overlap across processes is no violation", reqs: []sinkRequest{
			req("m1.1", 100, 150, 0),
			req("m2.1", 120, 160, 2),
		}},
		{name: "other keys overlap freely; one key again in a failed and a retried request", reqs: []sinkRequest{
			req("m1.1", 100, 150, 0),
			req("m1.1", 120, 130, 1),
			{Inst: "m1.1", Arrived: 151e6, Answered: 160e6, Recs: []recRef{{0, 2}}}, // refused
			req("m1.1", 170, 180, 2, 3),
		}, closely: 1},
		{name: "a request answered after the member's timeout is closed for it at the timeout", reqs: []sinkRequest{
			req("m1.1", 100, 100+clientTimeout.Milliseconds()+5000, 0),
			req("m1.1", 100+(clientTimeout-keyTimeoutSlack).Milliseconds(), 100+clientTimeout.Milliseconds(), 0),
			req("m1.1", 100+clientTimeout.Milliseconds()+1000, 100+clientTimeout.Milliseconds()+1001, 2),
		}, again: 1}, // the member's timed-out request writes 0 after 2: a delivery again, allowed
		{name: "out of log order within a request", reqs: []sinkRequest{
			req("m1.1", 100, 110, 0, 3, 2),
		}, inRequest: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			first, again := deliveries(c.reqs)
			if c.first != nil {
				inner := first
				first = func(p int, o int64) int64 {
					if t, ok := c.first[o]; ok {
						return min(t, inner(p, o))
					}
					return inner(p, o)
				}
			}
			k := checkKeyOrder(lg, first, again, nil, c.reqs)
			for _, f := range []struct {
				name      string
				got, want int64
			}{
				{"FirstOrder", k.FirstOrder, c.firstOrder},
				{"Overlaps", k.Overlaps, c.overlaps},
				{"InRequest", k.InRequest, c.inRequest},
				{"OlderAgain", k.OlderAgain, c.again},
				{"FollowedClosely", k.FollowedClosely, c.closely},
				{"Keyed", k.Keyed, 8},
				{"EmptyKey", k.EmptyKey, 2},
				{"NullKey", k.NullKey, 2},
			} {
				if f.got != f.want {
					t.Errorf("%s = %d, want %d (examples %q)", f.name, f.got, f.want, k.Examples)
				}
			}
			if want := c.firstOrder + c.overlaps + c.inRequest; int64(len(k.Examples)) != want || int64(len(k.failures())) > want {
				t.Errorf("%d examples and failures %q for %d violations", len(k.Examples), k.failures(), want)
			}
			if int64(len(k.AgainExamples)) != c.again {
				t.Errorf("examples of deliveries again %q, want %d", k.AgainExamples, c.again)
			}
		})
	}
}

// The sink keeps every request it judges, with its process, its times and
// its verdict, only in a run that checks keys.
func TestSinkLogsRequestsForTheKeyCheck(t *testing.T) {
	s, err := newSink("t", 2, true, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	arrived := time.Now().Add(-time.Second)
	s.judge(testkit.Batch{Instance: "m1.1", Arrived: arrived, Records: []testkit.Record{{T: "t", P: 1, O: 5}, {T: "t", P: 1, O: 7}}})
	s.setMode(sinkMode{kind: "fail", failPart: 1})
	s.judge(testkit.Batch{Instance: "m2.1", Arrived: arrived, Records: []testkit.Record{{T: "t", P: 1, O: 8}}})
	got := s.reqs.snapshot()
	if len(got) != 2 || got[0].Inst != "m1.1" || !got[0].Accepted || got[1].Accepted || got[0].Arrived != arrived.UnixNano() ||
		got[0].Answered < arrived.UnixNano()+int64(time.Second) || len(got[0].Recs) != 2 || got[0].Recs[1] != (recRef{1, 7}) {
		t.Errorf("request log = %+v", got)
	}
	off, err := newSink("t", 2, false, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer off.close()
	off.judge(testkit.Batch{Instance: "m1.1", Arrived: arrived, Records: []testkit.Record{{T: "t", P: 1, O: 5}}})
	if off.reqs.snapshot() != nil {
		t.Error("a sink without the key check logged a request")
	}
}

func TestKeySpace(t *testing.T) {
	ks := newKeySpace(4, liveKeySalt)
	seen := map[string]int{}
	for seq := range int64(6000) {
		k := ks.key(seq)
		switch {
		case k == nil:
			seen["null"]++
		case len(k) == 0:
			seen["empty"]++
		default:
			seen[string(k)]++
		}
		if string(k) != string(ks.key(seq)) || (k == nil) != (ks.key(seq) == nil) {
			t.Fatalf("key(%d) is not a function of seq", seq)
		}
	}
	if len(seen) != 6 {
		t.Fatalf("keys drawn %v, want k000-k003, empty and null", seen)
	}
	for k, n := range seen {
		if n < 800 || n > 1200 {
			t.Errorf("%s drawn %d times in 6000, want about 1000", k, n)
		}
	}
	if newKeySpace(0, 1).key(3) != nil {
		t.Error("no key space keyed a record")
	}
	if got := keyName(testkit.HashValue("k017")) + keyName(testkit.HashValue("")); !strings.Contains(got, "k017") || !strings.Contains(got, `""`) {
		t.Errorf("key names %s", got)
	}
}
