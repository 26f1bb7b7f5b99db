package plugin

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
	"github.com/watermark-connect/watermark-connect/internal/engine"
)

// watchDeadLetters marks, in the sink, the origin of every record produced
// to dlq as acknowledged, when the produce request reaches the broker: before
// the broker answers it, so before the input can commit past it. The audit
// then checks every commit against what reached the sink or the dead-letter
// topic, at the moment of the commit.
func (c *cluster) watchDeadLetters(t *testing.T, dlq string) {
	c.watchProduced(t, dlq, func(h map[string]string) rec {
		p, _ := strconv.Atoi(h["dead_letter_partition"])
		o, _ := strconv.ParseInt(h["dead_letter_offset"], 10, 64)
		return rec{topic: h["dead_letter_topic"], partition: int32(p), offset: o}
	})
}

// watchProduced marks, in the sink, the origin of every record produced to
// topic as acknowledged when its produce request reaches the broker; origin
// tells it from the record's headers.
func (c *cluster) watchProduced(t *testing.T, topic string, origin func(headers map[string]string) rec) {
	c.ControlKey(int16(kmsg.Produce), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		for _, rt := range r.(*kmsg.ProduceRequest).Topics {
			name := rt.Topic
			if name == "" {
				c.mu.Lock()
				name = c.names[rt.TopicID]
				c.mu.Unlock()
			}
			if name != topic {
				continue
			}
			for _, rp := range rt.Partitions {
				var origins []rec
				var b kmsg.RecordBatch
				if err := b.ReadFrom(rp.Records); err != nil {
					continue
				}
				raw, err := kgo.DefaultDecompressor().Decompress(b.Records, kgo.CompressionCodecType(b.Attributes&7))
				if err != nil {
					t.Errorf("produced batch: %v", err)
					continue
				}
				for range b.NumRecords {
					r := kmsg.NewRecord()
					if err := r.ReadFrom(raw); err != nil {
						t.Errorf("produced record: %v", err)
						break
					}
					n, amt := binary.Varint(raw)
					raw = raw[n+int64(amt):]
					h := map[string]string{}
					for _, hd := range r.Headers {
						h[hd.Key] = string(hd.Value)
					}
					origins = append(origins, origin(h))
				}
				c.sink.ack(origins)
			}
		}
		return nil, nil, false
	})
}

// deadLetter is one record read back from a dead-letter topic.
type deadLetter struct {
	key, value []byte
	ts         time.Time
	headers    map[string]string
}

// readDeadLetters reads topic, of partitions partitions, from its start to
// its end.
func (c *cluster) readDeadLetters(t *testing.T, topic string, partitions int32) []deadLetter {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	var end int64
	for _, e := range c.endOffsets(t, topic, partitions) {
		end += e
	}
	var out []deadLetter
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for int64(len(out)) < end {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "reading %s: %d of %d", topic, len(out), end)
		fs.EachRecord(func(r *kgo.Record) {
			h := map[string]string{}
			for _, hd := range r.Headers {
				h[hd.Key] = string(hd.Value)
			}
			out = append(out, deadLetter{key: r.Key, value: r.Value, ts: r.Timestamp, headers: h})
		})
	}
	return out
}

