package deadletter

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

var (
	testTime   = time.Date(2026, 3, 1, 12, 0, 0, 123_000_000, time.UTC)
	testFailed = time.Date(2026, 3, 1, 12, 5, 0, 456_000_000, time.UTC)
	testF      = Failure{Attempts: 4, Error: "http: status=503", FirstFailed: testFailed, Member: "watermark-connect@pod-7"}
	// testShareF is testF as a kafka_share input of share group workers
	// writes it.
	testShareF = Failure{Attempts: 4, Error: "http: status=503", FirstFailed: testFailed, Member: "watermark-connect@pod-7", ShareGroup: "workers"}
)

// origin is a consumed record with headers of its own, two of them in the
// dead_letter_ namespace (left by an earlier dead-lettering and redrive).
func origin() *kgo.Record {
	return &kgo.Record{
		Topic: "orders", Partition: 3, Offset: 1207,
		Key: []byte("k1"), Value: []byte("v1"), Timestamp: testTime,
		Headers: []kgo.RecordHeader{
			{Key: "trace", Value: []byte("t-1")},
			{Key: HeaderAttempts, Value: []byte("99")},
			{Key: "content-type", Value: []byte("json")},
			{Key: HeaderRedrivenFrom, Value: []byte("orders.dlq/0/5")},
			{Key: "trace", Value: []byte("t-2")},
		},
	}
}

func TestLetterParseRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    *kgo.Record
		f    Failure
	}{
		{"with headers", origin(), testF},
		{"no headers, empty key and value", &kgo.Record{Topic: "a.b_c-d", Timestamp: testTime}, Failure{Attempts: 1, FirstFailed: testFailed}},
		{"extremes", &kgo.Record{Topic: "t", Partition: 1<<31 - 1, Offset: 1<<63 - 1, Timestamp: time.UnixMilli(-1)},
			Failure{Attempts: int(maxInt), Error: "x\x00\xff", FirstFailed: time.UnixMilli(0), Member: "a@b"}},
		{"a share group's", origin(), testShareF},
		{"a share group of any bytes", origin(), Failure{Attempts: 1, FirstFailed: testFailed, ShareGroup: "\x00\u202e" + strings.Repeat("g", maxShareGroupLen-4)}},
	} {
		l := Letter(tc.r, "orders.dlq", tc.f)
		p, err := Parse(l)
		require.NoError(t, err, tc.name)
		want := Provenance{
			Topic: tc.r.Topic, Partition: tc.r.Partition, Offset: tc.r.Offset,
			Timestamp: tc.r.Timestamp.UTC(), Attempts: tc.f.Attempts, Error: tc.f.Error,
			FirstFailed: tc.f.FirstFailed.UTC(), Member: tc.f.Member, ShareGroup: tc.f.ShareGroup,
		}
		assert.Equal(t, want, p, "%s: Parse(Letter(r)) = got, want", tc.name)
		assert.Equal(t, "orders.dlq", l.Topic, tc.name)
		assert.Equal(t, tc.r.Timestamp, l.Timestamp, tc.name)
		assert.Equal(t, tc.r.Key, l.Key, tc.name)
		assert.Equal(t, tc.r.Value, l.Value, tc.name)
	}
}

func TestLetterHeaders(t *testing.T) {
	r := origin()
	before := *r
	before.Headers = slices.Clone(r.Headers)

	l := Letter(r, "orders.dlq", testF)
	var got []string
	for _, h := range l.Headers {
		got = append(got, h.Key+"="+string(h.Value))
	}
	// The origin's own headers in order, its dead_letter_ ones dropped
	// (not kept, not duplicated), then the provenance.
	assert.Equal(t, []string{
		"trace=t-1", "content-type=json", "trace=t-2",
		"dead_letter_topic=orders",
		"dead_letter_partition=3",
		"dead_letter_offset=1207",
		"dead_letter_timestamp_ms=1772366400123",
		"dead_letter_attempts=4",
		"dead_letter_error=http: status=503",
		"dead_letter_first_failed_ms=1772366700456",
		"dead_letter_member=watermark-connect@pod-7",
	}, got, "Letter(r).Headers = got, want")

	assert.Equal(t, before, *r, "r is not modified")
	assert.Same(t, &r.Value[0], &l.Value[0], "the value is shared, not copied")
	assert.Same(t, &r.Key[0], &l.Key[0], "the key is shared, not copied")
	assert.Equal(t, int32(0), l.Partition, "the partition is left for the partitioner")
}

