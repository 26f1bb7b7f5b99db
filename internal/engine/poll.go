package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"
)

// poller is the goroutine that polls kgo when the owner asks for more
// records. Polls block rebalances (BlockRebalanceOnPoll) until the owner has
// queued their records under the current assignment, so the queueing and
// the assignment cannot interleave. That window, between a poll's return and
// AllowRebalance, is also where the owner rewinds a partition (SetOffsets),
// as kgo asks.
//
// Polls are numbered in the order they start: a rewind made while the owner
// handles poll N can only be undone by records of polls up to N, which the
// owner drops for the rewound partition.
type poller struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	wakePoll context.CancelFunc // ends the poll in progress; nil between polls
	woken    bool               // a wake came between polls: the next one returns at once
}

// wake ends the poll in progress (or the next one) early, so that the owner
// gets a poll window soon even when every partition with data is paused and
// PollFetches would wait for ever.
func (p *poller) wake() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.wakePoll != nil {
		p.wakePoll()
	} else {
		p.woken = true
	}
}

func newPoller() *poller {
	return &poller{done: make(chan struct{})}
}

// start runs the poll loop for o, which must already have p.wake as its
// wakePoll.
func (p *poller) start(cl *kgo.Client, o *owner, log *service.Logger) {
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go func() {
		defer close(p.done)
		var lastErr string
		var lastErrAt time.Time
		var seq uint64
		for {
			select {
			case <-o.inbox.pollWant:
			case <-ctx.Done():
				return
			case <-o.stopped():
				return
			}
			seq++
			pollCtx, wake := context.WithCancel(ctx)
			p.mu.Lock()
			p.wakePoll = wake
			if p.woken {
				p.woken = false
				wake()
			}
			p.mu.Unlock()
			fetches := cl.PollFetches(pollCtx)
			p.mu.Lock()
			p.wakePoll = nil
			p.mu.Unlock()
			wake()
			if fetches.IsClientClosed() || ctx.Err() != nil {
				cl.AllowRebalance()
				return
			}
			fetches.EachError(func(t string, p int32, err error) {
				if errors.Is(err, context.Canceled) {
					return
				}
				// The same error repeats every fetch while a broker is
				// down; say it once per 10s, not once per retry.
				if msg := err.Error(); msg != lastErr || time.Since(lastErrAt) > 10*time.Second {
					lastErr, lastErrAt = msg, time.Now()
					if t == "" {
						// Not about a partition: the group session or the client.
						log.Errorf("kafka_watermark: consumer error: %v", err)
					} else {
						log.Errorf("kafka_watermark: fetch error on %s/%d: %v", t, p, err)
					}
				}
			})
			res := pollResult{seq: seq, fetches: fetches, done: make(chan struct{})}
			select {
			case o.inbox.pollCh <- res:
				<-res.done
			case <-o.stopped():
			}
			cl.AllowRebalance()
		}
	}()
}

// stop ends the poll loop and waits for it within ctx.
func (p *poller) stop(ctx context.Context) {
	p.cancel()
	select {
	case <-p.done:
	case <-ctx.Done():
	}
}
