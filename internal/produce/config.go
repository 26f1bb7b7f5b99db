package produce

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Partitioners, by the names the redpanda output's partitioner field takes
// (Redpanda Connect v4.106, internal/impl/kafka/franz_writer.go:126-170).
const (
	// PartitionerMurmur2 hashes a record's key with murmur2, masks the sign
	// bit and takes it modulo the partition count, as the Java client's
	// default partitioner does for a keyed record, so records land where
	// Java producers put them (kgo.StickyKeyPartitioner(nil): kgo
	// partitioner.go:458-482, KafkaHasher 494-501, murmur2 611-644). A
	// record without a key goes to a partition kept until its batch is full
	// (KIP-480).
	PartitionerMurmur2 = "murmur2_hash"
	// PartitionerRoundRobin cycles through the partitions record by record.
	PartitionerRoundRobin = "round_robin"
	// PartitionerLeastBackup picks the partition with the fewest records
	// buffered.
	PartitionerLeastBackup = "least_backup"
	// PartitionerManual produces each record to its Partition field.
	PartitionerManual = "manual"
)

// Compression codecs, by the names the redpanda output's compression field
// takes.
const (
	CompressionNone   = "none"
	CompressionGzip   = "gzip"
	CompressionSnappy = "snappy"
	CompressionLz4    = "lz4"
	CompressionZstd   = "zstd"
)

// DefaultMaxMessageBytes is kgo's default limit of a record batch, Kafka's
// default max.message.bytes (kgo config.go:686), the limit of a Config that
// sets none.
const DefaultMaxMessageBytes = 1000012

// Config is how a producer writes: the producer fields of a kafka_watermark
// output. Its zero value is the dead-letter writer's producer: murmur2 on the
// key, idempotent, kgo's limits and timeouts. A zero field leaves kgo's
// default. Acks are always from all in-sync replicas: no field changes that.
// A Config is a value, safe for concurrent reads.
type Config struct {
	Partitioner string // one of the Partitioner constants; "" is PartitionerMurmur2
	Compression string // one of the Compression constants; "": kgo's (snappy where the broker takes it, else none)

	// NotIdempotent turns idempotent writes off (idempotent_write: false),
	// which allows MaxInFlightRequests above 1.
	NotIdempotent bool
	// MaxInFlightRequests is kgo.MaxProduceRequestsInflightPerBroker; it
	// must be 1 (or 0) unless NotIdempotent.
	MaxInFlightRequests int

	// MaxMessageBytes is the largest record batch (kgo
	// ProducerBatchMaxBytes), so the largest record: 0 is
	// DefaultMaxMessageBytes. LimitName is how a *TooLargeError names it
	// ("max_message_bytes"); "" names it as the producer's limit.
	MaxMessageBytes int32
	LimitName       string
	// BrokerWriteMaxBytes is kgo.BrokerMaxWriteBytes, which kgo requires to
	// be at least MaxMessageBytes.
	BrokerWriteMaxBytes int32

	Timeout               time.Duration // kgo.ProduceRequestTimeout
	RecordRetries         int           // kgo.RecordRetries; 0: unlimited
	RecordDeliveryTimeout time.Duration // kgo.RecordDeliveryTimeout; 0: none
	MaxBufferedRecords    int           // kgo.MaxBufferedRecords
	MaxBufferedBytes      int           // kgo.MaxBufferedBytes; 0: no byte limit

	// Rack is the client's rack: with it, records that need no particular
	// partition (unkeyed ones under PartitionerMurmur2, every record under
	// round_robin and least_backup) prefer partitions led in this rack
	// (KIP-1123, kgo.RackAwarePartitioning).
	Rack string

	AllowAutoTopicCreation bool
	// NoLinger sends records at once (kgo.ProducerLinger(0)) instead of
	// after kgo's default 10ms linger.
	NoLinger bool
}

// Opts returns the kgo options of c, to add to the connection's
// (kafkaconn.Config.Opts). kgo validates them when the client is made.
func (c Config) Opts() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(c.partitioner()),
		kgo.ProducerBatchMaxBytes(c.maxMessageBytes()),
	}
	if c.Compression != "" {
		opts = append(opts, kgo.ProducerBatchCompression(codec(c.Compression)))
	}
	if c.NotIdempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	if c.MaxInFlightRequests > 0 {
		opts = append(opts, kgo.MaxProduceRequestsInflightPerBroker(c.MaxInFlightRequests))
	}
	if c.BrokerWriteMaxBytes > 0 {
		opts = append(opts, kgo.BrokerMaxWriteBytes(c.BrokerWriteMaxBytes))
	}
	if c.Timeout > 0 {
		opts = append(opts, kgo.ProduceRequestTimeout(c.Timeout))
	}
	if c.RecordRetries > 0 {
		opts = append(opts, kgo.RecordRetries(c.RecordRetries))
	}
	if c.RecordDeliveryTimeout > 0 {
		opts = append(opts, kgo.RecordDeliveryTimeout(c.RecordDeliveryTimeout))
	}
	if c.MaxBufferedRecords > 0 {
		opts = append(opts, kgo.MaxBufferedRecords(c.MaxBufferedRecords))
	}
	if c.MaxBufferedBytes > 0 {
		opts = append(opts, kgo.MaxBufferedBytes(c.MaxBufferedBytes))
	}
	if c.Rack != "" {
		opts = append(opts, kgo.Rack(c.Rack), kgo.RackAwarePartitioning())
	}
	if c.AllowAutoTopicCreation {
		opts = append(opts, kgo.AllowAutoTopicCreation())
	}
	if c.NoLinger {
		opts = append(opts, kgo.ProducerLinger(0))
	}
	return opts
}

func (c Config) maxMessageBytes() int32 {
	if c.MaxMessageBytes > 0 {
		return c.MaxMessageBytes
	}
	return DefaultMaxMessageBytes
}

// RecordPartitioner is the partitioner c names: the client option Opts
// sets, for a client made elsewhere that delegates to it (exactly_once).
func (c Config) RecordPartitioner() kgo.Partitioner { return c.partitioner() }

func (c Config) partitioner() kgo.Partitioner {
	switch c.Partitioner {
	case PartitionerRoundRobin:
		return kgo.RoundRobinPartitioner()
	case PartitionerLeastBackup:
		return kgo.LeastBackupPartitioner()
	case PartitionerManual:
		return kgo.ManualPartitioner()
	}
	return kgo.StickyKeyPartitioner(nil)
}

func codec(name string) kgo.CompressionCodec {
	switch name {
	case CompressionGzip:
		return kgo.GzipCompression()
	case CompressionSnappy:
		return kgo.SnappyCompression()
	case CompressionLz4:
		return kgo.Lz4Compression()
	case CompressionZstd:
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}
