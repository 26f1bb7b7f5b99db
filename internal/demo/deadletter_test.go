package demo

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermark-connect/watermark-connect/internal/status"
)

// With --dead-letter-after N the sink rejects the failed batch on every
// delivery; each replay in place is one more attempt, and after the Nth
// the batch is in the dead-letter topic, read back from the broker with its
// provenance, and every partition commits to its log end without a
// restart. With N=1 and no replays the first failure is the last.
func TestDemoDeadLettersTheFailedBatch(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		after       int
		replayAfter time.Duration
	}{{3, 400 * time.Millisecond}, {1, neverReplay}} {
		t.Run(fmt.Sprintf("after %d", c.after), func(t *testing.T) {
			t.Parallel()
			r, out := runDemoT(t, demoOptions{Partitions: 4, Records: 2000, FailBatches: 1, Seed: 42, Duration: 40 * time.Second,
				FailFor: time.Millisecond, StallReplayAfter: c.replayAfter, DeadLetterAfter: c.after}, false)
			require.True(t, r.Settled, out)
			require.Len(t, r.Failures, 1, out)
			f := r.Failures[0]
			require.Len(t, f.Deliveries, c.after, "delivered max_attempts times, then dead-lettered:\n%s", out)
			for i, d := range f.Deliveries {
				assert.False(t, d.Accepted, "delivery %d: the sink rejects a poison batch on every delivery, --fail-for or not", i+1)
				assert.Equal(t, i+1, d.Attempt, "kafka_delivery_attempt of delivery %d", i+1)
			}
			assert.Equal(t, int64(c.after-1), r.Replays, "each attempt after the first is a replay in place")

			for _, v := range r.Parts {
				assert.Equal(t, v.LogEnd, v.Committed, "partition %d commits to the log end:\n%s", v.Partition, out)
				if v.Partition == f.Partition {
					assert.Equal(t, f.records(), v.DeadLettered, "kafka_watermark_dead_lettered_records_total")
					assert.True(t, v.healed())
				} else {
					assert.Zero(t, v.DeadLettered, "partition %d", v.Partition)
				}
			}

			require.NoError(t, r.DeadLetterErr)
			assert.Equal(t, "watermark-demo-dlq", r.DeadLetterTopic)
			require.Len(t, r.DeadLetters, int(f.records()), "the batch's records, asked of the broker:\n%s", out)
			for i, l := range r.DeadLetters {
				require.NoError(t, l.Err, "dead letter %d parses", i)
				v := l.Prov
				assert.Equal(t, "watermark-demo", v.Topic)
				assert.Equal(t, f.Partition, v.Partition)
				assert.Equal(t, f.First+int64(i), v.Offset, "one dead letter per record of the batch, in order")
				assert.Equal(t, c.after, v.Attempts)
				assert.Equal(t, f.Err, v.Error, "the sink's error, whole (errclass keeps it)")
				assert.False(t, v.FirstFailed.Before(r.Began), "first failed %v, the demo began %v", v.FirstFailed, r.Began)
				assert.NotEmpty(t, v.Member)
			}
			require.NotNil(t, r.Story.final)
			assert.Equal(t, status.ExitHealthy, r.Story.final.Exit, r.Story.final.Text)

			u := unwrapped(out)
			assert.Contains(t, out, fmt.Sprintf("sink fails 1 batch(es) on every delivery, dead-lettered to watermark-demo-dlq after %d attempt(s)", c.after))
			for k := 1; k <= c.after; k++ {
				assert.Contains(t, out, fmt.Sprintf("the sink rejected batch %d-%d, delivery attempt %d of %d", f.First, f.Last, k, c.after))
			}
			assert.Contains(t, out, fmt.Sprintf("%d record(s) of batch %d-%d written to the dead-letter topic watermark-demo-dlq after %d attempts",
				f.records(), f.First, f.Last, c.after))
			assert.Contains(t, out, fmt.Sprintf("the commit moved past the dead-lettered batch %d-%d", f.First, f.Last))
			assert.Contains(t, out, fmt.Sprintf("dead-lettered records:      %d to watermark-demo-dlq (dead_letter.max_attempts %d): watermark-demo/%d %d-%d",
				f.records(), c.after, f.Partition, f.First, f.Last))
			assert.Contains(t, out, fmt.Sprintf("batch %d-%d dead-lettered after %d attempt(s)", f.First, f.Last, c.after))
			assert.Contains(t, out, fmt.Sprintf("watermark-demo/%d offsets %d-%d: %d record(s), each after %d attempt(s)",
				f.Partition, f.First, f.Last, f.records(), c.after))
			assert.Contains(t, out, fmt.Sprintf("dead_letter_topic=watermark-demo dead_letter_partition=%d dead_letter_offset=%d", f.Partition, f.First))
			assert.Contains(t, out, fmt.Sprintf("dead_letter_attempts=%d dead_letter_first_failed_ms=", c.after))
			assert.Contains(t, out, fmt.Sprintf("dead_letter_error=%q", f.Err))
			assert.Contains(t, u, "once the broker acknowledged the write, they counted as delivered")
			assert.Contains(t, u, "the partition healed without a restart")
			assert.Contains(t, u, "Delivered or dead-lettered, never neither")
		})
	}
}
