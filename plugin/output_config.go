package plugin

import (
	"errors"
	"fmt"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/watermark-connect/watermark-connect/internal/kafkaconn"
	"github.com/watermark-connect/watermark-connect/internal/produce"
)

// outputConfig is the parsed and validated configuration of one output.
type outputConfig struct {
	conn    kafkaconn.Config // seed brokers, client ID, TLS, SASL, tcp, metadata and request timeouts
	produce produce.Config   // how records are produced (internal/produce)

	// How a message becomes a record (output_records.go). key, partition and
	// timestamp are nil when absent; timestampSeconds says the timestamp is
	// the deprecated field's, in seconds.
	topic, key, partition, timestamp *service.InterpolatedString
	timestampSeconds                 bool
	topicText                        string                  // topic as written, for the log
	metadata                         *service.MetadataFilter // nil: no headers

	maxInFlight int
	batching    service.BatchPolicy
	acks        string

	// txnGroup, under exactly_once, is the consumer group whose input's
	// transactions the records go in (see txn.go); "" is at least once.
	txnGroup string
}

// Bounds kgo puts on its byte limits (kgo config.go:330-345): a record batch
// of 512 bytes to 1GiB, a broker write of 1KiB to 1GiB and at least a batch.
const (
	minMessageBytes  = 512
	minBrokerWrite   = 1 << 10
	maxProducerBytes = 1 << 30
)

// Messages of the output's checks and validate ("<field>: <message>").
const (
	outMsgNoBrokers    = "at least one broker address is required (this output never falls back to a global redpanda block)"
	outMsgNoTopic      = "a topic is required"
	outMsgAcks         = "is rejected: this output acknowledges a batch only once every in-sync replica has every record of it (acks all, the default); an acknowledgement from the leader alone, or none, would acknowledge records a broker failure can lose"
	outMsgManual       = "needs partition: the partitioner manual produces each record to the partition it names"
	outMsgPartition    = "is used only by partitioner: manual; set partitioner: manual, or remove partition"
	outMsgTimestamps   = "cannot be set together with timestamp_ms, as in the redpanda output: keep timestamp_ms (milliseconds)"
	outMsgIdempotentIn = "must be 1 while idempotent_write is true (kgo keeps sequence numbers without gaps that way): set idempotent_write: false to send more, at the cost of duplicates and reordering on retries"
)

// outputFieldChecks holds the output's field checks, by the field's dotted
// path: check.go's rules, run at lint (each field's LintRule) and at start
// (parseOutputConfig).
var outputFieldChecks = map[string]fieldCheck{
	fieldSeedBrokers:    checkBrokers(outMsgNoBrokers),
	fieldOutTopic:       checkNotEmpty(outMsgNoTopic),
	fieldOutPartitioner: checkOneOf(produce.PartitionerMurmur2, produce.PartitionerRoundRobin, produce.PartitionerLeastBackup, produce.PartitionerManual),
	fieldOutCompression: func(path string, v any) error {
		if v == "" {
			return nil // kgo's default, as absent
		}
		return checkOneOf(produce.CompressionLz4, produce.CompressionSnappy, produce.CompressionGzip, produce.CompressionNone, produce.CompressionZstd)(path, v)
	},
	fieldOutAcks: func(path string, v any) error {
		if err := checkOneOf(acksAll, acksLeader, acksNone)(path, v); err != nil {
			return err
		}
		if v != acksAll {
			return fmt.Errorf("%s (%q) %s", path, fmt.Sprint(v), outMsgAcks)
		}
		return nil
	},

	fieldOutTimeout:             checkPositive,
	fieldMetadataMaxAge:         checkPositive,
	fieldOutDeliveryTimeout:     checkNotNegative("0s (no limit) or positive"),
	fieldRequestTimeoutOverhead: checkDurationBetween(100*time.Millisecond, 15*time.Minute),
	fieldConnIdleTimeout:        checkDurationBetween(100*time.Millisecond, 15*time.Minute),

	fieldOutMaxInFlight:         checkAtLeast(1, "at least 1"),
	fieldOutMaxBufferedRecords:  checkAtLeast(1, "at least 1"),
	fieldOutMaxInFlightRequests: checkAtLeast(1, "at least 1"),
	fieldOutRecordRetries:       checkAtLeast(0, "0 (no limit) or more"),

	fieldOutMaxMessageBytes:     checkByteSizeBetween(minMessageBytes, maxProducerBytes),
	fieldOutBrokerWriteMaxBytes: checkByteSizeBetween(minBrokerWrite, maxProducerBytes),
	fieldOutMaxBufferedBytes:    checkByteSizeBetween(0, maxInt32),
}

// outputRequiredFields are checked when absent too.
var outputRequiredFields = map[string]bool{fieldSeedBrokers: true, fieldOutTopic: true}

