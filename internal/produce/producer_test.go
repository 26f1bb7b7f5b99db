package produce

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newCluster starts a kfake cluster holding topics of the given partitions.
func newCluster(t *testing.T, partitions int32, topics ...string) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topics...))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// newProducer makes a client for c with conf's options, closed at cleanup.
// A missing topic is looked up again every 100ms, not kgo's 5s, so that a
// record to it fails after kgo's 4 tries within a second.
func newProducer(t *testing.T, c *kfake.Cluster, conf Config) *Producer {
	t.Helper()
	conn := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.MetadataMinAge(100 * time.Millisecond)}
	cl, p, err := NewClient(conn, conf)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return p
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A keyed record lands where the Java client puts it. The expected
// partitions come from Kafka's own golden murmur2 values
// (clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java,
// testMurmur2; the same vectors kgo's partitioner_test.go checks its murmur2
// against) and Java's placement of a keyed record,
// Utils.toPositive(Utils.murmur2(key)) % numPartitions
// (BuiltInPartitioner.partitionForKey): the sign bit masked off, then
// modulo. Worked out by hand for 8 partitions: "21" -973932308 ->
// 1173551340 % 8 = 4; "foobar" -790332482 -> 1357151166 % 8 = 6; "abc"
// 479470107 % 8 = 3; "a-little-bit-long-string" -985981536 -> 1161502112 %
// 8 = 0.
func TestMurmur2PlacesKeysAsJava(t *testing.T) {
	javaMurmur2 := map[string]int32{
		"21":                         -973932308,
		"foobar":                     -790332482,
		"a-little-bit-long-string":   -985981536,
		"a-little-bit-longer-string": -1486304829,
		"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
		"abc": 479470107,
	}
	javaPartition := func(key string, n int32) int32 { return (javaMurmur2[key] & 0x7fffffff) % n }
	for key, want := range map[string]int32{"21": 4, "foobar": 6, "abc": 3, "a-little-bit-long-string": 0} {
		require.Equal(t, want, javaPartition(key, 8), "worked example for %q", key)
	}
	// kgo's partitioner, asked directly, agrees.
	kp := kgo.StickyKeyPartitioner(nil).ForTopic("keyed")
	for key := range javaMurmur2 {
		for _, n := range []int32{8, 3, 1} {
			require.Equal(t, javaPartition(key, n), int32(kp.Partition(&kgo.Record{Key: []byte(key)}, int(n))), "kgo's partition of %q of %d", key, n)
		}
	}

	for _, n := range []int32{8, 3} {
		c := newCluster(t, n, "keyed")
		for _, conf := range []Config{{}, {Partitioner: PartitionerMurmur2}} {
			p := newProducer(t, c, conf)
			var rs []*kgo.Record
			for key := range javaMurmur2 {
				for range 3 { // the same key thrice: the same partition each time
					rs = append(rs, &kgo.Record{Topic: "keyed", Key: []byte(key), Value: []byte("v")})
				}
			}
			require.NoError(t, FirstErr(p.ProduceAll(testContext(t), rs)))
			for _, r := range rs {
				require.Equal(t, javaPartition(string(r.Key), n), r.Partition, "key %q of %d partitions (partitioner %q)", r.Key, n, conf.Partitioner)
			}
		}
	}
}

// BatchSize is kgo's measure at its strictest: a record whose own batch is
// exactly the limit is produced, by ProduceAll and by kgo itself on a
// fresh client (which does not know the broker's produce version yet, and
// counts the most); one byte more is refused by ProduceAll before it is
// sent, naming the size and the limit.
func TestTooLargeAtTheLimit(t *testing.T) {
	const limit = 2048
	c := newCluster(t, 1, "t")
	conf := Config{MaxMessageBytes: limit, LimitName: "max_message_bytes"}
	record := func(size int64) *kgo.Record {
		r := &kgo.Record{Topic: "t", Key: []byte("k"), Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}}
		r.Value = bytes.Repeat([]byte("x"), int(size-BatchSize(r)))
		for BatchSize(r) > size { // varint widths grow with the value
			r.Value = r.Value[1:]
		}
		require.Equal(t, size, BatchSize(r))
		return r
	}
	ctx := testContext(t)

	fresh := newProducer(t, c, conf)
	require.NoError(t, fresh.Client().ProduceSync(ctx, record(limit)).FirstErr(), "kgo's first produce counts the most, and takes it")

	errs := newProducer(t, c, conf).ProduceAll(ctx, []*kgo.Record{record(limit), record(limit + 1), record(100)})
	require.NoError(t, errs[0], "a record of exactly the limit")
	require.NoError(t, errs[2], "the other records of the call are produced")
	var tl *TooLargeError
	require.ErrorAs(t, errs[1], &tl)
	require.Nil(t, tl.Refusal, "refused before it was sent")
	require.ErrorIs(t, errs[1], kerr.MessageTooLarge)
	require.Equal(t, `record of 2049 bytes for topic "t" (its size as a record batch of its own) is larger than max_message_bytes (2048 bytes): not produced`, errs[1].Error())
}

