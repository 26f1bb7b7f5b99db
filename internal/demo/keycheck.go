package demo

import (
	"slices"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// keyCheck is the sink's check of key order in one partition, kept when the
// records carry few keys (demoOptions.keySpace): what a sink that upserts by
// key would suffer from. A record lands in such a sink when a write holding
// it succeeds (the batch is accepted), so order is checked then, not when
// the write starts. It is written only under the sink's lock.
//
// Two things are checked. A batch goes out holding a key that another batch,
// not yet answered, holds too (an overlap): the two writes race, and the
// older value of the key may land last. And a record lands for the first
// time after a later record of its key did (late): the key went back.
// Records landing again are counted apart (wentBack): a replay in place
// delivers again records older than what their key already had, under
// either ordering, and at-least-once allows it.
type keyCheck struct {
	start     int64            // the first offset of the partition's run; landed[i] is offset start+i
	landed    []bool           // offsets that landed (were in an accepted batch)
	out       map[string]int   // unanswered batches holding the key
	lastFirst map[string]int64 // the highest offset of the key that landed
	reordered map[string]bool  // keys with a late record
	late      int              // first landings below their key's lastFirst
	overlaps  int              // batches that went out with a key of another unanswered batch
	wentBack  int              // landings again below their key's lastFirst
	firsts    int              // first landings in order
}

// newKeyCheck returns the check of a partition whose run is [start, end).
func newKeyCheck(start, end int64) *keyCheck {
	return &keyCheck{start: start, landed: make([]bool, max(end-start, 0)),
		out: map[string]int{}, lastFirst: map[string]int64{}, reordered: map[string]bool{}}
}

// sent notes a batch going out with the distinct keys keys.
func (k *keyCheck) sent(keys []string) {
	overlap := false
	for _, key := range keys {
		if k.out[key] > 0 {
			overlap = true
		}
		k.out[key]++
	}
	if overlap {
		k.overlaps++
	}
}

// answered notes the sink's answer to a batch sent with keys.
func (k *keyCheck) answered(keys []string) {
	for _, key := range keys {
		if k.out[key]--; k.out[key] <= 0 {
			delete(k.out, key)
		}
	}
}

// land notes that offset off, of key, was in an accepted batch, and
// reports whether it landed for the first time. Offsets outside the run are
// not checked.
func (k *keyCheck) land(off int64, key string) bool {
	i := off - k.start
	if i < 0 || i >= int64(len(k.landed)) {
		return false
	}
	first := !k.landed[i]
	k.landed[i] = true
	last, seen := k.lastFirst[key]
	switch {
	case !first:
		if seen && off < last {
			k.wentBack++
		}
	case seen && off < last:
		k.late++
		k.reordered[key] = true
	default:
		k.firsts++
		k.lastFirst[key] = off
	}
	return first
}

// keyOrderSeen is a copy of a partition's keyCheck figures.
type keyOrderSeen struct {
	Keys      int // keys that landed
	Reordered int // keys with a record that first landed after a later one of the key
	Late      int // such records
	Overlaps  int // batches sent with a key of another unanswered batch
	WentBack  int // records landing again, older than their key's newest
	Records   int // first landings checked
}

func (k *keyCheck) seen() keyOrderSeen {
	if k == nil {
		return keyOrderSeen{}
	}
	return keyOrderSeen{Keys: len(k.lastFirst), Reordered: len(k.reordered), Late: k.late, Overlaps: k.overlaps,
		WentBack: k.wentBack, Records: k.firsts + k.late}
}

func (s keyOrderSeen) add(o keyOrderSeen) keyOrderSeen {
	return keyOrderSeen{Keys: s.Keys + o.Keys, Reordered: s.Reordered + o.Reordered, Late: s.Late + o.Late,
		Overlaps: s.Overlaps + o.Overlaps, WentBack: s.WentBack + o.WentBack, Records: s.Records + o.Records}
}

// keyWait is what the sink saw of a failed batch's partition while the
// batch waited, from its first rejection until the sink accepted it: the
// records that first landed past its first offset, of other keys (Passed:
// they flowed past it) and of its own keys outside it (OwnPassed: a later
// value of a failed key, landed before the failed one).
type keyWait struct {
	Keys      []string // the batch's keys, in order of first appearance
	Passed    int
	OwnPassed int
}

// waiting reports whether f was rejected and not yet accepted at now, its
// keys waiting.
func (f *failedBatch) waiting(now time.Time) bool {
	if len(f.Deliveries) == 0 || f.Deliveries[0].Answered.IsZero() || now.Before(f.Deliveries[0].Answered) {
		return false
	}
	return !slices.ContainsFunc(f.Deliveries, func(d delivery) bool { return d.Accepted })
}

// holds reports whether the failed batch holds offset off: its range under
// none, its set under key.
func (f *failedBatch) holds(off int64) bool {
	if f.Offsets == nil {
		return f.First <= off && off <= f.Last
	}
	_, ok := slices.BinarySearch(f.Offsets, off)
	return ok
}

// noteWaiting counts the first landing of off, of key, against every
// failed batch of the partition that waits at now.
func (sp *sinkPartition) noteWaiting(off int64, key string, now time.Time) {
	for i := range sp.failed {
		f := &sp.failed[i]
		if off <= f.First || f.holds(off) || !f.waiting(now) {
			continue
		}
		if slices.Contains(f.Wait.Keys, key) {
			f.Wait.OwnPassed++
		} else {
			f.Wait.Passed++
		}
	}
}

// messageKey is the key the input put in a message's metadata.
func messageKey(m *service.Message) string {
	v, _ := m.MetaGetMut("kafka_key")
	b, _ := v.([]byte)
	return string(b)
}

// distinct returns the distinct values of keys, in order of first
// appearance.
func distinct(keys []string) []string {
	var out []string
	for _, k := range keys {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}
