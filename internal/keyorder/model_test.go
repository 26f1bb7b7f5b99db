package keyorder

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestModel drives a Scheduler and an Offsets together, as the input would
// under ordering: key, over many seeded random schedules: records of a few
// keys (and null keys) are fetched with gaps, batches are picked of random
// sizes, and outstanding batches are done in any order, some only after
// failing for a while. After every step it checks:
//
//  1. no record is handed out while an earlier record of its key is held
//     or out (but for earlier records in the same batch);
//  2. each key's records are done in offset order (first deliveries follow
//     the log);
//  3. no head-of-line blocking: a pick that returns fewer than it may
//     leaves no record that could go out;
//  4. every record goes out once, and Held counts what did not;
//  5. the base is the first offset added and not done, and Delivered the
//     done runs above it;
//  6. with classes (PickClass, half the seeds), a batch holds one class:
//     that of the lowest record that could go out.
func TestModel(t *testing.T) {
	for seed := range uint64(300) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runModel(t, seed) })
	}
}

// tRecord is the scheduler's record, carrying nothing of the caller's.
type tRecord = Record[int]

type modelBatch struct{ recs []tRecord }

func runModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 21))
	s := NewScheduler[int]()
	base := int64(rng.IntN(5))
	o := NewOffsets(base)
	keys := 1 + rng.IntN(6)
	next := base
	var class func(tRecord) int
	if seed%2 == 1 {
		class = func(r tRecord) int { return int(r.Offset/5) % 2 }
	}
	var (
		added    []tRecord
		held     = map[int64]bool{} // offset -> held
		out      = map[int64]bool{} // offset -> out
		done     = map[int64]bool{}
		lastDone = map[string]int64{}
		batches  []*modelBatch
		log      []string
	)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d: %s\n%v", seed, fmt.Sprintf(format, args...), log)
	}
	eligible := func(r tRecord) bool {
		if !r.Keyed {
			return true
		}
		for _, a := range added {
			if a.Keyed && a.Key == r.Key && a.Offset < r.Offset && (held[a.Offset] || out[a.Offset]) {
				return false
			}
		}
		return true
	}
	for step := 0; step < 300; step++ {
		switch x := rng.IntN(10); {
		case x < 4: // fetch
			for range 1 + rng.IntN(4) {
				next += int64(1 + rng.IntN(2)*rng.IntN(3)) // gaps now and then
				r := tRecord{Offset: next, Keyed: rng.IntN(8) != 0}
				if r.Keyed {
					r.Key = fmt.Sprint(rng.IntN(keys))
				}
				if !s.Add(r) || !o.Add(r.Offset) {
					fail("add %v refused", r)
				}
				added = append(added, r)
				held[r.Offset] = true
				log = append(log, fmt.Sprintf("add %v", r))
			}
		case x < 7: // pick
			max := 1 + rng.IntN(4)
			lowest := int64(-1)
			for _, a := range added {
				if held[a.Offset] && eligible(a) {
					lowest = a.Offset
					break
				}
			}
			b := s.PickClass(max, class)
			log = append(log, fmt.Sprintf("pick %d: %v", max, b))
			if len(b) > max || !slices.IsSortedFunc(b, func(a, c tRecord) int { return int(a.Offset - c.Offset) }) {
				fail("pick %d returned %v", max, b)
			}
			for i, r := range b {
				if !held[r.Offset] {
					fail("picked %v, not held", r)
				}
				// 1: earlier records of its key are done, or in this batch.
				for _, a := range added {
					if a.Keyed && r.Keyed && a.Key == r.Key && a.Offset < r.Offset && (held[a.Offset] || out[a.Offset]) &&
						!slices.ContainsFunc(b[:i], func(c tRecord) bool { return c.Offset == a.Offset }) {
						fail("picked %v while %v of its key is held or out", r, a)
					}
				}
			}
			for _, r := range b {
				delete(held, r.Offset)
				out[r.Offset] = true
			}
			// 6: one class, that of the lowest record that could go out.
			if len(b) > 0 && b[0].Offset != lowest {
				fail("pick %d returned %v, the lowest that could go out is %d", max, b, lowest)
			}
			for _, r := range b {
				if class != nil && class(r) != class(b[0]) {
					fail("pick %d returned %v: more than one class", max, b)
				}
			}
			// 3: a short pick leaves nothing (of its class) that could go out.
			if len(b) < max {
				for _, a := range added {
					if held[a.Offset] && eligible(a) && (class == nil || len(b) == 0 || class(a) == class(b[0])) {
						fail("pick %d returned %d record(s) but %v could go out", max, len(b), a)
					}
				}
			}
			if len(b) > 0 {
				batches = append(batches, &modelBatch{recs: b})
			}
		default: // done (a batch failing for a while is just not done yet)
			if len(batches) == 0 {
				continue
			}
			i := rng.IntN(len(batches))
			b := batches[i]
			batches = slices.Delete(batches, i, i+1)
			s.Done(b.recs)
			log = append(log, fmt.Sprintf("done %v", b.recs))
			for _, r := range b.recs {
				delete(out, r.Offset)
				done[r.Offset] = true
				if !o.Done(r.Offset) {
					fail("offsets: done %d refused", r.Offset)
				}
				if r.Keyed {
					// 2: a key's records are done in offset order.
					if l, ok := lastDone[r.Key]; ok && l > r.Offset {
						fail("key %s: %d done after %d", r.Key, r.Offset, l)
					}
					lastDone[r.Key] = r.Offset
				}
			}
		}
		// 4: Held counts what did not go out, Ready those of it whose key
		// has none out.
		if s.Held() != len(held) {
			fail("Held %d, model %d", s.Held(), len(held))
		}
		keyOut := map[string]bool{}
		for _, c := range added {
			if c.Keyed && out[c.Offset] {
				keyOut[c.Key] = true
			}
		}
		ready := 0
		for _, a := range added {
			if held[a.Offset] && (!a.Keyed || !keyOut[a.Key]) {
				ready++
			}
		}
		if s.Ready() != ready || s.Blocked() != len(held)-ready {
			fail("Ready %d Blocked %d, model %d ready of %d held", s.Ready(), s.Blocked(), ready, len(held))
		}
		// 5: the base and the delivered runs.
		wantBase := next + 1
		if len(added) == 0 {
			wantBase = base
		}
		for _, a := range added {
			if !done[a.Offset] {
				wantBase = a.Offset
				break
			}
		}
		for _, a := range added {
			if o.NotDone(a.Offset) != (held[a.Offset] || out[a.Offset]) {
				fail("NotDone(%d) %v, model held %v out %v", a.Offset, o.NotDone(a.Offset), held[a.Offset], out[a.Offset])
			}
		}
		if o.Base() != wantBase {
			fail("base %d, want %d", o.Base(), wantBase)
		}
		var want []Range
		if len(held)+len(out) > 0 {
			from := int64(-1)
			for off := wantBase; off <= next; off++ {
				isDone := !held[off] && !out[off]
				switch {
				case isDone && from < 0:
					from = off
				case !isDone && from >= 0:
					want = append(want, Range{from, off})
					from = -1
				}
			}
			if from >= 0 {
				want = append(want, Range{from, next + 1})
			}
		}
		if got := o.Delivered(nil); !slices.Equal(got, want) {
			fail("delivered %v, want %v", got, want)
		}
	}
	// Drain: everything goes out and is done, in order per key.
	for rounds := 0; s.Held() > 0 || len(batches) > 0; rounds++ {
		if rounds > 10000 {
			fail("no progress: %d held, %d batches out", s.Held(), len(batches))
		}
		if b := s.PickClass(3, class); len(b) > 0 {
			batches = append(batches, &modelBatch{recs: b})
		}
		b := batches[0]
		batches = batches[1:]
		s.Done(b.recs)
		for _, r := range b.recs {
			o.Done(r.Offset)
		}
	}
	if o.Base() != next+1 && len(added) > 0 {
		fail("drained: base %d, want %d", o.Base(), next+1)
	}
}
