package plugin

import (
	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/watermark-connect/watermark-connect/internal/produce"
)

// OutputName is the name the output is registered under: an input and an
// output may share a name in Benthos.
const OutputName = "kafka_watermark"

// The output's fields. Each is named and defaulted as the field of Redpanda
// Connect's redpanda output with the same meaning (v4.106:
// internal/impl/kafka/output_redpanda.go:70-85, franz_writer.go:54-170 and
// 389-417, franz_client.go:56-86); rack_id, which the
// redpanda output lacks, is the input's. The connection's fields are the
// input's constants (spec.go). The README's output table lists every field
// of the redpanda output and its outcome here.
const (
	fieldOutTopic               = "topic"
	fieldOutKey                 = "key"
	fieldOutPartition           = "partition"
	fieldOutPartitioner         = "partitioner"
	fieldOutMetadata            = "metadata"
	fieldOutTimestamp           = "timestamp"
	fieldOutTimestampMs         = "timestamp_ms"
	fieldOutCompression         = "compression"
	fieldOutMaxInFlight         = "max_in_flight"
	fieldOutBatching            = "batching"
	fieldOutIdempotentWrite     = "idempotent_write"
	fieldOutAcks                = "acks"
	fieldOutAutoTopicCreation   = "allow_auto_topic_creation"
	fieldOutTimeout             = "timeout"
	fieldOutMaxMessageBytes     = "max_message_bytes"
	fieldOutBrokerWriteMaxBytes = "broker_write_max_bytes"
	fieldOutMaxBufferedRecords  = "max_buffered_records"
	fieldOutMaxBufferedBytes    = "max_buffered_bytes"
	fieldOutMaxInFlightRequests = "max_in_flight_requests"
	fieldOutRecordRetries       = "record_retries"
	fieldOutDeliveryTimeout     = "record_delivery_timeout"
)

// The values of acks: only all is accepted (output_config.go says why).
const (
	acksAll    = "all"
	acksLeader = "leader"
	acksNone   = "none"
)

