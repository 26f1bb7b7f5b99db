package plugin

import (
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The membership fence: under group_protocol consumer (KIP-848), a member
// that has heard no heartbeat answer for session_timeout stops handing out
// records until the group answers again.
//
// Why: a KIP-848 member cut off from the group coordinator keeps its
// partitions. kgo retries its heartbeat in place, up to RequestRetries times
// with backoff (consumer_group.go:1293-1340, v1.22.3), tens of seconds with
// the defaults, and learns that the broker fenced it only from the first
// answer after the cut (FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID, then
// abandonAssignment and OnPartitionsLost: consumer_group_848.go:322-361,
// consumer_group.go:532-550). Meanwhile the broker has expired its session
// (group.consumer.session.timeout.ms) and given its partitions to another
// member, which resumes at the last commit. Without the fence the cut-off
// member goes on fetching and delivering those partitions' records from the
// same offsets: duplicates of what the new owner delivers, which no commit or
// metadata could have covered. (Found by the chaos harness: a member cut off
// for 9.9 s delivered 752 records the new owner had delivered 10 ms before.)
// A classic member needs no fence: its Heartbeat is retried for at most
// session_timeout (retryTimeout), after which kgo gives its partitions up as
// lost itself.
//
// The fence counts answered ConsumerGroupHeartbeat requests (kgo's
// HookBrokerE2E, which runs on the connection's read path before kgo reads
// the answer). It engages when the last answer is older than
// session_timeout (at most 45 s), by when the broker may have expired the
// session.
// It lifts at the second answer after it engaged, not the first, because the
// first may be the broker's "you were fenced": kgo handles that answer by
// calling OnPartitionsLost, which the owner completes (dropping every such
// partition) before kgo sends its next heartbeat, so by the second answer the
// partitions are either still ours or gone. The cost is a pause of one
// heartbeat interval after a cut longer than session_timeout.
//
// Nothing is lost by holding back: the held records stay registered or
// queued, and are handed out after the fence lifts or replayed by the next
// owner.

// keyConsumerGroupHeartbeat is the Kafka API key of ConsumerGroupHeartbeat
// (KIP-848).
const keyConsumerGroupHeartbeat = 68

// heartbeats counts the group's answered heartbeats. Safe for concurrent use:
// kgo's connection goroutines write it, the owner reads it.
type heartbeats struct {
	answers atomic.Uint64
	last    atomic.Int64 // time.Time.UnixNano of the latest answer
	// wake nudges the owner (capacity 1, never blocks), so that reads held
	// by the fence are served as soon as it can lift.
	wake chan struct{}
}

func newHeartbeats(now time.Time) *heartbeats {
	h := &heartbeats{wake: make(chan struct{}, 1)}
	h.last.Store(now.UnixNano())
	return h
}

// answered records one answered heartbeat at now.
func (h *heartbeats) answered(now time.Time) {
	h.last.Store(now.UnixNano())
	h.answers.Add(1)
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// OnBrokerE2E implements kgo.HookBrokerE2E: an answer read without error is
// an answer, whatever its error code.
func (h *heartbeats) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if key == keyConsumerGroupHeartbeat && e2e.Err() == nil {
		h.answered(time.Now())
	}
}

// fence is the owner's view of the heartbeats. Owned by the owner goroutine.
type fence struct {
	hb      *heartbeats // nil: no fence (the classic protocol)
	timeout time.Duration
	engaged bool
	// since is hb.answers when the fence engaged; it lifts at since+2.
	since uint64
}

// fenceHolds reports whether hand-outs must wait at now, engaging or lifting the
// fence as the heartbeats say, and logs each change.
func (o *owner) fenceHolds(now time.Time) bool {
	f := &o.fence
	if f.hb == nil {
		return false
	}
	n := f.hb.answers.Load()
	if f.engaged {
		if n < f.since+2 {
			return true
		}
		f.engaged = false
		o.log.Infof("kafka_watermark: the group coordinator answers heartbeats again: handing out records")
		return false
	}
	last := time.Unix(0, f.hb.last.Load())
	if silent := now.Sub(last); silent > f.timeout {
		f.engaged, f.since = true, n
		o.log.Warnf("kafka_watermark: no heartbeat answered for %v (%s %v): holding back records until the group coordinator answers, since the broker may have given this member's partitions to another",
			silent.Truncate(time.Millisecond), fieldSessionTimeout, f.timeout)
		return true
	}
	return false
}

// newFence returns the fence of a member of the given config: none under the
// classic protocol.
func newFence(conf *config, now time.Time) fence {
	if conf.groupProtocol != protocolConsumer {
		return fence{}
	}
	return fence{hb: newHeartbeats(now), timeout: min(conf.sessionTimeout, brokerSessionTimeout)}
}

// brokerSessionTimeout is the broker's default group.consumer.session.timeout.ms.
// The fence engages at session_timeout or this, whichever is shorter: the
// broker's own setting is not known to the member, and engaging early only
// pauses, while engaging after the broker expired the session lets
// duplicates through.
const brokerSessionTimeout = 45 * time.Second

// wake is the channel a heartbeat answer nudges; nil (never ready) without a
// fence.
func (f *fence) wake() <-chan struct{} {
	if f.hb == nil {
		return nil
	}
	return f.hb.wake
}