// parseOutputConfig checks each field's value, reads every field, then
// validates the whole config once. Lint runs it too (lint.go).
func parseOutputConfig(pc *service.ParsedConfig) (*outputConfig, error) {
	if errs := checkFields(pc, outputFieldChecks, outputRequiredFields); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	c := &outputConfig{}
	var errs []error
	keep := func(err error) { errs = append(errs, err) }
	// An empty interpolated field is absent, as the redpanda output reads
	// partition: `create` writes the optional fields as "".
	interpolated := func(dst **service.InterpolatedString, name string) {
		if raw, _ := pc.FieldString(name); raw != "" {
			v, err := pc.FieldInterpolatedString(name)
			keep(err)
			*dst = v
		}
	}
	size := func(name string) int64 {
		s, err := pc.FieldString(name)
		var n int64
		if err == nil {
			n, err = parseBytes(name, s)
		}
		keep(err)
		return n
	}
	var err error
	c.conn, err = kafkaconn.Parse(pc)
	keep(err)
	interpolated(&c.topic, fieldOutTopic)
	c.topicText, err = pc.FieldString(fieldOutTopic)
	keep(err)
	interpolated(&c.key, fieldOutKey)
	interpolated(&c.partition, fieldOutPartition)
	interpolated(&c.timestamp, fieldOutTimestampMs)
	if raw, _ := pc.FieldString(fieldOutTimestamp); raw != "" {
		if c.timestamp != nil {
			keep(fmt.Errorf("%s: %s", fieldOutTimestamp, outMsgTimestamps))
		}
		interpolated(&c.timestamp, fieldOutTimestamp)
		c.timestampSeconds = true
	}
	if pc.Contains(fieldOutMetadata) {
		c.metadata, err = pc.FieldMetadataFilter(fieldOutMetadata)
		keep(err)
		if c.metadata.IsEmpty() {
			c.metadata = nil // Benthos fills the block in: empty, it selects nothing
		}
	}
	c.maxInFlight, err = pc.FieldInt(fieldOutMaxInFlight)
	keep(err)
	c.batching, err = pc.FieldBatchPolicy(fieldOutBatching)
	keep(err)
	c.acks, err = pc.FieldString(fieldOutAcks)
	keep(err)

	p := &c.produce
	p.LimitName = fieldOutMaxMessageBytes
	p.Partitioner, err = pc.FieldString(fieldOutPartitioner)
	keep(err)
	if pc.Contains(fieldOutCompression) {
		p.Compression, err = pc.FieldString(fieldOutCompression)
		keep(err)
	}
	idempotent, err := pc.FieldBool(fieldOutIdempotentWrite)
	keep(err)
	p.NotIdempotent = !idempotent
	p.AllowAutoTopicCreation, err = pc.FieldBool(fieldOutAutoTopicCreation)
	keep(err)
	p.MaxInFlightRequests, err = pc.FieldInt(fieldOutMaxInFlightRequests)
	keep(err)
	p.RecordRetries, err = pc.FieldInt(fieldOutRecordRetries)
	keep(err)
	p.MaxBufferedRecords, err = pc.FieldInt(fieldOutMaxBufferedRecords)
	keep(err)
	p.Timeout, err = pc.FieldDuration(fieldOutTimeout)
	keep(err)
	p.RecordDeliveryTimeout, err = pc.FieldDuration(fieldOutDeliveryTimeout)
	keep(err)
	p.Rack, err = pc.FieldString(fieldRackID)
	keep(err)
	// The checks bound the sizes to int32.
	p.MaxMessageBytes = int32(size(fieldOutMaxMessageBytes))
	p.BrokerWriteMaxBytes = int32(size(fieldOutBrokerWriteMaxBytes))
	p.MaxBufferedBytes = int(size(fieldOutMaxBufferedBytes))

	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := c.validate(pc); err != nil {
		return nil, err
	}
	return c, nil
}

// validate checks the rules that relate fields. Each message names the
// fields and values.
func (c *outputConfig) validate(pc *service.ParsedConfig) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	// A partition field written "" is absent, as in the redpanda output
	// (NewFranzWriterFromConfig, franz_writer.go:492 of v4.106).
	partition, _ := pc.FieldString(fieldOutPartition)
	manual := c.produce.Partitioner == produce.PartitionerManual
	switch {
	case manual && partition == "":
		bad("%s (%q) %s", fieldOutPartitioner, produce.PartitionerManual, outMsgManual)
	case !manual && partition != "":
		bad("%s (%q) %s (%s is %q)", fieldOutPartition, partition, outMsgPartition, fieldOutPartitioner, c.produce.Partitioner)
	}
	if !c.produce.NotIdempotent && c.produce.MaxInFlightRequests != 1 {
		bad("%s (%d) %s", fieldOutMaxInFlightRequests, c.produce.MaxInFlightRequests, outMsgIdempotentIn)
	}
	if c.produce.BrokerWriteMaxBytes < c.produce.MaxMessageBytes {
		bad("%s (%d bytes) must be at least %s (%d bytes): a batch of the largest size must fit one write",
			fieldOutBrokerWriteMaxBytes, c.produce.BrokerWriteMaxBytes, fieldOutMaxMessageBytes, c.produce.MaxMessageBytes)
	}
	validateSASL(c.conn.SASL, "output", func(err error) { errs = append(errs, err) })
	c.txnGroup = exactlyOnceGroup(pc, bad)
	if b := c.batching; c.txnGroup != "" && b.Period == "" && (b.Count > 1 || b.ByteSize > 0 || b.Check != "") {
		bad("%s needs a period with %s: a transaction ends only once the pipeline is empty, and a batch waiting for more messages while the input holds them back would wait for ever", fieldOutBatching, fieldExactlyOnce)
	}
	return errors.Join(errs...)
}
