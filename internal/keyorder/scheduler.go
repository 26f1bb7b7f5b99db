package keyorder

import (
	"slices"
)

// Record is what the scheduler knows of a fetched record: its offset and
// its key. Keyed is false for a null key, which stands alone. Val is the
// caller's, carried along (the input keeps the record and its batch there,
// so that no map from offsets is needed). Records that Pick returns carry
// the scheduler's handle of their key: give Done those values, not copies
// made anew.
type Record[V any] struct {
	Offset int64
	Key    string
	Keyed  bool
	Val    V
	slot   int32 // the key's slot, set by Add
}

// Scheduler holds one partition's fetched records until their key is free,
// and hands them out in batches of free records, lowest offset first.
//
// Each key with records held or out has a slot, found by its bytes once per
// record (Add); Pick and Done reach it by index, and a slot is freed, and
// its key forgotten, as soon as the key has nothing held or out, so the
// scheduler's size follows the keys in play, not the keys ever seen.
//
// Invariants, kept by Add, Pick and Done:
//   - slots[ids[k]] is key k's slot while k has records held or out, and
//     ids has no other entries; a free slot is on free;
//   - a slot's held are its key's records not handed out, in offset order,
//     all after its records out (records are added in offset order, and a
//     key's records go out in order); out counts those out and not done;
//   - every slot with records held and none out has an entry for its first
//     held record in ready (stale entries, for records since handed out or
//     slots since reused, are told by their offset and dropped when met);
//   - every held record without a key has its own entry in ready.
type Scheduler[V any] struct {
	ids   map[string]int32
	slots []keySlot[V]
	free  []int32
	ready readyHeap[V]
	nHeld int
	// nReady counts the records held whose key has none out (and those
	// without a key): what Pick may take now; the others are blocked.
	nReady int
	last   int64 // the last offset added, -1 before any
}

// keySlot is one key's records held and the count of those out.
type keySlot[V any] struct {
	key  string
	held []Record[V]
	out  int
}

// NewScheduler returns an empty scheduler.
func NewScheduler[V any]() *Scheduler[V] {
	return &Scheduler[V]{ids: map[string]int32{}, last: -1}
}

// Held is the number of records added and not handed out.
func (s *Scheduler[V]) Held() int { return s.nHeld }

// Ready is the number of records held that may go out now: their key has
// no record out.
func (s *Scheduler[V]) Ready() int { return s.nReady }

// Blocked is the number of records held because an earlier record of their
// key is out.
func (s *Scheduler[V]) Blocked() int { return s.nHeld - s.nReady }

// Keys is the number of keys with records held or out.
func (s *Scheduler[V]) Keys() int { return len(s.ids) }

// Add takes a fetched record, in offset order: an offset at or below the last
// one added is a re-delivery of fetched data and is ignored (false).
func (s *Scheduler[V]) Add(r Record[V]) bool {
	if r.Offset <= s.last {
		return false
	}
	s.last = r.Offset
	s.nHeld++
	if !r.Keyed {
		s.nReady++
		r.slot = -1
		s.ready.push(r)
		return true
	}
	id, ok := s.ids[r.Key]
	if !ok {
		id = s.newSlot(r.Key)
	}
	r.slot = id
	k := &s.slots[id]
	k.held = append(k.held, r)
	if k.out == 0 {
		s.nReady++
	}
	if len(k.held) == 1 && k.out == 0 {
		s.ready.push(r)
	}
	return true
}

// newSlot gives key a slot.
func (s *Scheduler[V]) newSlot(key string) int32 {
	var id int32
	if n := len(s.free); n > 0 {
		id = s.free[n-1]
		s.free = s.free[:n-1]
	} else {
		id = int32(len(s.slots))
		s.slots = append(s.slots, keySlot[V]{})
	}
	s.slots[id].key = key
	s.ids[key] = id
	return id
}