// A kafka_share input's letter carries its share group after the eight
// provenance headers; the headers before are kafka_watermark's.
func TestLetterShareGroupHeader(t *testing.T) {
	l := Letter(origin(), "orders.dlq", testShareF)
	watermark := Letter(origin(), "orders.dlq", testF)
	require.Len(t, l.Headers, len(watermark.Headers)+shareHeaders)
	assert.Equal(t, watermark.Headers, l.Headers[:len(watermark.Headers)], "the headers before the share group")
	assert.Equal(t, kgo.RecordHeader{Key: "dead_letter_share_group", Value: []byte("workers")}, l.Headers[len(l.Headers)-1])

	// Letter sizes the headers for the origin's and its own, each writer's
	// count (provenanceHeaders, and shareHeaders more for kafka_share): no
	// append reallocates.
	plain := &kgo.Record{Topic: "orders", Timestamp: testTime, Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("t")}}}
	for _, f := range []Failure{testF, testShareF} {
		l := Letter(plain, "orders.dlq", f)
		assert.Equal(t, len(l.Headers), cap(l.Headers), "Letter(%+v) headers: len = cap", f)
	}

	// Redriven drops it with the rest of the dead_letter_ namespace, and a
	// letter of the redriven record names the group that wrote it last.
	r := Redriven(l, "orders")
	for _, h := range r.Headers {
		assert.NotEqual(t, HeaderShareGroup, h.Key, "Redriven keeps no share group header")
	}
	p, err := Parse(Letter(r, "orders.dlq", Failure{Attempts: 1, FirstFailed: testFailed, ShareGroup: "other"}))
	require.NoError(t, err)
	assert.Equal(t, "other", p.ShareGroup)
	p, err = Parse(Letter(r, "orders.dlq", testF))
	require.NoError(t, err)
	assert.Equal(t, "", p.ShareGroup, "kafka_watermark writes none")
}

// The numbers share one buffer: appending to one header's value must not
// overwrite the next.
func TestLetterNumbersIndependent(t *testing.T) {
	l := Letter(origin(), "dlq", testF)
	for i, h := range l.Headers {
		if h.Key == HeaderPartition {
			l.Headers[i].Value = append(h.Value, '9')
		}
	}
	p, err := Parse(l)
	require.NoError(t, err)
	assert.Equal(t, int32(39), p.Partition)
	assert.Equal(t, int64(1207), p.Offset, "the offset after the partition is intact")
}

func TestRedriven(t *testing.T) {
	l := Letter(origin(), "orders.dlq", testF)
	l.Partition, l.Offset = 2, 88 // as the consumer of the dead-letter topic sees it
	before := slices.Clone(l.Headers)

	r := Redriven(l, "orders")
	assert.Equal(t, "orders", r.Topic)
	assert.Equal(t, testTime, r.Timestamp)
	assert.Equal(t, []byte("k1"), r.Key)
	assert.Equal(t, []byte("v1"), r.Value)
	assert.Equal(t, []kgo.RecordHeader{
		{Key: "trace", Value: []byte("t-1")},
		{Key: "content-type", Value: []byte("json")},
		{Key: "trace", Value: []byte("t-2")},
		{Key: HeaderRedrivenFrom, Value: []byte("orders.dlq/2/88")},
	}, r.Headers, "Redriven(l).Headers = got, want")
	assert.Equal(t, before, l.Headers, "l is not modified")

	// Failing again, the redriven record becomes a dead letter with one
	// provenance, the new one.
	r.Partition, r.Offset = 1, 500
	again, err := Parse(Letter(r, "orders.dlq", Failure{Attempts: 1, FirstFailed: testFailed}))
	require.NoError(t, err)
	assert.Equal(t, int64(500), again.Offset)
	assert.Equal(t, "", again.RedrivenFrom, "Letter drops the redrive header with the rest of dead_letter_*")
}
