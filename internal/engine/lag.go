package engine

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// A paused partition is not fetched, so no fetch response carries its log
// end, and its lag would stand still exactly when an operator needs it: a
// partition at its pending limit whose producers keep writing. While any
// partition is paused, the owner asks for the log ends of those partitions
// every topic_lag_refresh_period, on a goroutine of its own (network I/O
// never runs on the owner).

// endsResult carries log end and log start offsets back to the owner.
type endsResult struct {
	ends, starts kadm.ListedOffsets
}

// queryEnds starts a query of the log ends of the topics of paused
// partitions, and of the log starts of the topics of paused or stalled
// partitions (those that cannot fetch, and so learn of no deletion from a
// fetch: loss.go), at most one at a time.
func (o *owner) queryEnds() {
	if o.queries.endsInFlight || o.closed {
		return
	}
	ends, starts := map[string]bool{}, map[string]bool{}
	for _, p := range o.lists.paused.parts {
		if p.paused && p.live() {
			ends[p.tp.topic], starts[p.tp.topic] = true, true
		}
	}
	for _, p := range o.lists.failed.parts {
		if p.live() {
			starts[p.tp.topic] = true
		}
	}
	if len(starts) == 0 {
		return
	}
	o.queries.endsInFlight = true
	go func() {
		ctx, cancel := context.WithTimeout(o.ioCtx, o.conf.TopicLagRefresh)
		defer cancel()
		// Errors leave the last known offsets in place; the next query
		// tries again.
		var r endsResult
		if len(ends) > 0 {
			r.ends, _ = o.cl.ListEndOffsets(ctx, slices.Collect(maps.Keys(ends))...)
		}
		r.starts, _ = o.cl.ListStartOffsets(ctx, slices.Collect(maps.Keys(starts))...)
		select {
		case o.inbox.endsCh <- r:
		case <-o.stopped():
		}
	}()
}

// onEnds records the log ends of live partitions (a log end only moves
// forward, so a late answer cannot lower one seen in a fetch since), and
// reports what the log starts show lost.
func (o *owner) onEnds(r endsResult) {
	o.queries.endsInFlight = false
	now := time.Now()
	r.ends.Each(func(l kadm.ListedOffset) {
		p := o.parts[topicPartition{l.Topic, l.Partition}]
		if l.Err == nil && p != nil && p.queue.raiseLogEnd(l.Offset) {
			o.m.show(p, p.values(now))
		}
	})
	r.starts.Each(func(l kadm.ListedOffset) {
		p := o.parts[topicPartition{l.Topic, l.Partition}]
		if l.Err == nil && p != nil && !p.draining && (p.paused || p.stalled()) {
			o.onLogStart(p, l.Offset)
		}
	})
}

// queries is the state of the owner's queries of the broker: the log ends
// and starts of partitions that cannot fetch (lag.go) and the topics'
// retention (retention.go). At most one of each runs at a time. Owned by
// the owner goroutine.
type queries struct {
	endsInFlight bool
	// retention holds each described topic's time retention in ms, -1
	// for none; retentionInFlight says a description is running,
	// retentionWarned that a refused one was said.
	retention                          map[string]int64
	retentionInFlight, retentionWarned bool
}
