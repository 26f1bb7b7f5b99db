package keyed

import (
	"fmt"
	"time"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// keyState is what a Check remembers of one key: its highest offset
// acknowledged so far (a key lives in one partition, so offsets compare),
// and the request that acknowledged it and when.
type keyState struct {
	offset int64
	req    uint64
	ackAt  time.Time
}

// Check judges key order at a sink, one request at a time. For each key it
// follows the first deliveries, the ones a per-key consumer has to keep in
// order:
//
//   - Reordered: a record acknowledged after a higher offset of its key,
//     and not delivered before. Key ordering must keep this at 0.
//   - Overlapped: a record of a key whose request arrived before the key's
//     previous record (sent in another request) was acknowledged: two
//     records of one key were in flight at once. Ordering that waits for
//     the previous record's completion keeps this at 0 too; records of one
//     key in one request are delivered together and do not count.
//   - Duplicates: a record delivered again. Not an order violation.
//
// It also counts requests that hold records of several partitions, which
// Parallel Consumer's batches may (testkit's Ledger notes those as bad,
// since the Benthos pipelines never send them; a Check counts them apart).
//
// The counters are written by Judge only. A Check is not safe for
// concurrent use: as a testkit.Sink's Judge it is called under the sink's
// lock, and its counters are read under the same lock (Sink.View).
type Check struct {
	Records, Distinct, Duplicates int64
	Reordered, Overlapped         int64
	MixedBatches                  int64
	Foreign                       int64     // records of another topic or partition, not checked
	FirstAck, LastNew             time.Time // first acknowledgement; last first delivery
	// Examples holds the first few violations, for the report.
	Examples []string
	// First, when set, is called with each first delivery, its key and the
	// moment of its acknowledgement, after the order check of the record.
	First func(r testkit.Record, key string, now time.Time)

	topic     string // records of another topic are foreign; "" accepts any
	keys      map[string]*keyState
	delivered [][]bool // [partition][offset]: acknowledged at least once
	reqs      uint64   // requests judged so far; numbers the requests
}

// NewCheck returns a Check of the records of topic ("" accepts any) in
// partitions 0 to partitions-1.
func NewCheck(topic string, partitions int) *Check {
	return &Check{topic: topic, keys: map[string]*keyState{}, delivered: make([][]bool, partitions)}
}

// Keys is the number of distinct keys delivered.
func (c *Check) Keys() int { return len(c.keys) }

// Judge is a sink's Judge: it accepts every request and counts what it
// holds at the moment of acknowledgement (now).
func (c *Check) Judge(b testkit.Batch, now time.Time) testkit.Answer {
	c.reqs++
	if c.FirstAck.IsZero() {
		c.FirstAck = now
	}
	p0 := b.Records[0].P
	mixed := false
	for _, r := range b.Records {
		c.Records++
		if r.P != p0 {
			mixed = true
		}
		if (c.topic != "" && r.T != c.topic) || r.P < 0 || int(r.P) >= len(c.delivered) || r.O < 0 {
			c.Foreign++
			continue
		}
		d := c.delivered[r.P]
		for int64(len(d)) <= r.O {
			d = append(d, make([]bool, max(len(d), 4096))...)
		}
		c.delivered[r.P] = d
		if d[r.O] {
			c.Duplicates++
			continue
		}
		d[r.O] = true
		c.Distinct++
		c.LastNew = now
		k := KeyOf(r.V)
		c.order(b, r, k, now)
		if c.First != nil {
			c.First(r, k, now)
		}
	}
	if mixed {
		c.MixedBatches++
	}
	return testkit.Accept
}

// order checks the first delivery of r, of key k, against the key's last.
func (c *Check) order(b testkit.Batch, r testkit.Record, k string, now time.Time) {
	st, ok := c.keys[k]
	if !ok {
		c.keys[k] = &keyState{offset: r.O, req: c.reqs, ackAt: now}
		return
	}
	if r.O < st.offset {
		c.Reordered++
		c.example("key %s: offset %d/%d acknowledged after offset %d", k, r.P, r.O, st.offset)
		return // the key's highest offset stays
	}
	if st.req != c.reqs && b.Arrived.Before(st.ackAt) {
		c.Overlapped++
		c.example("key %s: offset %d/%d sent %v before offset %d was acknowledged", k, r.P, r.O, st.ackAt.Sub(b.Arrived), st.offset)
	}
	st.offset, st.req, st.ackAt = r.O, c.reqs, now
}

func (c *Check) example(format string, args ...any) {
	if len(c.Examples) < 10 {
		c.Examples = append(c.Examples, fmt.Sprintf(format, args...))
	}
}
