package produce

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// batchOverhead is the wire size of a record batch without records, as kgo
// counts it against the batch limit at its strictest (kgo
// sink.go:2122-2136): the v2 batch header, 61 bytes, and a 4-byte length.
const batchOverhead = 65

// BatchSize returns the size of r as a record batch of its own, as kgo
// measures a record against ProducerBatchMaxBytes before it buffers it
// (recBatch.tryBuffer, kgo sink.go:2612-2626): the batch overhead and the
// record's encoding as the first record of its batch (sink.go:2526-2570),
// uncompressed. kgo fails a record whose own batch is larger than the
// limit with MESSAGE_TOO_LARGE; checking first lets the error say why.
//
// The 4-byte length is kgo's count before it knows the broker's produce
// version, and for versions 3 to 8 (wireLengthForProduceVersion,
// sink.go:2572-2609); from version 9 on kgo counts a varint, 1 to 3 bytes
// fewer below 256 MiB (flexibleWireLength, sink.go:2100-2103). So a record
// this check passes, kgo passes; one within 3 bytes of the limit is refused
// here that kgo might have sent.
func BatchSize(r *kgo.Record) int64 {
	l := 1 + // attributes
		1 + // timestamp delta: 0 for the first record of a batch
		1 + // offset delta: 0
		kbin.VarintLen(int32(len(r.Key))) + len(r.Key) +
		kbin.VarintLen(int32(len(r.Value))) + len(r.Value) +
		kbin.VarintLen(int32(len(r.Headers)))
	for _, h := range r.Headers {
		l += kbin.VarintLen(int32(len(h.Key))) + len(h.Key) + kbin.VarintLen(int32(len(h.Value))) + len(h.Value)
	}
	return batchOverhead + int64(kbin.VarintLen(int32(l))) + int64(l)
}

// TooLargeError is the error of a record too large to be produced: refused
// before it was sent (Refusal nil), or refused with MESSAGE_TOO_LARGE by kgo
// or the broker (a topic's max.message.bytes below the producer's limit, or
// broker_write_max_bytes). It is a value, safe for concurrent reads.
type TooLargeError struct {
	Topic     string
	Size      int64  // BatchSize of the record
	Limit     int64  // the producer's MaxMessageBytes
	LimitName string // how the limit is named: the config field
	Refusal   error  // kgo's or the broker's error; nil when the record was not sent
}

// Error names the record's size, the limit and, for a refusal, the limits
// that may have been below the size.
func (e *TooLargeError) Error() string {
	name := e.LimitName
	if name == "" {
		name = "the producer's limit"
	}
	if e.Refusal == nil {
		return fmt.Sprintf("record of %d bytes for topic %q (its size as a record batch of its own) is larger than %s (%d bytes): not produced",
			e.Size, e.Topic, name, e.Limit)
	}
	return fmt.Sprintf("record of %d bytes for topic %q refused as too large, though within %s (%d bytes): "+
		"the topic's max.message.bytes (or the broker's message.max.bytes) may be lower: %v",
		e.Size, e.Topic, name, e.Limit, e.Refusal)
}

// Unwrap returns the refusal, or kerr.MessageTooLarge for a record refused
// before it was sent: errors.Is(err, kerr.MessageTooLarge) holds either way.
func (e *TooLargeError) Unwrap() error {
	if e.Refusal != nil {
		return e.Refusal
	}
	return kerr.MessageTooLarge
}

// checkSize returns a *TooLargeError when r cannot fit the limit.
func (p *Producer) checkSize(r *kgo.Record) error {
	if size := BatchSize(r); size > p.limit {
		return &TooLargeError{Topic: r.Topic, Size: size, Limit: p.limit, LimitName: p.limitName}
	}
	return nil
}

// explain returns err, kgo's answer for r, with the size and limit added
// when it is a too-large refusal.
func (p *Producer) explain(r *kgo.Record, err error) error {
	if err == nil || !errors.Is(err, kerr.MessageTooLarge) {
		return err
	}
	return &TooLargeError{Topic: r.Topic, Size: BatchSize(r), Limit: p.limit, LimitName: p.limitName, Refusal: err}
}