// A record the sink always refuses ends in the dead-letter topic after
// max_attempts deliveries, with its provenance, and its partition commits
// past it without a restart; every other record reaches the sink. With a
// batch error that names the poison records, only those are dead-lettered,
// also under ordering: key, where a hand-out is a set of records.
func TestDeadLetterTopicEndsAStall(t *testing.T) {
	for _, tc := range []struct {
		partial bool
		order   string
	}{{false, "none"}, {true, "none"}, {true, "key"}} {
		partial := tc.partial
		t.Run(fmt.Sprintf("batch error %v ordering %s", partial, tc.order), func(t *testing.T) {
			const (
				topic      = "dl"
				dlq        = "dl-dlq"
				partitions = 4
				n          = 400
			)
			c := newCluster(t, partitions, topic, dlq)
			c.produce(t, topic, partitions, n)
			s := newSink()
			c.sink = s
			c.watchDeadLetters(t, dlq)
			poison := func(r rec) bool { return r.partition == 1 && (r.offset == 42 || r.offset == 45) }
			var mu sync.Mutex
			attempts := map[int64][]int{}
			s.decide = func(b []rec) (time.Duration, error) {
				var failed partialFailure
				for i, r := range b {
					if poison(r) {
						if r.attemptOK != (r.attempt > 1) {
							t.Errorf("kafka_delivery_attempt of offset %d: %d, set %v: it is set from the second attempt on", r.offset, r.attempt, r.attemptOK)
						}
						mu.Lock()
						attempts[r.offset] = append(attempts[r.offset], r.attempt)
						mu.Unlock()
						failed = append(failed, i)
					}
				}
				switch {
				case len(failed) == 0:
					return 0, nil
				case partial:
					return 0, failed
				}
				return 0, errors.New("HTTP 400 Bad Request")
			}
			startStream(t, testEnv(t, s, 8), inputYAML(c.addr, topic, "dl", `
  batch_max_records: 10
  nack_retry: { max_retries: -1, initial_backoff: 10ms, max_backoff: 10ms }
  dead_letter: { topic: `+dlq+`, max_attempts: 3 }
  ordering: `+tc.order+`
`), 2)
			waitCommitted(t, c, "dl", topic, c.endOffsets(t, topic, partitions)) // the poisoned partition too

			mu.Lock()
			require.Equal(t, map[int64][]int{42: {1, 2, 3}, 45: {1, 2, 3}}, attempts, "kafka_delivery_attempt of each delivery of the poison records")
			mu.Unlock()
			letters := c.readDeadLetters(t, dlq, partitions)
			want := map[int64]bool{42: true, 45: true}
			if !partial {
				want = map[int64]bool{} // the whole batch holding them: offsets 40-49
				for o := int64(40); o < 50; o++ {
					want[o] = true
				}
			}
			got := map[int64]bool{}
			for _, l := range letters {
				h := l.headers
				o, err := strconv.ParseInt(h["dead_letter_offset"], 10, 64)
				require.NoError(t, err, h)
				got[o] = true
				require.Equal(t, topic, h["dead_letter_topic"])
				require.Equal(t, "1", h["dead_letter_partition"])
				require.Equal(t, "3", h["dead_letter_attempts"])
				require.Contains(t, h["dead_letter_error"], map[bool]string{false: "400", true: "failed"}[partial])
				require.NotEmpty(t, h["dead_letter_first_failed_ms"])
				require.Contains(t, h["dead_letter_member"], "@")
				require.NotContains(t, h, "dead_letter_share_group", "kafka_watermark's letters name no share group")
				require.Equal(t, strconv.FormatInt(l.ts.UnixMilli(), 10), h["dead_letter_timestamp_ms"], "stamped as the original")
				require.Equal(t, fmt.Sprintf("1-%d", o*partitions+1), string(l.value), "the original value")
				require.Equal(t, strconv.FormatInt(o*partitions+1, 10), string(l.key), "the original key")
			}
			require.Equal(t, want, got, "what was dead-lettered")
			require.Equal(t, int64(len(want)), s.gauges.Get(engine.MetricDeadLettered, topic, 1))
			d, err := commitmeta.DecodeCommit(c.lastMeta("dl", topic, 1))
			require.NoError(t, err)
			require.NotNil(t, d.DeadLetter, "the commits carry the dead-letter report")
			require.Equal(t, int64(len(want)), d.DeadLetter.Count)
			require.Empty(t, d.Attempts)
			distinct, _ := s.counts()
			require.Equal(t, n, distinct, "every record reached the sink at least once")
		})
	}
}

// An interpolated dead-letter topic is checked per record, when it is
// evaluated: one that names a topic the input consumes (its own, here) is a
// failed write, never a write into the input's topics.
func TestDeadLetterTopicConsumedAtTheWrite(t *testing.T) {
	for _, tc := range []struct{ yaml, topic string }{
		{validYAML + "dead_letter: { topic: '${! @kafka_topic }' }\n", "orders"},
		{"seed_brokers: [x:1]\nconsumer_group: g\nregexp_topics_include: [ \"ord.*\" ]\ndead_letter: { topic: '${! @kafka_topic }-dlq' }\n", "orders"},
	} {
		pc, err := ConfigSpec().ParseYAML(tc.yaml, nil)
		require.NoError(t, err)
		conf, err := parseConfig(pc)
		require.NoError(t, err, "an interpolated topic passes lint and validate")
		w := &deadLetterWriter{topic: conf.deadLetter, consumed: conf.topicMatcher()}
		_, err = w.destination(&kgo.Record{Topic: tc.topic, Value: []byte("v")})
		require.ErrorContains(t, err, "a topic this input consumes", tc.yaml)
		_, err = w.destination(&kgo.Record{Topic: "payments", Value: []byte("v")})
		require.NoError(t, err, "another origin names a topic the input does not consume")
	}
}

// A dead letter too large to produce (an origin record near Kafka's default
// max.message.bytes, with the provenance headers added) is a failed write
// that names its size and the limit, through the output's producer code;
// a dead letter that fits is written.
func TestDeadLetterTooLarge(t *testing.T) {
	c := newCluster(t, 1, "orders", "orders-dlq")
	pc, err := ConfigSpec().ParseYAML(fmt.Sprintf("seed_brokers: [ %q ]\ntopics: [ orders ]\nconsumer_group: g\ndead_letter: { topic: orders-dlq }\n", c.addr), nil)
	require.NoError(t, err)
	conf, err := parseConfig(pc)
	require.NoError(t, err)
	w, err := newDeadLetterWriter(conf)
	require.NoError(t, err)
	defer w.close()

	letter := func(size int) *engine.Letter {
		return &engine.Letter{
			Records:  []*kgo.Record{{Topic: "orders", Partition: 0, Offset: 7, Value: make([]byte, size), Timestamp: time.UnixMilli(1)}},
			Attempts: 5, Error: "http_500", FirstFailed: time.UnixMilli(2), Member: "m@h",
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	dest, err := w.Write(ctx, letter(1000))
	require.NoError(t, err)
	require.Equal(t, "orders-dlq", dest)

	_, err = w.Write(ctx, letter(1000012))
	require.ErrorContains(t, err, `producing to dead-letter topic orders-dlq: record of 1000288 bytes for topic "orders-dlq" (its size as a record batch of its own) is larger than Kafka's default max.message.bytes (1000012 bytes): not produced`)
}
