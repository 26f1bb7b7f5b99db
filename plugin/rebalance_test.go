package plugin

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/watermark-connect/watermark-connect/internal/engine"
	"github.com/watermark-connect/watermark-connect/internal/memmetrics"
)

// A second member joins while the first holds batches in flight: the first
// drains what it can within drain_timeout and commits it, acks that arrive
// after the revoke are ignored, and when the second member leaves, the
// partitions return to the first under a new epoch that the old acks cannot
// touch. The audit checks every commit on the way.
func TestRevokeDrainLateAcksAndReassign(t *testing.T) {
	for _, protocol := range []string{protocolClassic, protocolConsumer} {
		t.Run(protocol, func(t *testing.T) {
			const (
				topic      = "reb"
				partitions = 4
				n          = 2000
			)
			c, s := newAuditedCluster(t, partitions, topic, n)

			// Member A holds the first batch of every partition until
			// release opens: whichever partitions the join takes from it,
			// each has a batch held past the drain timeout, whose ack is
			// late. (Holding the first 6 batches, as this test once did,
			// left no late ack when they all came from partitions A kept.)
			release := newGate(t)
			var mu sync.Mutex
			heldOf := map[int32]bool{}
			held := 0
			gA := memmetrics.New()
			decideA := func(b []rec) (time.Duration, error) {
				mu.Lock()
				hold := len(b) > 0 && !heldOf[b[0].partition]
				if hold {
					heldOf[b[0].partition] = true
					held++
				}
				mu.Unlock()
				if hold {
					release.wait()
				}
				return 0, nil
			}
			extra := fmt.Sprintf("  batch_max_records: 20\n  drain_timeout: 500ms\n  group_protocol: %s\n", protocol)
			stA := startStream(t, testEnvWith(t, s, 8, decideA, gA), inputYAML(c.addr, topic, "reb", extra), 2)
			require.Eventually(t, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return held == partitions
			}, 20*time.Second, 10*time.Millisecond, "member A to hold a batch of every partition")

			// Member B joins: A revokes some partitions with batches held
			// past the drain timeout.
			var bBatches int
			decideB := func([]rec) (time.Duration, error) {
				mu.Lock()
				defer mu.Unlock()
				bBatches++
				return 0, nil
			}
			stB := startStream(t, testEnvWith(t, s, 8, decideB, memmetrics.New()), inputYAML(c.addr, topic, "reb", extra), 1)
			// A delivered everything but the held batches, and its revoke
			// committed that in its delivered ranges: B delivers only the
			// batches A held.
			require.Eventually(t, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return bBatches >= 1
			}, 30*time.Second, 10*time.Millisecond, "member B to consume")

			// B leaves: its partitions return to A under a new epoch.
			stB.stop(t)
			release.open()

			ends := c.endOffsets(t, topic, partitions)
			waitCommitted(t, c, "reb", topic, ends)
			stA.stop(t)
			distinct, dups := s.counts()
			require.Equal(t, n, distinct, "every record delivered")
			var late int64
			for p := range int32(partitions) {
				late += gA.Get(engine.MetricLateAcks, topic, p)
			}
			require.Positive(t, late, "acks of batches held across the revoke are counted late")
			t.Logf("protocol %s: %d duplicate deliveries, %d late acks", protocol, dups, late)
		})
	}
}

// Commit responses carry per-partition errors with a nil request error, and
// connections drop: nothing is lost and nothing is committed past an
// unacknowledged batch; the watermark is committed once the broker accepts.
func TestInjectedCommitErrors(t *testing.T) {
	const (
		topic      = "cerr"
		partitions = 3
	)
	c, s := newAuditedCluster(t, partitions, topic, 900)
	var mu sync.Mutex
	injected := 0
	c.ControlKey(int16(kmsg.OffsetCommit), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		injected++
		req := r.(*kmsg.OffsetCommitRequest)
		switch injected {
		case 1, 2:
			return errorResponse(req, kerr.RebalanceInProgress.Code), nil, true
		case 3:
			return errorResponse(req, kerr.IllegalGeneration.Code), nil, true
		case 4:
			return nil, fmt.Errorf("injected: drop the connection"), true
		}
		return nil, nil, false
	})
	st := startStream(t, testEnv(t, s, 8), inputYAML(c.addr, topic, "cerr", "  batch_max_records: 30\n"), 2)
	ends := c.endOffsets(t, topic, partitions)
	waitCommitted(t, c, "cerr", topic, ends)
	st.stop(t)
	var errs int64
	for p := range int32(partitions) {
		errs += s.gauges.Get(engine.MetricCommitErrors, topic, p)
	}
	require.Positive(t, errs, "commit errors are counted")
	distinct, _ := s.counts()
	require.Equal(t, 900, distinct)
}