// Pick hands out up to max records whose keys are free, lowest offset first,
// and returns them in offset order. With a key's first held record it takes
// the key's next held records too, while there is room: a batch may hold
// several records of one key, in log order. Every key it hands out is out
// until Done is told of each of its records.
func (s *Scheduler[V]) Pick(max int) []Record[V] { return s.PickClass(max, nil) }

// PickClass is Pick for records of one class: that of the lowest free
// record, as class tells it (nil: one class for all). A record of another
// class stays held, and so do its key's later records; the next pick may
// take it. The input uses it to keep records carried with different
// attempt counts out of one batch.
func (s *Scheduler[V]) PickClass(max int, class func(Record[V]) int) []Record[V] {
	var (
		batch   []Record[V]
		skipped []Record[V] // heads of another class, pushed back at the end
		want    int
		chosen  bool
	)
	same := func(r Record[V]) bool {
		if class == nil {
			return true
		}
		c := class(r)
		if !chosen {
			want, chosen = c, true
		}
		return c == want
	}
	for len(batch) < max && len(s.ready) > 0 {
		r := s.ready.pop()
		if !r.Keyed {
			if !same(r) {
				skipped = append(skipped, r)
				continue
			}
			batch = append(batch, r)
			s.nHeld--
			s.nReady--
			continue
		}
		k := &s.slots[r.slot]
		if len(k.held) == 0 || k.held[0].Offset != r.Offset || k.out > 0 {
			continue // stale
		}
		if !same(r) {
			skipped = append(skipped, r)
			continue
		}
		n := 1
		for n < min(len(k.held), max-len(batch)) && same(k.held[n]) {
			n++
		}
		batch = append(batch, k.held[:n]...)
		s.nHeld -= n
		// the key's records left held are blocked behind those out now
		s.nReady -= len(k.held)
		k.out += n
		if n == len(k.held) {
			k.held = k.held[:0]
		} else {
			k.held = k.held[n:]
		}
	}
	for _, r := range skipped {
		s.ready.push(r)
	}
	slices.SortFunc(batch, func(a, b Record[V]) int {
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

// Done tells the scheduler that records Pick handed out are done: delivered
// or dead-lettered. A key whose records are all done is free again: its next
// held record may go out, or, with none held, the key is forgotten. A
// record that failed is not done: its key stays out (quarantined), and its
// later records wait, until it is.
func (s *Scheduler[V]) Done(records []Record[V]) {
	for _, r := range records {
		if !r.Keyed || r.slot < 0 || int(r.slot) >= len(s.slots) {
			continue
		}
		k := &s.slots[r.slot]
		if k.out == 0 || k.key != r.Key {
			continue // not out: a driver bug, or told twice; nothing to free
		}
		if k.out--; k.out > 0 {
			continue
		}
		if len(k.held) > 0 {
			s.nReady += len(k.held)
			s.ready.push(k.held[0])
			continue
		}
		delete(s.ids, k.key)
		*k = keySlot[V]{held: k.held[:0]}
		s.free = append(s.free, r.slot)
	}
}

// readyHeap is a min-heap by offset of records that may go out, unless
// stale. Typed rather than container/heap, whose interface boxes a Record
// into an allocation on every push.
type readyHeap[V any] []Record[V]

func (h *readyHeap[V]) push(r Record[V]) {
	*h = append(*h, r)
	q := *h
	for i := len(q) - 1; i > 0; {
		parent := (i - 1) / 2
		if q[parent].Offset <= q[i].Offset {
			break
		}
		q[parent], q[i] = q[i], q[parent]
		i = parent
	}
}

func (h *readyHeap[V]) pop() Record[V] {
	q := *h
	top := q[0]
	n := len(q) - 1
	q[0] = q[n]
	var zero Record[V]
	q[n] = zero
	q = q[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && q[r].Offset < q[l].Offset {
			m = r
		}
		if q[i].Offset <= q[m].Offset {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	*h = q
	return top
}