// OutputConfigSpec returns the configuration specification of the
// kafka_watermark output.
func OutputConfigSpec() *service.ConfigSpec {
	// As ConfigSpec: the lint rules call these methods.
	if err := registerLintMethods(); err != nil {
		panic(err)
	}
	rule := outputFieldRule
	return service.NewConfigSpec().
		Beta().
		Categories("Services").
		Summary("Writes messages to Kafka topics and acknowledges a batch only once every in-sync replica has every record of it.").
		Description(`
The output produces each message of a batch as one record, with acks from all in-sync replicas, and returns only
when the broker has answered for every record. A batch is acknowledged only when every record of it was
acknowledged; a record that fails (a topic that does not exist, a record too large, retries spent) fails only its
own message, in a batch error (`+"`*service.BatchError`"+`), so an input that retries messages
(`+"`kafka_watermark`"+` with `+"`nack_retry`"+`) retries only those. At least once: a message whose write fails
or is cut short may already be in the topic, and is written again when it is retried.

A record too large to be produced is an error naming its size and the limit (`+"`max_message_bytes`"+`), never a
silent drop. Records are placed as the Java client places them: by the murmur2 hash of their key.`).
		Fields(
			service.NewStringListField(fieldSeedBrokers).LintRule(rule(fieldSeedBrokers)).
				Description("Addresses of Kafka brokers to connect to first. An entry may hold several comma-separated addresses. Required: unlike the redpanda output, this output never falls back to a global `redpanda` block.").
				Example([]string{"localhost:9092"}).
				Example([]string{"foo:9092", "bar:9092"}),
			service.NewInterpolatedStringField(fieldOutTopic).LintRule(rule(fieldOutTopic)).
				Description("The topic to write each message to. A message whose topic evaluates to an error or to an empty string fails alone.").
				Example("orders-enriched").
				Example(`${! @kafka_topic }-copy`),
			// No examples on the optional fields: `create` would write them in.
			service.NewInterpolatedStringField(fieldOutKey).
				Description("The key of each message's record, such as `${! @kafka_key }` or `${! json(\"customer_id\") }`. Absent or empty, records have no key (a null key); an interpolation that fails fails its message.").
				Optional(),
			service.NewInterpolatedStringField(fieldOutPartition).
				Description("The partition of each message's record, a whole number, such as `${! @kafka_partition }`; only with `partitioner: manual`, which needs it. Empty is absent.").
				Optional(),
			service.NewStringAnnotatedEnumField(fieldOutPartitioner, map[string]string{
				produce.PartitionerMurmur2:     "Kafka's default: the murmur2 hash of the key, its sign bit masked, modulo the partition count, as the Java client places a keyed record. A record without a key goes to a partition kept until its batch is full (KIP-480).",
				produce.PartitionerRoundRobin:  "Records go to every partition in turn, keys ignored.",
				produce.PartitionerLeastBackup: "Each batch goes to the partition with the fewest records buffered, keys ignored.",
				produce.PartitionerManual:      "Each record goes to the partition `partition` names.",
			}).LintRule(rule(fieldOutPartitioner)).
				Description("How records are placed on partitions. The redpanda output's default too, where the field is optional.").
				Default(produce.PartitionerMurmur2).Advanced(),
			service.NewMetadataFilterField(fieldOutMetadata).
				Description("Which metadata of a message become headers of its record, in key order, each value as a string. Absent, records have no headers. `__rpcn_kafka_headers`, which holds the headers of a message read from Kafka as a list, never becomes a header: each of those headers is also metadata under its own key.").
				Example(map[string]any{"include_prefixes": []string{"trace_"}}).
				Example(map[string]any{"include_patterns": []string{".*"}}).
				Optional(),
			service.NewInterpolatedStringField(fieldOutTimestampMs).
				Description("The timestamp of each message's record, in milliseconds since the Unix epoch, such as `${! @kafka_timestamp_ms }` or `${! timestamp_unix_milli() }`. Absent or empty, the time the record is produced. A value that is not a whole number fails its message.").
				Optional().Advanced(),
			service.NewInterpolatedStringField(fieldOutTimestamp).
				Description("Deprecated, as in the redpanda output: the timestamp in seconds. Use `timestamp_ms`; not both.").
				Optional().Advanced().Deprecated(),
			service.NewStringEnumField(fieldOutCompression, produce.CompressionLz4, produce.CompressionSnappy, produce.CompressionGzip, produce.CompressionNone, produce.CompressionZstd).LintRule(rule(fieldOutCompression)).
				Description("The compression of record batches. Absent or empty, snappy where the broker takes it, else none (kgo's default, as in the redpanda output).").
				Optional().Advanced(),
			service.NewIntField(fieldOutMaxInFlight).LintRule(rule(fieldOutMaxInFlight)).
				Description("The most batches being written at once.").
				Default(256),
			service.NewBatchPolicyField(fieldOutBatching).
				Description("How messages are grouped into batches before they are written. With it, Benthos resolves the output's batch error per input batch: an input batch holding a message whose record failed fails whole (the `kafka_watermark` input then retries all of it), where without it the input learns which messages failed and retries only those."),
			service.NewBoolField(fieldOutIdempotentWrite).
				Description("Idempotent writes: the broker drops the duplicates of a record that the client sends again after a lost answer, and keeps each partition's records in order. Needs the `IDEMPOTENT_WRITE` permission on the cluster (Kafka 3.0+ grants it with `WRITE` on a topic). `false` allows `max_in_flight_requests` above 1, at the cost of duplicates and reordering on retries.").
				Default(true).Advanced(),
			service.NewStringEnumField(fieldOutAcks, acksAll, acksLeader, acksNone).LintRule(rule(fieldOutAcks)).
				Description("Accepted for configs written for the redpanda output: only `all`, the default. A batch is acknowledged only once every in-sync replica has every record of it; `leader` and `none` acknowledge records a broker failure can lose, and are rejected.").
				Default(acksAll).Advanced(),
			service.NewBoolField(fieldOutAutoTopicCreation).
				Description("Ask the broker to create a topic that does not exist when its metadata is fetched (the broker's `auto.create.topics.enable` decides). Without it, a record to a topic that does not exist fails its message after kgo's 4 metadata lookups of it.").
				Default(true).Advanced(),
			service.NewDurationField(fieldOutTimeout).LintRule(rule(fieldOutTimeout)).
				Description("How long a broker may take to answer a produce request before the request is abandoned and sent again (Java's `request.timeout.ms`, for produce requests).").
				Default("10s").Advanced(),
			service.NewStringField(fieldOutMaxMessageBytes).LintRule(rule(fieldOutMaxMessageBytes)).
				Description("The largest record batch sent, and so the largest record: a record whose own batch (key, value and headers, uncompressed, with about 70 bytes of batch and record framing) is larger fails its message with an error naming its size and this limit, and is never sent. Kafka's `max.message.bytes`: the topic's own limit, which the broker applies to compressed batches, may be lower. Between 512 bytes and 1GiB.").
				Default("1MiB").Advanced(),
			service.NewStringField(fieldOutBrokerWriteMaxBytes).LintRule(rule(fieldOutBrokerWriteMaxBytes)).
				Description("The most bytes written to a broker connection at once (Kafka's `socket.request.max.bytes`): between 1KiB and 1GiB, and at least `max_message_bytes`.").
				Default("100MiB").Advanced(),
			service.NewIntField(fieldOutMaxBufferedRecords).LintRule(rule(fieldOutMaxBufferedRecords)).
				Description("The most records buffered in the client, not yet acknowledged; writes wait for room past it.").
				Default(10000).Advanced(),
			service.NewStringField(fieldOutMaxBufferedBytes).LintRule(rule(fieldOutMaxBufferedBytes)).
				Description("The most bytes (keys, values, headers) buffered in the client; writes wait for room past it. `0`: no limit but `max_buffered_records`.").
				Default("0").Advanced(),
			service.NewIntField(fieldOutMaxInFlightRequests).LintRule(rule(fieldOutMaxInFlightRequests)).
				Description("The most produce requests in flight per broker connection: 1 while `idempotent_write` is on, which kgo needs to keep sequence numbers without gaps. Batches written at once (`max_in_flight`) share requests.").
				Default(1).Advanced(),
			service.NewIntField(fieldOutRecordRetries).LintRule(rule(fieldOutRecordRetries)).
				Description("How many times a record is sent again before it fails (and with it every record buffered for its partition); `0`, without limit. With `idempotent_write` a record fails only when that is safe.").
				Default(0).Advanced(),
			service.NewDurationField(fieldOutDeliveryTimeout).LintRule(rule(fieldOutDeliveryTimeout)).
				Description("How long a record may wait in the client before it fails (and with it every record buffered for its partition); Java's `delivery.timeout.ms`. `0s`, without limit: while a partition has no leader, its writes wait.").
				Default("0s").Advanced(),
			service.NewStringField(fieldClientID).
				Description("The client identifier the broker sees. Our own default, where the redpanda output's is `redpanda-connect`.").
				Default("watermark-connect").Advanced(),
			service.NewStringField(fieldRackID).
				Description("A rack identifier for this client: records that need no particular partition (without a key under `murmur2_hash`; all under `round_robin` and `least_backup`) prefer partitions whose leader is in this rack (KIP-1123). Not a field of the redpanda output.").
				Default("").Advanced(),
			service.NewTLSToggledField(fieldTLS),
			saslFieldSpec("output"),
			tcpFieldSpec("output"),
			service.NewDurationField(fieldMetadataMaxAge).LintRule(rule(fieldMetadataMaxAge)).
				Description("How often to refresh metadata: how quickly new partitions are seen.").
				Default("1m").Advanced(),
			service.NewDurationField(fieldRequestTimeoutOverhead).LintRule(rule(fieldRequestTimeoutOverhead)).
				Description("The time added to a request's own timeout when deadlining it (roughly Java's `request.timeout.ms`); between 100ms and 15m.").
				Default("10s").Advanced(),
			service.NewDurationField(fieldConnIdleTimeout).LintRule(rule(fieldConnIdleTimeout)).
				Description("How long a broker connection may idle before it is closed; between 100ms and 15m.").
				Default("20s").Advanced(),
			service.NewInjectTracingSpanMappingField(),
			service.NewObjectField(fieldExactlyOnce,
				service.NewStringField(fieldConsumerGroup).
					Description("The consumer group of the `kafka_watermark` input, in this process, that consumes with `exactly_once: true`. This output writes through that input's transactional client, in the transaction that commits the input's offsets and delivered ranges: a `read_committed` reader sees every input record's outputs exactly once. The producer settings are then the input client's (kgo's defaults, acks all, idempotent): `compression`, `idempotent_write`, `max_message_bytes` and the other producer fields are refused; `seed_brokers`, `tls` and `sasl` are not used (the input's are). One output per group.")).
				Description("Bind this output to an input's transactions (exactly once). Absent: at least once, through a producer of the output's own.").
				Optional(),
		).
		LintRule(outputLintRule).
		Example("Kafka to Kafka",
			"Records of one topic, enriched, written to another keyed as they were read, so each key keeps its partition's order and lands where a Java producer would put it.",
			`
input:
  kafka_watermark:
    seed_brokers: [ localhost:9092 ]
    topics: [ orders ]
    consumer_group: orders-enrich
pipeline:
  processors:
    - mutation: 'root.enriched_at = now()'
output:
  kafka_watermark:
    seed_brokers: [ localhost:9092 ]
    topic: orders-enriched
    key: ${! @kafka_key }
`)
}
