package engine

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
// with backoff (consumer_group.go:1293-1343, v1.22.3), tens of seconds with
// the defaults, and learns that the broker fenced it only from the first
// answer after the cut (FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID, then
// abandonAssignment and OnPartitionsLost: consumer_group_848.go:330-373,
// consumer_group.go:532-550). Meanwhile the broker has expired its session
// (group.consumer.session.timeout.ms) and given its partitions to another
// member, which resumes at the last commit. Without the fence the cut-off
// member goes on fetching and delivering those partitions' records from the
// same offsets: duplicates of what the new owner delivers, which no commit or
// metadata could have covered. (Found by the chaos harness: a member cut off
// for 9.9 s delivered 752 records the new owner had delivered 10 ms before.)
// A classic member needs no fence: its Heartbeat is retried for at most
// session_timeout (kafkaconn's retry budget, internal/kafkaconn/retry.go),
// after which kgo
// gives its partitions up as lost itself.
//
// The fence counts answered ConsumerGroupHeartbeat requests (kgo's
// HookBrokerE2E, which runs on the connection's read path before kgo reads
// the answer). It engages when the last answer is older than
// session_timeout (at most 45 s), by when the broker may have expired the
// session, and it lifts at the next answer after the one that ended the
// silence, not at that one, because that one may be the broker's "you were
// fenced": kgo handles it by calling OnPartitionsLost, which the owner
// completes (dropping every such partition) before kgo sends its next
// heartbeat, so by the next answer the partitions are either still ours or
// gone. The silence is judged twice, because the owner looks only when it
// has something to hand out: by the owner, while it lasts, and by the hook,
// when the answer that ends it arrives (a cut member's fetches resume with
// its heartbeats, and the owner may first look after that answer). The cost
// is a pause of one heartbeat interval after a cut longer than
// session_timeout.
//
// Nothing is lost by holding back: the held records stay registered or
// queued, and are handed out after the fence lifts or replayed by the next
// owner.

// keyConsumerGroupHeartbeat is the Kafka API key of ConsumerGroupHeartbeat
// (KIP-848).
const keyConsumerGroupHeartbeat = 68

// brokerSessionTimeout is the broker's default group.consumer.session.timeout.ms.
// The fence engages at session_timeout or this, whichever is shorter: the
// broker's own setting is not known to the member, and engaging early only
// pauses, while engaging after the broker expired the session lets
// duplicates through.
const brokerSessionTimeout = 45 * time.Second

// heartbeats counts the group's answered heartbeats and holds the fence.
// Safe for concurrent use: kgo's connection goroutines record answers, the
// owner asks whether the fence holds.
type heartbeats struct {
	timeout time.Duration
	answers atomic.Uint64
	last    atomic.Int64 // time.Time.UnixNano of the latest answer
	// liftAt is the number of answers at which the fence lifts: it holds
	// while answers < liftAt. It only grows.
	liftAt atomic.Uint64
	// observe, set by tests only, runs after each write of answered: where
	// an owner reading concurrently could see the fence.
	observe func()
	// wake nudges the owner (capacity 1, never blocks), so that reads held
	// by the fence are served as soon as it can lift.
	wake chan struct{}
}

func newHeartbeats(timeout time.Duration, now time.Time) *heartbeats {
	h := &heartbeats{timeout: timeout, wake: make(chan struct{}, 1)}
	h.last.Store(now.UnixNano())
	return h
}

// raiseLift makes the fence hold until the answers reach n.
func (h *heartbeats) raiseLift(n uint64) {
	for {
		cur := h.liftAt.Load()
		if cur >= n || h.liftAt.CompareAndSwap(cur, n) {
			return
		}
	}
}

// answered records one answered heartbeat at now. An answer after a silence
// longer than the timeout engages the fence until the next one.
//
// The order matters, because the owner reads last, answers and liftAt
// while this runs: the fence is raised (endSilence) before last says the
// silence is over, and before the answer is counted. Had last moved first,
// an owner reading in between would see a fresh answer, no silence to
// engage the fence for, and the old liftAt, and hand out records although
// this answer may be the broker's "you were fenced".
func (h *heartbeats) answered(now time.Time) {
	h.endSilence(now)
	h.step()
	h.last.Store(now.UnixNano())
	h.step()
	h.answers.Add(1)
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// step runs observe, if a test set it.
func (h *heartbeats) step() {
	if h.observe != nil {
		h.observe()
	}
}

// endSilence raises the fence until the answer after this one, if the
// answer at now ends a silence longer than the timeout. Heartbeats are sent
// one at a time, so answered never runs twice at once.
func (h *heartbeats) endSilence(now time.Time) {
	if now.Sub(time.Unix(0, h.last.Load())) > h.timeout {
		h.raiseLift(h.answers.Load() + 2)
	}
}

// holds reports whether the fence holds at now, engaging it if no answer
// came for longer than the timeout.
func (h *heartbeats) holds(now time.Time) bool {
	n := h.answers.Load()
	if now.Sub(time.Unix(0, h.last.Load())) > h.timeout {
		h.raiseLift(n + 2)
	}
	return n < h.liftAt.Load()
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
	holding bool        // as last seen, for the log lines
}

// newFence returns the fence of a member of the given config: none under the
// classic protocol.
func newFence(conf *Config, now time.Time) fence {
	if !conf.ConsumerProtocol {
		return fence{}
	}
	return fence{hb: newHeartbeats(min(conf.SessionTimeout, brokerSessionTimeout), now)}
}

// wake is the channel a heartbeat answer nudges; nil (never ready) without a
// fence.
func (f *fence) wake() <-chan struct{} {
	if f.hb == nil {
		return nil
	}
	return f.hb.wake
}

// fenceHolds reports whether hand-outs must wait at now, and logs each
// change.
func (o *owner) fenceHolds(now time.Time) bool {
	f := &o.fence
	if f.hb == nil {
		return false
	}
	hold := f.hb.holds(now)
	switch {
	case hold && !f.holding:
		// The silence may be over already (the hook saw the answer that
		// ended it), so the message names the limit, not the silence.
		o.log.Warnf("kafka_watermark: no heartbeat answered for more than %s (%v): holding back records until the group coordinator answers again, since the broker may have given this member's partitions to another",
			FieldSessionTimeout, f.hb.timeout)
	case !hold && f.holding:
		o.log.Infof("kafka_watermark: the group coordinator answers heartbeats again: handing out records")
	}
	f.holding = hold
	return hold
}
