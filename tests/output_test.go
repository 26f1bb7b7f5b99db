package tests

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestOutputToKafka: Kafka to Kafka through the binary, the kafka_watermark
// input into the kafka_watermark output, killed with kill -9 once a quarter
// of the records is committed, and started again. One record is routed to a topic whose max.message.bytes is
// below its size: the real broker refuses it, the output fails only its
// message with its size and the limits, and the input retries only it, so
// its partition's commit never passes it. At the end every other record of
// the source is in the destination at least once (at-least-once across the
// kill; the duplicates are printed as a figure), each on the partition
// murmur2 gives its key, and the commits of the other partitions reach
// their end.
func TestOutputToKafka(t *testing.T) {
	env := needBroker(t)
	k := newKafka(t, env)
	const parts, perPart = 4, 2000
	const bad, badOff = int32(1), int64(100)
	src, dst, small, group := "wm-out-src-"+suffix(), "wm-out-dst-"+suffix(), "wm-out-small-"+suffix(), "wm-out-g-"+suffix()
	k.createTopic(src, parts)
	k.createTopic(dst, parts)
	ctx := testCtx(t, 30*time.Second)
	resp, err := k.adm.CreateTopic(ctx, 1, 1, map[string]*string{"max.message.bytes": kadm.StringPtr("1500")}, small)
	if err == nil {
		err = resp.Err
	}
	require.NoError(t, err, "create %s", small)
	k.produce(src, parts, perPart, nil)
	end := k.endOffsets(src)

	yaml := fmt.Sprintf(`http:
  enabled: false
logger:
  level: INFO
  format: logfmt
input:
  kafka_watermark:
    seed_brokers: [ %[1]q ]
    topics: [ %[2]q ]
    consumer_group: %[3]q
    commit_period: 200ms
    session_timeout: 6s          # the restart waits for the killed member's session
    heartbeat_interval: 500ms
    rebalance_timeout: 5s
    drain_timeout: 2s
    batch_max_records: 100
    nack_retry: { max_retries: -1, initial_backoff: 100ms, max_backoff: 1s }
pipeline:
  processors:
    - mapping: |
        meta = @
        meta dest = if @kafka_partition == %[4]d && @kafka_offset == %[5]d { %[6]q } else { %[7]q }
        root = if @kafka_partition == %[4]d && @kafka_offset == %[5]d { "x".repeat(3000) } else { content() }
    - sleep: { duration: 1ms }
output:
  kafka_watermark:
    seed_brokers: [ %[1]q ]
    topic: '${! @dest }'
    key: '${! @kafka_key }'
    compression: none
    max_in_flight: 16
    metadata: { include_patterns: [ '^kafka_(partition|offset)$' ] }
`, env.Brokers, src, group, bad, badOff, small, dst)

	// A millisecond per record (two pipeline threads on two cores): about 4 s
	// for the lot, so the kill comes with writes and commits under way.
	total := int64(parts * perPart)
	p := startProc(t, "out-1", yaml)
	require.Eventually(t, func() bool {
		c, err := k.committed(testCtx(t, 10*time.Second), group, src)
		return err == nil && sum(c) >= total/4
	}, 2*time.Minute, 20*time.Millisecond, "a quarter of the records committed")
	killedAt := sum(k.endOffsets(dst))
	p.kill()

	p = startProc(t, "out-2", yaml)
	want := map[int32]int64{}
	for q, e := range end {
		if q != bad {
			want[q] = e
		}
	}
	require.Eventually(t, func() bool {
		c, err := k.committed(testCtx(t, 10*time.Second), group, src)
		return err == nil && equalOffsets(subset(c, want), want)
	}, 2*time.Minute, 100*time.Millisecond, "the partitions without the refused record commit to their end")
	require.Eventually(t, func() bool { return len(p.grep("refused as too large, though within max_message_bytes")) > 0 },
		time.Minute, 50*time.Millisecond, "the broker's refusal of the record, reported with its size")
	line := p.grep("refused as too large")[0].text
	assert.Contains(t, line, fmt.Sprintf(`for topic \"%s\"`, small), "the refusal names the topic")
	assert.Contains(t, line, "MESSAGE_TOO_LARGE", "and the broker's answer")

	// The refused record's partition: everything after it is written, the
	// commit stays at or before it.
	var dstRecs []*kgo.Record
	require.Eventually(t, func() bool {
		if dstRecs, err = k.readTopic(testCtx(t, 30*time.Second), dst); err != nil {
			return false
		}
		seen := map[string]bool{}
		for _, r := range dstRecs {
			h := headers(r)
			seen[h["kafka_partition"]+"/"+h["kafka_offset"]] = true
		}
		return int64(len(seen)) == total-1
	}, 2*time.Minute, 200*time.Millisecond, "every record but the refused one in %s", dst)
	c := k.mustCommitted(group, src)
	assert.LessOrEqual(t, c[bad], badOff, "partition %d's commit never passes the refused record", bad)
	p.stop(30 * time.Second)
	p.assertClean()

	origins := map[string]int{}
	kp := kgo.StickyKeyPartitioner(nil).ForTopic(dst)
	for _, r := range dstRecs {
		h := headers(r)
		q, _ := strconv.Atoi(h["kafka_partition"])
		o, _ := strconv.ParseInt(h["kafka_offset"], 10, 64)
		origins[h["kafka_partition"]+"/"+h["kafka_offset"]]++
		assert.Equal(t, value(int32(q), o), string(r.Value), "the value of %s/%d", h["kafka_partition"], o)
		assert.Equal(t, int32(kp.Partition(r, parts)), r.Partition, "record of key %q on its murmur2 partition", r.Key)
	}
	assert.NotContains(t, origins, fmt.Sprintf("%d/%d", bad, badOff), "the refused record is nowhere in %s", dst)
	dups := len(dstRecs) - len(origins)
	figure(t, "output kill -9 after a quarter of %d records committed (%d written): %d written again (%.1f%%)",
		total, killedAt, dups, 100*float64(dups)/float64(total))
	assert.Less(t, dups, int(total/2), "a kill replays what its last commit did not cover, not everything")
}

// subset returns the offsets of m for the partitions of keys.
func subset(m, keys map[int32]int64) map[int32]int64 {
	out := map[int32]int64{}
	for q := range keys {
		if o, ok := m[q]; ok {
			out[q] = o
		}
	}
	return out
}
