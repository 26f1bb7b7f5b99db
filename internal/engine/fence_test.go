package engine

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The chaos harness found this (3 brokers, group_protocol consumer, seed 25):
// a member cut off from the brokers for 9.9 s, longer than the 6 s
// session_timeout it was configured with, kept its partitions (kgo retries a
// KIP-848 heartbeat in place), fetched again from its position when the cut
// ended and delivered 752 records that the partitions' new owner had
// delivered 10 ms before; only then did a heartbeat answer tell kgo the
// member had been fenced. The member now holds hand-outs back from the
// moment no heartbeat has been answered for session_timeout until the
// second answer after that.
func TestFenceHoldsHandOutsWhileHeartbeatsGoUnanswered(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "group_protocol: consumer\nsession_timeout: 6s\nbatch_max_records: 2\n"), m)
		hb := h.o.fence.hb
		require.NotNil(t, hb, "a consumer-protocol member has a fence")
		h.assign(tp0)
		h.fetch(tp0, 10, records(tp0, 0, 10)...)
		first := h.read()

		// Heartbeats answered every 2 s: hand-outs go on.
		for range 4 {
			time.Sleep(2 * time.Second)
			hb.answered(time.Now())
		}
		second := h.read()

		// The cut: 6 s without an answer is not yet longer than the timeout...
		time.Sleep(6 * time.Second)
		third := h.read()
		// ...a moment more is.
		time.Sleep(time.Millisecond)
		_, ok := h.tryRead()
		require.False(t, ok, "no hand-out once no heartbeat was answered for session_timeout")

		// Acks still count while the fence holds: they only end batches
		// this member handed out before it.
		h.ack(first, nil)
		h.ack(second, nil)
		h.state(func(o *owner) {
			wm, ok := o.parts[tp0].led.watermark()
			require.True(t, ok)
			require.Equal(t, int64(4), wm, "acks advance the watermark behind the fence")
		})

		// The first answer may be "you were fenced": still held.
		hb.answered(time.Now())
		_, ok = h.tryRead()
		require.False(t, ok, "the first answer after the fence does not lift it")

		// The second does: the rest goes out, in order.
		hb.answered(time.Now())
		fourth := h.read()
		require.Equal(t, int64(6), fourth.raw.records[0].Offset, "hand-outs resume where they stopped")
		h.ack(third, nil)
		h.ack(fourth, nil)
	})
}

// The answer that ends a fence can be the broker saying the member was
// fenced: kgo then calls OnPartitionsLost before it heartbeats again, so
// nothing of the lost epoch may go out between that answer and the loss, and
// the next assignment hands out again after one more answer.
func TestFenceLiftsOnlyAfterTheLossOfAFencedMember(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "group_protocol: consumer\nsession_timeout: 6s\nbatch_max_records: 2\n"), m)
		hb := h.o.fence.hb
		h.assign(tp0)
		h.fetch(tp0, 10, records(tp0, 0, 10)...)
		handed := h.read()
		time.Sleep(7 * time.Second)
		_, ok := h.tryRead()
		require.False(t, ok, "held")

		hb.answered(time.Now()) // FENCED_MEMBER_EPOCH
		_, ok = h.tryRead()
		require.False(t, ok, "held between the fenced answer and the loss")
		lost := revokeReq{tps: []topicPartition{tp0}, lost: true, reply: make(chan commitSet, 1)}
		h.o.inbox.revokeCh <- lost
		require.True(t, (<-lost.reply).empty(), "a loss commits nothing")
		h.ack(handed, nil) // late: its epoch ended

		hb.answered(time.Now()) // the rejoin, with the partition back
		h.assign(tp0)
		h.fetch(tp0, 10, records(tp0, 0, 10)...)
		b := h.read()
		require.Equal(t, int64(0), b.raw.records[0].Offset, "the new epoch starts from the last commit")
		require.Zero(t, len(h.cl.committed(tp0)), "nothing was committed for the lost epoch")
	})
}

