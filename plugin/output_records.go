package plugin

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"
)

// metaRecordHeaders is the metadata key under which a message read from
// Kafka holds its record's headers as a list (internal/kafkamsg, as Redpanda
// Connect's redpanda input): each of them is metadata under its own key too,
// so the output never writes the list as a header.
const metaRecordHeaders = "__rpcn_kafka_headers"

// record builds the record of msg as c says, as Redpanda Connect's redpanda
// output does (messageBatchToFranzRecords, franz_writer.go:533-610 of
// v4.106), but for one message, so that a message whose topic, key,
// partition or timestamp cannot be evaluated fails alone; and with its
// headers in key order, so that the same message always makes the same
// record. The record shares the message's bytes.
func (c *outputConfig) record(msg *service.Message) (*kgo.Record, error) {
	value, err := msg.AsBytes()
	if err != nil {
		return nil, err
	}
	r := &kgo.Record{Value: value}
	if r.Topic, err = c.topic.TryString(msg); err != nil {
		return nil, fmt.Errorf("%s: %w", fieldOutTopic, err)
	}
	if r.Topic == "" {
		return nil, fmt.Errorf("%s: evaluated to an empty topic", fieldOutTopic)
	}
	if c.key != nil {
		if r.Key, err = c.key.TryBytes(msg); err != nil {
			return nil, fmt.Errorf("%s: %w", fieldOutKey, err)
		}
	}
	if c.partition != nil {
		s, err := c.partition.TryString(msg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fieldOutPartition, err)
		}
		p, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
		if err != nil || p < 0 {
			return nil, fmt.Errorf("%s: %q is not a partition number", fieldOutPartition, s)
		}
		r.Partition = int32(p)
	}
	if c.timestamp != nil {
		if r.Timestamp, err = c.recordTime(msg); err != nil {
			return nil, err
		}
	}
	if c.metadata != nil {
		_ = c.metadata.Walk(msg, func(k, v string) error {
			if k != metaRecordHeaders {
				r.Headers = append(r.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
			}
			return nil
		})
		slices.SortFunc(r.Headers, func(a, b kgo.RecordHeader) int { return strings.Compare(a.Key, b.Key) })
	}
	return r, nil
}

// recordTime evaluates the timestamp field on msg: milliseconds, or seconds
// under the deprecated timestamp field.
func (c *outputConfig) recordTime(msg *service.Message) (time.Time, error) {
	field := fieldOutTimestampMs
	if c.timestampSeconds {
		field = fieldOutTimestamp
	}
	s, err := c.timestamp.TryString(msg)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %w", field, err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %q is not a whole number", field, s)
	}
	if c.timestampSeconds {
		return time.Unix(n, 0), nil
	}
	return time.UnixMilli(n), nil
}

// records builds the record of each message of b; a message whose record
// cannot be built has a nil record and its error at the same index.
func (c *outputConfig) records(b service.MessageBatch) ([]*kgo.Record, []error) {
	rs := make([]*kgo.Record, len(b))
	var errs []error
	for i, msg := range b {
		r, err := c.record(msg)
		if err != nil {
			if errs == nil {
				errs = make([]error, len(b))
			}
			errs[i] = fmt.Errorf("building its record: %w", err)
			continue
		}
		rs[i] = r
	}
	return rs, errs
}

// batchError is the error of a write in which the messages failed names
// failed: nil when none did, a *service.BatchError naming each failed message
// with its own error otherwise, headed by how many failed and the first
// error, so that an input that retries messages retries only those.
func batchError(b service.MessageBatch, failed []error) error {
	n, first := 0, -1
	for i, err := range failed {
		if err != nil {
			n++
			if first < 0 {
				first = i
			}
		}
	}
	if n == 0 {
		return nil
	}
	headline := fmt.Errorf("%s output: %d of %d record(s) not written; the first, message %d: %w", OutputName, n, len(b), first, failed[first])
	berr := service.NewBatchError(b, headline)
	for i, err := range failed {
		if err != nil {
			berr = berr.Failed(i, err)
		}
	}
	return berr
}
