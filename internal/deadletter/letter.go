package deadletter

import (
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Failure is what the input knows of a record's failures when it dead-letters it.
type Failure struct {
	Attempts    int       // deliveries that failed, >= 1
	Error       string    // the error class of the last failure, already sanitized (internal/errclass): written as given
	FirstFailed time.Time // when the first delivery failed
	Member      string    // who dead-lettered it: client ID @ host
	// ShareGroup is the share group of the kafka_share input that
	// dead-letters the record, written as HeaderShareGroup; "" (the
	// kafka_watermark input) writes no such header.
	ShareGroup string
}

// Letter returns the record to produce to topic dest in place of r: r's key, value and timestamp,
// r's headers in order minus any whose key starts with Prefix, then the eight provenance headers
// (topic, partition, offset and timestamp from r; the rest from f), then HeaderShareGroup when
// f.ShareGroup is set. Partition left for the partitioner (keyed records of one key go to one
// partition). It copies nothing it need not; r is not modified.
//
// The returned record shares r's key, value and header values. Letter does
// not check f: the input passes what it recorded.
func Letter(r *kgo.Record, dest string, f Failure) *kgo.Record {
	ours := provenanceHeaders
	if f.ShareGroup != "" {
		ours += shareHeaders
	}
	headers := make([]kgo.RecordHeader, 0, len(r.Headers)+ours)
	headers = keepForeign(headers, r.Headers)

	// The five numbers share one buffer: at most 20 bytes each (an int64
	// with its sign), so appending never reallocates and each header's
	// value, cut with a full slice expression, stays its own.
	num := make([]byte, 0, 5*20)
	appendNum := func(key string, v int64) {
		start := len(num)
		num = strconv.AppendInt(num, v, 10)
		headers = append(headers, kgo.RecordHeader{Key: key, Value: num[start:len(num):len(num)]})
	}
	headers = append(headers, kgo.RecordHeader{Key: HeaderTopic, Value: []byte(r.Topic)})
	appendNum(HeaderPartition, int64(r.Partition))
	appendNum(HeaderOffset, r.Offset)
	appendNum(HeaderTimestampMs, r.Timestamp.UnixMilli())
	appendNum(HeaderAttempts, int64(f.Attempts))
	headers = append(headers, kgo.RecordHeader{Key: HeaderError, Value: []byte(f.Error)})
	appendNum(HeaderFirstFailedMs, f.FirstFailed.UnixMilli())
	headers = append(headers, kgo.RecordHeader{Key: HeaderMember, Value: []byte(f.Member)})
	if f.ShareGroup != "" {
		headers = append(headers, kgo.RecordHeader{Key: HeaderShareGroup, Value: []byte(f.ShareGroup)})
	}

	return &kgo.Record{
		Topic:     dest,
		Key:       r.Key,
		Value:     r.Value,
		Timestamp: r.Timestamp,
		Headers:   headers,
	}
}

// Redriven returns the record to produce to topic to for the dead-letter record r (read from dlTopic/partition/offset): key, value, timestamp and headers of r minus the dead_letter_* ones, plus dead_letter_redriven_from.
//
// dlTopic, partition and offset are r's Topic, Partition and Offset, as a
// consumer fills them in. The returned record shares r's key, value and
// header values; its partition is left for the partitioner, as Letter's.
func Redriven(r *kgo.Record, to string) *kgo.Record {
	headers := make([]kgo.RecordHeader, 0, len(r.Headers)+1)
	headers = keepForeign(headers, r.Headers)
	headers = append(headers, kgo.RecordHeader{Key: HeaderRedrivenFrom, Value: redrivenFrom(r)})
	return &kgo.Record{
		Topic:     to,
		Key:       r.Key,
		Value:     r.Value,
		Timestamp: r.Timestamp,
		Headers:   headers,
	}
}

// redrivenFrom is the value of HeaderRedrivenFrom for r:
// "<topic>/<partition>/<offset>".
func redrivenFrom(r *kgo.Record) []byte {
	b := make([]byte, 0, len(r.Topic)+2+11+20)
	b = append(b, r.Topic...)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(r.Partition), 10)
	b = append(b, '/')
	return strconv.AppendInt(b, r.Offset, 10)
}

// keepForeign appends to dst, in order, the headers of src whose keys are
// not in the dead_letter_ namespace.
func keepForeign(dst, src []kgo.RecordHeader) []kgo.RecordHeader {
	for _, h := range src {
		if !isOurs(h.Key) {
			dst = append(dst, h)
		}
	}
	return dst
}