// The owner looks at the fence only when it has something to hand out, and a
// cut-off member fetches nothing: the first thing it may see after the cut is
// the answer that ended it, which may be "you were fenced", and then the
// records fetched from its old position. The answer itself must engage the
// fence.
func TestFenceEngagesAtTheAnswerThatEndsASilence(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "group_protocol: consumer\nsession_timeout: 6s\nbatch_max_records: 2\n"), m)
		hb := h.o.fence.hb
		h.assign(tp0)
		hb.answered(time.Now())
		time.Sleep(7 * time.Second) // the cut: nothing fetched, nothing to hand out
		hb.answered(time.Now())     // it ends
		h.fetch(tp0, 4, records(tp0, 0, 4)...)
		_, ok := h.tryRead()
		require.False(t, ok, "held by the answer that ended a silence longer than session_timeout")
		hb.answered(time.Now())
		h.read()
	})
}

// Under the classic protocol kgo retries a heartbeat for session_timeout at
// most and then gives the partitions up itself: no fence, and silence alone
// holds nothing back (a long JoinGroup sends no heartbeat at all).
func TestClassicMemberHasNoFence(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "session_timeout: 6s\nbatch_max_records: 2\n"), m)
		require.Nil(t, h.o.fence.hb)
		h.assign(tp0)
		h.fetch(tp0, 4, records(tp0, 0, 4)...)
		time.Sleep(time.Minute)
		h.read()
	})
}

func TestFenceTimeoutIsAtMostTheBrokerDefault(t *testing.T) {
	for _, c := range []struct {
		yaml string
		want time.Duration
	}{
		{"group_protocol: consumer\nsession_timeout: 6s\n", 6 * time.Second},
		{"group_protocol: consumer\n", 45 * time.Second}, // session_timeout's default is 1m
	} {
		f := newFence(testConfig(t, c.yaml), time.Now())
		require.Equal(t, c.want, f.hb.timeout, "fence timeout of %q", c.yaml)
	}
}

// Only an answered ConsumerGroupHeartbeat is an answer: not a request that
// failed on the wire, nor another API's response.
func TestHeartbeatsCountAnsweredConsumerGroupHeartbeats(t *testing.T) {
	hb := newHeartbeats(time.Minute, time.Unix(0, 0))
	cut := errors.New("i/o timeout")
	hb.OnBrokerE2E(kgo.BrokerMetadata{}, keyConsumerGroupHeartbeat, kgo.BrokerE2E{ReadErr: cut})
	hb.OnBrokerE2E(kgo.BrokerMetadata{}, keyConsumerGroupHeartbeat, kgo.BrokerE2E{WriteErr: cut})
	hb.OnBrokerE2E(kgo.BrokerMetadata{}, 12, kgo.BrokerE2E{}) // classic Heartbeat
	hb.OnBrokerE2E(kgo.BrokerMetadata{}, 1, kgo.BrokerE2E{})  // Fetch
	require.Zero(t, hb.answers.Load())
	require.Equal(t, int64(0), hb.last.Load())
	hb.OnBrokerE2E(kgo.BrokerMetadata{}, keyConsumerGroupHeartbeat, kgo.BrokerE2E{})
	require.Equal(t, uint64(1), hb.answers.Load())
	require.NotZero(t, hb.last.Load())
	select {
	case <-hb.wake:
	default:
		t.Fatal("an answer wakes the owner")
	}
}

// The answer that ends a silence raises the fence before it says the
// silence is over: an owner reading the fence at any point while the answer
// is recorded (after each of answered's writes) sees it hold. Before, last
// moved first, and an owner reading between the two saw a fresh answer,
// nothing to engage the fence for, and the old lift point: it handed out.
func TestFenceHoldsWhileTheAnswerThatEndsASilenceIsRecorded(t *testing.T) {
	t0 := time.Unix(1000, 0)
	hb := newHeartbeats(6*time.Second, t0)
	at := t0.Add(7 * time.Second)
	steps := 0
	hb.observe = func() {
		steps++
		require.True(t, hb.holds(at), "the fence holds after step %d of recording the answer", steps)
	}
	hb.answered(at)
	require.Equal(t, 2, steps)
	require.True(t, hb.holds(at), "and until the next answer")
	hb.answered(at.Add(time.Second))
	require.False(t, hb.holds(at.Add(time.Second)))
}
