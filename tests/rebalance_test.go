package tests

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRebalance: three instances of the binary in one group, started one by
// one while the stream runs, the second stopped gracefully (SIGTERM) in the
// middle. Nothing is lost, the group's commits never go backwards nor pass
// unacknowledged records, and the duplicates are counted. Once per group
// protocol; for `consumer` the group must really be a KIP-848 group (franz-go
// falls back to classic silently).
func TestRebalance(t *testing.T) {
	for _, proto := range []string{"classic", "consumer"} {
		t.Run(proto, func(t *testing.T) { testRebalance(t, proto) })
	}
}

func testRebalance(t *testing.T, proto string) {
	env := needBroker(t)
	k := newKafka(t, env)
	const parts, perPart = 8, 20000
	const total = parts * perPart
	topic, group := "wm-rebal-"+proto+"-"+suffix(), "wm-rebal-g-"+proto+"-"+suffix()
	k.createTopic(topic, parts)
	k.produce(topic, parts, perPart, nil)
	end := k.endOffsets(topic)

	s := newSink(t, topic, parts, 0, 10*time.Millisecond)
	// Slow enough that the stream outlasts the membership changes; the
	// brakes come off once the second instance has left.
	s.setRate(5000)
	w := k.watchCommits(group, topic, s, 100*time.Millisecond)
	base := pipeline{brokers: env.Brokers, topic: topic, group: group, sinkURL: s.url(), protocol: proto,
		input: "commit_period: 500ms\nbatch_max_records: 100\nmax_pending_batches: 32\nsession_timeout: 10s\nheartbeat_interval: 500ms\n"}
	start := func(name string) *proc {
		c := base
		c.instance = name
		return startProc(t, name, c.yaml())
	}

	began := time.Now()
	a := start("A")
	s.waitTotal(t, total/10, 2*time.Minute)
	var gt string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got, err := k.groupType(group)
		if assert.NoError(c, err, "list groups") {
			assert.NotEmpty(c, got, "group type")
		}
		gt = got
	}, 30*time.Second, 50*time.Millisecond, "group %s to be listed", group)
	if gt != proto {
		t.Fatalf("group %s has type %q, want %q (group_protocol: %s)", group, gt, proto, proto)
	}
	t.Logf("group %s is a %q group", group, gt)

	b := start("B")
	require.Eventually(t, func() bool { return s.instanceCount("B") > 0 }, 90*time.Second, 50*time.Millisecond,
		"B to be assigned partitions and deliver")
	t.Logf("B delivering after %v", time.Since(began).Round(time.Millisecond))
	c := start("C")
	require.Eventually(t, func() bool { return s.instanceCount("C") > 0 }, 90*time.Second, 50*time.Millisecond,
		"C to be assigned partitions and deliver")
	t.Logf("C delivering after %v", time.Since(began).Round(time.Millisecond))
	// B must still be working when it is stopped: wait for its next batch.
	bNow := s.instanceCount("B")
	require.Eventually(t, func() bool { return s.instanceCount("B") > bNow }, 60*time.Second, 50*time.Millisecond,
		"B to deliver after C joined")

	atSignal, signalled := s.total(), time.Since(began)
	b.stop(60 * time.Second)
	atStop := s.total()
	t.Logf("B signalled after %v with %d of %d records acknowledged; gone after %v with %d", signalled.Round(time.Millisecond), atSignal, total,
		time.Since(began).Round(time.Millisecond), atStop)
	if atStop >= total {
		t.Errorf("B left after the whole stream was delivered: not mid-stream")
	}
	s.setRate(0)

	k.waitCommitted(group, topic, end, 3*time.Minute)
	s.waitIdle(t, 10*time.Second)
	took := time.Since(began)
	a.stop(60 * time.Second)
	c.stop(60 * time.Second)
	w.check(t)

	if gt, err := k.groupType(group); err != nil || gt != proto {
		t.Errorf("at the end, group %s has type %q (err %v), want %q", group, gt, err, proto)
	}
	dups := s.snapshot().coverage(t, end)
	t.Logf("%s", s.stats())
	by := fmt.Sprintf("A:%d,B:%d,C:%d", s.instanceCount("A"), s.instanceCount("B"), s.instanceCount("C"))
	figure(t, "test=rebalance protocol=%s records=%d rebalance_duplicates=%d by_instance=%s seconds=%.1f", proto, total, dups, by, took.Seconds())
}
