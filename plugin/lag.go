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
// every topic_lag_refresh_period, on a goroutine of its own (network I/O
// never runs on the owner).

// endsResult carries log end offsets back to the owner.
type endsResult struct {
	ends kadm.ListedOffsets
}

// queryEnds starts a log-end query for the topics of paused partitions, at
// most one at a time.
func (o *owner) queryEnds() {
	if o.endsInFlight || o.closed {
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
	o.endsInFlight = true
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	go func() {
		ctx, cancel := context.WithTimeout(o.ioCtx, o.conf.topicLagRefresh)
		defer cancel()
		// Errors leave the last known log end in place; the next query
		// tries again.
		ends, _ := o.cl.ListEndOffsets(ctx, names...)
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
			o.m.show(p, p.values(now))
		}
	})
}
