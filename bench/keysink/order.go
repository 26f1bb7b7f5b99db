package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// keyOf is the key a record's value names: bench/keyfill writes each value
// as its key, a space, then padding, so the sink needs no key field in the
// request and any contender that posts testkit.Records can be checked.
func keyOf(v string) string {
	if i := strings.IndexByte(v, ' '); i >= 0 {
		return v[:i]
	}
	return v
}

// keyState is what the checker remembers of one key: its highest offset
// acknowledged so far (a key lives in one partition, so offsets compare),
// and the request that acknowledged it and when.
type keyState struct {
	offset int64
	req    uint64
	ackAt  time.Time
}

// orderCheck judges key order at the sink, one request at a time (it is
// the sink's Judge, so the sink's lock serialises every call; it is not
// safe for concurrent use otherwise). For each key it follows the first
// deliveries, the ones a per-key consumer has to keep in order:
//
//   - reordered: a record acknowledged after a higher offset of its key,
//     and not delivered before. Key ordering must keep this at 0.
//   - overlapped: a record of a key whose request arrived before the key's
//     previous record (sent in another request) was acknowledged: two
//     records of one key were in flight at once. Ordering that waits for
//     the previous record's completion keeps this at 0 too; records of one
//     key in one request are delivered together and do not count.
//   - duplicates: a record delivered again. Not an order violation.
//
// It also counts requests that hold records of several partitions, which
// Parallel Consumer's batches may (testkit's Ledger notes those as bad,
// since the Benthos pipelines never send them; the sink reports them
// separately here).
type orderCheck struct {
	topic     string // records of another topic are foreign; "" accepts any
	keys      map[string]*keyState
	delivered [][]bool // [partition][offset]: acknowledged at least once
	reqs      uint64   // requests judged so far; numbers the requests

	records, distinct, duplicates int64
	reordered, overlapped         int64
	mixedBatches                  int64
	foreign                       int64     // records of another topic or partition, not checked
	firstAck, lastNew             time.Time // first acknowledgement; last first delivery
	// examples holds the first few violations, for the report.
	examples []string
}

func newOrderCheck(topic string, partitions int) *orderCheck {
	return &orderCheck{topic: topic, keys: map[string]*keyState{}, delivered: make([][]bool, partitions)}
}

// judge is the sink's Judge: it accepts every request and counts what it
// holds at the moment of acknowledgement (now).
func (c *orderCheck) judge(b testkit.Batch, now time.Time) testkit.Answer {
	c.reqs++
	if c.firstAck.IsZero() {
		c.firstAck = now
	}
	p0 := b.Records[0].P
	mixed := false
	for _, r := range b.Records {
		c.records++
		if r.P != p0 {
			mixed = true
		}
		if (c.topic != "" && r.T != c.topic) || r.P < 0 || int(r.P) >= len(c.delivered) || r.O < 0 {
			c.foreign++
			continue
		}
		d := c.delivered[r.P]
		for int64(len(d)) <= r.O {
			d = append(d, make([]bool, max(len(d), 4096))...)
		}
		c.delivered[r.P] = d
		if d[r.O] {
			c.duplicates++
			continue
		}
		d[r.O] = true
		c.distinct++
		c.lastNew = now
		k := keyOf(r.V)
		st, ok := c.keys[k]
		if !ok {
			c.keys[k] = &keyState{offset: r.O, req: c.reqs, ackAt: now}
			continue
		}
		if r.O < st.offset {
			c.reordered++
			c.example("key %s: offset %d/%d acknowledged after offset %d", k, r.P, r.O, st.offset)
			continue // the key's highest offset stays
		}
		if st.req != c.reqs && b.Arrived.Before(st.ackAt) {
			c.overlapped++
			c.example("key %s: offset %d/%d sent %v before offset %d was acknowledged", k, r.P, r.O, st.ackAt.Sub(b.Arrived), st.offset)
		}
		st.offset, st.req, st.ackAt = r.O, c.reqs, now
	}
	if mixed {
		c.mixedBatches++
	}
	return testkit.Accept
}

func (c *orderCheck) example(format string, args ...any) {
	if len(c.examples) < 10 {
		c.examples = append(c.examples, fmt.Sprintf(format, args...))
	}
}
