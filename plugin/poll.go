package plugin

import (
	"context"
	"errors"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"
)

// poller is the goroutine that polls kgo when the owner asks for more
// records. Polls block rebalances (BlockRebalanceOnPoll) until the owner has
// queued their records under the current assignment, so the queueing and
// the assignment cannot interleave.
type poller struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func startPoller(cl *kgo.Client, o *owner, log *service.Logger) *poller {
	ctx, cancel := context.WithCancel(context.Background())
	p := &poller{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		var lastErr string
		var lastErrAt time.Time
		for {
			select {
			case <-o.pollWant:
			case <-ctx.Done():
				return
			case <-o.stopped():
				return
			}
			fetches := cl.PollFetches(ctx)
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
			res := pollResult{fetches: fetches, done: make(chan struct{})}
			select {
			case o.pollCh <- res:
				<-res.done
			case <-o.stopped():
			}
			cl.AllowRebalance()
		}
	}()
	return p
}

// stop ends the poll loop and waits for it within ctx.
func (p *poller) stop(ctx context.Context) {
	p.cancel()
	select {
	case <-p.done:
	case <-ctx.Done():
	}
}