// errorResponse answers every partition of req with code.
func errorResponse(req *kmsg.OffsetCommitRequest, code int16) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	resp.Version = req.Version
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// kgo keeps a partition paused across a revoke. A partition paused at its
// pending limit (here: stalled) that moves to another member and comes back
// must be fetched again by its new epoch.
func TestPausedPartitionFetchedAfterComingBack(t *testing.T) {
	const (
		topic      = "back"
		partitions = 2
	)
	c, s := newAuditedCluster(t, partitions, topic, 200)
	var mu sync.Mutex
	failed := map[int32]bool{}
	failFirst := func(b []rec) (time.Duration, error) {
		mu.Lock()
		defer mu.Unlock()
		if b[0].offset == 0 && !failed[b[0].partition] {
			failed[b[0].partition] = true
			return 0, fmt.Errorf("first delivery of %d/0 fails", b[0].partition)
		}
		return 0, nil
	}
	extra := "  batch_max_records: 10\n  max_pending_batches: 2\n  drain_timeout: 500ms\n"
	gA := memmetrics.New()
	stA := startStream(t, testEnvWith(t, s, 4, failFirst, gA), inputYAML(c.addr, topic, "back", extra), 1)
	require.Eventually(t, func() bool {
		return gA.Get(engine.MetricPaused, topic, 0) == 1 && gA.Get(engine.MetricPaused, topic, 1) == 1
	}, 20*time.Second, 10*time.Millisecond, "both partitions stalled and paused on A")

	// B takes one partition, consumes it to the end, and leaves.
	stB := startStream(t, testEnvWith(t, s, 4, nil, memmetrics.New()), inputYAML(c.addr, topic, "back", extra), 1)
	ends := c.endOffsets(t, topic, partitions)
	require.Eventually(t, func() bool {
		return c.lastCommit("back", topic, 0) == ends[0] || c.lastCommit("back", topic, 1) == ends[1]
	}, 30*time.Second, 10*time.Millisecond, "B to commit one partition to the end")
	stB.stop(t)

	// New records on both partitions: the one that came back to A must be
	// fetched and committed to its new end.
	c.produce(t, topic, partitions, 20)
	ends = c.endOffsets(t, topic, partitions)
	require.Eventually(t, func() bool {
		return c.lastCommit("back", topic, 0) == ends[0] || c.lastCommit("back", topic, 1) == ends[1]
	}, 30*time.Second, 10*time.Millisecond, "the returned partition committed to its new end")
	stA.stop(t)
}

// Batches acknowledged while a revoke drains are committed by the revoke
// itself, before the partition moves: the new owner re-delivers nothing.
func TestRevokeCommitsDrainedBatches(t *testing.T) {
	const (
		topic      = "drain"
		partitions = 4
		n          = 400
	)
	c, s := newAuditedCluster(t, partitions, topic, n)

	release := newGate(t)
	var mu sync.Mutex
	held, bStarted := 0, false
	holdAll := func(b []rec) (time.Duration, error) {
		mu.Lock()
		held++
		mu.Unlock()
		release.wait()
		return 0, nil
	}
	// The rebalance B causes reaches A as a SyncGroup: release A's batches
	// then, so their acks arrive while A drains the revoked partitions.
	c.ControlKey(int16(kmsg.SyncGroup), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		if bStarted {
			release.open()
		}
		return nil, nil, false
	})
	extra := "  batch_max_records: 10\n  drain_timeout: 4s\n  commit_period: 1h\n"
	stA := startStream(t, testEnvWith(t, s, 8, holdAll, memmetrics.New()), inputYAML(c.addr, topic, "drain", extra), 2)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return held == 8 }, 20*time.Second, 10*time.Millisecond, "A to hold 8 batches")
	mu.Lock()
	bStarted = true
	mu.Unlock()
	stB := startStream(t, testEnvWith(t, s, 8, nil, memmetrics.New()), inputYAML(c.addr, topic, "drain", extra), 1)
	require.Eventually(t, func() bool { d, _ := s.counts(); return d == n }, 30*time.Second, 10*time.Millisecond, "every record delivered")
	stB.stop(t)
	stA.stop(t)
	ends := c.endOffsets(t, topic, partitions)
	for p, end := range ends {
		require.Equal(t, end, c.lastCommit("drain", topic, p), "partition %d committed to the end", p)
	}
	_, dups := s.counts()
	require.Zero(t, dups, "no batch acknowledged during the drain is delivered again")
}
