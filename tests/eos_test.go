package tests

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// eosYAML is a Kafka to Kafka pipeline through the binary: 16 output batches
// in flight, each input batch split in three, a random 0-5 ms of work per
// message, and a processor that fails about one message in 3,000, which
// reject_errored nacks (after other parts of its batch may have been
// written). With exactlyOnce the output is bound to the input's group.
func eosYAML(brokers, src, dst, group, txnID, proto string, exactlyOnce bool) string {
	in, out := "", ""
	if exactlyOnce {
		in = fmt.Sprintf("    exactly_once: true\n    transactional_id: %q\n    transaction_timeout: 20s\n", txnID)
		out = fmt.Sprintf("      exactly_once: { consumer_group: %q }\n", group)
	}
	return fmt.Sprintf(`http:
  enabled: false
logger:
  level: INFO
  format: logfmt
input:
  kafka_watermark:
    seed_brokers: [ %[1]q ]
    topics: [ %[2]q ]
    consumer_group: %[3]q
    group_protocol: %[4]s
    commit_period: 500ms
    session_timeout: 6s
    heartbeat_interval: 500ms
    rebalance_timeout: 5s
    drain_timeout: 2s
    batch_max_records: 30
    stall_replay_after: 1s       # at least once: a failed batch is read again soon
%[6]spipeline:
  threads: 4
  processors:
    - split: { size: 10 }
    - sleep: { duration: '${! random_int(max: 5) }ms' }
    - mapping: |
        meta = @
        root = if random_int(max: 2999) == 0 { throw("flaky enrichment") } else { content() }
output:
  reject_errored:
    kafka_watermark:
      seed_brokers: [ %[1]q ]
      topic: %[5]q
      key: '${! @kafka_key }'
      max_in_flight: 16
      metadata: { include_patterns: [ '^kafka_(partition|offset)$' ] }
%[7]s`, brokers, src, group, proto, dst, in, out)
}

// readCommitted reads topic as a read_committed consumer until a poll of 3s
// brings nothing, and counts each record by its origin
// (kafka_partition/kafka_offset headers).
func (k *kafka) readCommitted(t *testing.T, topic string) map[string]int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(k.env.Brokers, ",")...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	require.NoError(t, err)
	defer cl.Close()
	seen := map[string]int{}
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		if len(fs.Records()) == 0 {
			return seen
		}
		for _, r := range fs.Records() {
			h := headers(r)
			seen[h["kafka_partition"]+"/"+h["kafka_offset"]]++
		}
	}
}

// duplicates is how many records beyond the first of each origin seen holds.
func duplicates(seen map[string]int) int {
	n := 0
	for _, times := range seen {
		n += times - 1
	}
	return n
}

// TestExactlyOnce on the real broker, under both group protocols: Kafka to
// Kafka with exactly_once through an out-of-order pipeline, while member A
// is killed with kill -9 and started again, member B joins (a rebalance),
// and B is paused with SIGSTOP past its session timeout and resumed (a
// zombie: the group has moved on, so its open transaction must be fenced,
// not committed). A read_committed reader of the output then finds every
// source record's output exactly once. The same faults without
// exactly_once (a kill -9) write duplicates, which the same reader counts:
// the check can see what exactly once prevents.
func TestExactlyOnce(t *testing.T) {
	env := needBroker(t)
	for _, proto := range []string{"classic", "consumer"} {
		t.Run(proto, func(t *testing.T) { testExactlyOnce(t, env, proto) })
	}
}

func testExactlyOnce(t *testing.T, env *brokerEnv, proto string) {
	k := newKafka(t, env)
	const parts, perPart = 4, 3000
	const total = parts * perPart
	sfx := suffix()
	src, dst, group := "wm-eos-src-"+sfx, "wm-eos-dst-"+sfx, "wm-eos-g-"+sfx
	k.createTopic(src, parts)
	k.createTopic(dst, parts)
	k.produce(src, parts, perPart, nil)
	end := k.endOffsets(src)
	committed := func() int64 {
		c, err := k.committed(testCtx(t, 10*time.Second), group, src)
		if err != nil {
			return -1
		}
		return sum(c)
	}
	waitFor := func(n int64, what string) {
		t.Helper()
		require.Eventually(t, func() bool { return committed() >= n }, 3*time.Minute, 50*time.Millisecond, what)
	}

	a := startProc(t, "A", eosYAML(env.Brokers, src, dst, group, "eos-A-"+sfx, proto, true))
	waitFor(total/8, "A commits an eighth of the records")
	a.kill()
	a = startProc(t, "A2", eosYAML(env.Brokers, src, dst, group, "eos-A-"+sfx, proto, true))
	waitFor(total/4, "A, restarted, commits a quarter")
	b := startProc(t, "B", eosYAML(env.Brokers, src, dst, group, "eos-B-"+sfx, proto, true))
	require.Eventually(t, func() bool { return len(b.grep("transaction")) > 0 && committed() >= total/2 },
		3*time.Minute, 50*time.Millisecond, "B joins, half the records committed")
	// A zombie: B stops past its session; the group gives its partitions
	// to A; B resumes and must not commit what it had open.
	require.NoError(t, b.cmd.Process.Signal(syscall.SIGSTOP))
	time.Sleep(9 * time.Second) // the fault itself: 6s session_timeout and then some
	require.NoError(t, b.cmd.Process.Signal(syscall.SIGCONT))
	k.waitCommitted(group, src, end, 3*time.Minute)
	a.stop(30 * time.Second)
	b.stop(30 * time.Second)

	seen := k.readCommitted(t, dst)
	assert.Len(t, seen, total, "every source record's output is in %s", dst)
	dups := duplicates(seen)
	assert.Zero(t, dups, "no output twice for a read_committed reader")
	aborts := 0
	for _, p := range []*proc{a, b} {
		aborts += len(p.grep("exactly_once: transaction aborted"))
	}
	figure(t, "exactly once (%s): %d records, kill -9 of A, B joined, B paused %ds past its session: %d written again to read_committed readers, %d transactions aborted (A2 and B)",
		proto, total, 9, dups, aborts)

	// The control: the same pipeline at least once, killed the same way.
	csrc, cdst, cgroup := src, "wm-eos-ctl-"+sfx, "wm-eos-ctl-g-"+sfx
	k.createTopic(cdst, parts)
	c := startProc(t, "C", eosYAML(env.Brokers, csrc, cdst, cgroup, "", proto, false))
	require.Eventually(t, func() bool {
		got, err := k.committed(testCtx(t, 10*time.Second), cgroup, csrc)
		return err == nil && sum(got) >= total/4
	}, 3*time.Minute, 20*time.Millisecond, "the control commits a quarter")
	c.kill()
	c = startProc(t, "C2", eosYAML(env.Brokers, csrc, cdst, cgroup, "", proto, false))
	k.waitCommitted(cgroup, csrc, end, 3*time.Minute)
	c.stop(30 * time.Second)
	ctl := k.readCommitted(t, cdst)
	assert.Len(t, ctl, total, "the control writes every record too")
	figure(t, "the same without exactly_once (%s), one kill -9: %d records written twice or more", proto, duplicates(ctl))
	assert.Positive(t, duplicates(ctl), "at least once duplicates what a kill -9 cut short: the reader sees duplicates when there are some")
}
