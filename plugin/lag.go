package plugin

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// A paused partition is not fetched, so no fetch response carries its log
// end, and its lag would stand still exactly when an operator needs it: a
// partition at its pending limit whose producers keep writing. While any
// partition is paused, the owner asks for the log ends of those partitions
// every endsEvery commit periods, on a goroutine of its own (network I/O
// never runs on the owner).
const endsEvery = 10

// endsResult carries log end offsets back to the owner.
type endsResult struct {
	ends kadm.ListedOffsets
}

// maybeQueryEnds starts a log-end query for the paused partitions, at most
// one at a time and at most every endsEvery ticks.
func (o *owner) maybeQueryEnds() {
	if o.endsInFlight || o.closed {
		return
	}
	if o.ticksSinceEnds++; o.ticksSinceEnds < endsEvery {
		return
	}
	topics := map[string]bool{}
	for _, p := range o.parts {
		if p.paused {
			topics[p.tp.topic] = true
		}
	}
	if len(topics) == 0 {
		return
	}
	o.ticksSinceEnds = 0
	o.endsInFlight = true
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	go func() {
		ctx, cancel := context.WithTimeout(o.commitCtx, endsEvery*o.conf.commitPeriod)
		defer cancel()
		// Errors leave the last known log end in place; the next query
		// tries again.
		ends, _ := kadm.NewClient(o.cl).ListEndOffsets(ctx, names...)
		select {
		case o.endsCh <- endsResult{ends: ends}:
		case <-o.stopped():
		}
	}()
}

// onEnds records the log ends of live partitions; a log end only moves
// forward, so a late answer cannot lower one seen in a fetch since.
func (o *owner) onEnds(r endsResult) {
	o.endsInFlight = false
	now := time.Now()
	r.ends.Each(func(l kadm.ListedOffset) {
		p := o.parts[topicPartition{l.Topic, l.Partition}]
		if l.Err == nil && p != nil && l.Offset > p.highWatermark {
			p.highWatermark = l.Offset
			o.m.publish(p, now)
		}
	})
}