// A record within the producer's limit that the broker refuses as too large
// (the topic's max.message.bytes is lower) is reported with its size and
// the limits, wrapping the broker's answer.
func TestTooLargeForTheTopic(t *testing.T) {
	c := newCluster(t, 1, "t")
	adm := kadm.NewClient(newProducer(t, c, Config{}).Client())
	_, err := adm.CreateTopic(testContext(t), 1, 1, map[string]*string{"max.message.bytes": kadm.StringPtr("1000")}, "small")
	require.NoError(t, err)

	// Uncompressed: snappy, kgo's default, would shrink the record below
	// the topic's limit.
	p := newProducer(t, c, Config{LimitName: "max_message_bytes", Compression: CompressionNone})
	big := &kgo.Record{Topic: "small", Value: bytes.Repeat([]byte("x"), 1500)}
	errs := p.ProduceAll(testContext(t), []*kgo.Record{big, {Topic: "t", Value: []byte("fits")}})
	require.NoError(t, errs[1])
	var tl *TooLargeError
	require.ErrorAs(t, errs[0], &tl)
	require.Error(t, tl.Refusal, "the broker's refusal")
	require.ErrorIs(t, errs[0], kerr.MessageTooLarge)
	require.Contains(t, errs[0].Error(), `record of 1574 bytes for topic "small" refused as too large, though within max_message_bytes (1000012 bytes): the topic's max.message.bytes`)
}

// A record to a topic that does not exist fails alone: the others of the
// call are acknowledged.
func TestUnknownTopicFailsItsRecordOnly(t *testing.T) {
	c := newCluster(t, 2, "t")
	p := newProducer(t, c, Config{})
	rs := []*kgo.Record{{Topic: "t", Value: []byte("a")}, {Topic: "missing", Value: []byte("b")}, {Topic: "t", Value: []byte("c")}}
	errs := p.ProduceAll(testContext(t), rs)
	require.NoError(t, errs[0])
	require.NoError(t, errs[2])
	require.ErrorIs(t, errs[1], kerr.UnknownTopicOrPartition)
}

// A record still unanswered when the caller's context ends is reported
// with the context's error, at once, while kgo still waits for the broker.
func TestUnansweredAtTheEnd(t *testing.T) {
	c := newCluster(t, 1, "t")
	p := newProducer(t, c, Config{})
	require.NoError(t, FirstErr(p.ProduceAll(testContext(t), []*kgo.Record{{Topic: "t", Value: []byte("warm")}})))

	release := make(chan struct{})
	held := make(chan struct{}, 1)
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		select {
		case held <- struct{}{}:
			c.SleepControl(func() { <-release })
		default:
		}
		return nil, nil, false
	})
	ctx, cancel := context.WithCancel(testContext(t))
	go func() { <-held; cancel() }()
	errs := p.ProduceAll(ctx, []*kgo.Record{{Topic: "t", Value: []byte("held")}})
	require.ErrorIs(t, errs[0], context.Canceled)
	require.True(t, strings.HasPrefix(errs[0].Error(), "not acknowledged before the write ended (the record may still be written)"), errs[0].Error())
	close(release)
}

func TestFirstErr(t *testing.T) {
	e := errors.New("e")
	require.NoError(t, FirstErr(nil))
	require.NoError(t, FirstErr([]error{nil, nil}))
	require.Equal(t, e, FirstErr([]error{nil, e, errors.New("later")}))
}
