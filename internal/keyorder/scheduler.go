package keyorder

import (
	"container/heap"
	"slices"
)

// Record is what the scheduler knows of a fetched record: its offset and
// its key. Keyed is false for a null key, which stands alone.
type Record struct {
	Offset int64
	Key    string
	Keyed  bool
}

// Scheduler holds one partition's fetched records until their key is free,
// and hands them out in batches of free records, lowest offset first.
//
// Invariants, kept by Add, Pick and Done:
//   - held[k] holds key k's records not handed out, in offset order, and
//     is absent when there are none;
//   - out[k] counts key k's records handed out and not done, absent at 0;
//   - a key's held records all come after its records out (records are
//     added in offset order, and a key's records go out in order);
//   - every key with held records and none out has an entry for its first
//     held record in ready (stale entries, for records since handed out,
//     are dropped when met);
//   - every held record without a key has its own entry in ready.
type Scheduler struct {
	held  map[string][]Record
	out   map[string]int
	ready readyHeap
	nHeld int
	last  int64 // the last offset added, -1 before any
}

// NewScheduler returns an empty scheduler.
func NewScheduler() *Scheduler {
	return &Scheduler{held: map[string][]Record{}, out: map[string]int{}, last: -1}
}

// Held is the number of records added and not handed out.
func (s *Scheduler) Held() int { return s.nHeld }

// Out is the number of keys with records handed out and not done.
func (s *Scheduler) Out() int { return len(s.out) }

// Add takes a fetched record, in offset order: an offset at or below the last
// one added is a re-delivery of fetched data and is ignored (false).
func (s *Scheduler) Add(r Record) bool {
	if r.Offset <= s.last {
		return false
	}
	s.last = r.Offset
	s.nHeld++
	if !r.Keyed {
		heap.Push(&s.ready, readyEntry{rec: r})
		return true
	}
	q := append(s.held[r.Key], r)
	s.held[r.Key] = q
	if len(q) == 1 && s.out[r.Key] == 0 {
		heap.Push(&s.ready, readyEntry{rec: r})
	}
	return true
}

// Pick hands out up to max records whose keys are free, lowest offset first,
// and returns them in offset order. With a key's first held record it takes
// the key's next held records too, while there is room: a batch may hold
// several records of one key, in log order. Every key it hands out is out
// until Done is told of each of its records.
func (s *Scheduler) Pick(max int) []Record {
	var batch []Record
	for len(batch) < max && s.ready.Len() > 0 {
		e := heap.Pop(&s.ready).(readyEntry)
		r := e.rec
		if !r.Keyed {
			batch = append(batch, r)
			s.nHeld--
			continue
		}
		q := s.held[r.Key]
		if len(q) == 0 || q[0].Offset != r.Offset || s.out[r.Key] > 0 {
			continue // stale
		}
		n := min(len(q), max-len(batch))
		batch = append(batch, q[:n]...)
		s.nHeld -= n
		s.out[r.Key] += n
		if n == len(q) {
			delete(s.held, r.Key)
		} else {
			s.held[r.Key] = q[n:]
		}
	}
	slices.SortFunc(batch, func(a, b Record) int {
		switch {
		case a.Offset < b.Offset:
			return -1
		case a.Offset > b.Offset:
			return 1
		}
		return 0
	})
	return batch
}

// Done tells the scheduler that records handed out are done: delivered or
// dead-lettered. A key whose records are all done is free again: its next
// held record may go out. A record that failed is not done: its key stays
// out (quarantined), and its later records wait, until it is.
func (s *Scheduler) Done(records []Record) {
	for _, r := range records {
		if !r.Keyed {
			continue
		}
		o, ok := s.out[r.Key]
		if !ok {
			continue // not out: a driver bug, or told twice; nothing to free
		}
		n := o - 1
		if n > 0 {
			s.out[r.Key] = n
			continue
		}
		delete(s.out, r.Key)
		if q := s.held[r.Key]; len(q) > 0 {
			heap.Push(&s.ready, readyEntry{rec: q[0]})
		}
	}
}

// readyEntry is a record that may go out, unless stale.
type readyEntry struct{ rec Record }

// readyHeap is a min-heap of ready entries by offset.
type readyHeap []readyEntry

func (h readyHeap) Len() int           { return len(h) }
func (h readyHeap) Less(i, j int) bool { return h[i].rec.Offset < h[j].rec.Offset }
func (h readyHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *readyHeap) Push(x any)        { *h = append(*h, x.(readyEntry)) }
func (h *readyHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
