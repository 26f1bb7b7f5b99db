package plugin

import (
	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/watermark-connect/watermark-connect/internal/kafkaconn"
)

// Field names. Where Redpanda Connect's redpanda / kafka_franz inputs have a
// field with the same meaning we keep its name and default, so configs port
// unchanged.
const (
	fieldSeedBrokers            = kafkaconn.FieldSeedBrokers
	fieldTopics                 = "topics"
	fieldRegexpTopics           = "regexp_topics"
	fieldRegexpTopicsInclude    = "regexp_topics_include"
	fieldRegexpTopicsExclude    = "regexp_topics_exclude"
	fieldConsumerGroup          = "consumer_group"
	fieldClientID               = kafkaconn.FieldClientID
	fieldRackID                 = "rack_id"
	fieldInstanceID             = "instance_id"
	fieldStartOffset            = "start_offset"
	fieldSessionTimeout         = kafkaconn.FieldSessionTimeout
	fieldRebalanceTimeout       = "rebalance_timeout"
	fieldHeartbeatInterval      = "heartbeat_interval"
	fieldFetchMaxBytes          = "fetch_max_bytes"
	fieldFetchMaxPartitionBytes = "fetch_max_partition_bytes"
	fieldFetchMaxWait           = "fetch_max_wait"
	fieldFetchMinBytes          = "fetch_min_bytes"
	fieldMetadataMaxAge         = kafkaconn.FieldMetadataMaxAge
	fieldRequestTimeoutOverhead = kafkaconn.FieldRequestTimeoutOverhead
	fieldConnIdleTimeout        = kafkaconn.FieldConnIdleTimeout
	fieldTCP                    = kafkaconn.FieldTCP // netutil.DialerConfigSpec's name
	fieldTopicLagRefreshPeriod  = "topic_lag_refresh_period"
	fieldIsolationLevel         = "transaction_isolation_level"
	fieldTLS                    = kafkaconn.FieldTLS
	fieldSASL                   = kafkaconn.FieldSASL
	fieldSASLMechanism          = kafkaconn.FieldSASLMechanism
	fieldSASLUsername           = kafkaconn.FieldSASLUsername
	fieldSASLPassword           = kafkaconn.FieldSASLPassword
	fieldSASLToken              = kafkaconn.FieldSASLToken
	fieldSASLExtensions         = kafkaconn.FieldSASLExtensions
	fieldSASLAWS                = kafkaconn.FieldSASLAWS

	fieldCommitPeriod      = "commit_period"
	fieldMaxPendingBatches = "max_pending_batches"
	fieldBatchMaxRecords   = "batch_max_records"
	fieldBatchMaxBytes     = "batch_max_bytes"
	fieldDrainTimeout      = "drain_timeout"
	fieldGroupProtocol     = "group_protocol"
	fieldNackRetry         = "nack_retry"
	fieldNackMaxRetries    = "max_retries"
	fieldNackInitialBack   = "initial_backoff"
	fieldNackMaxBack       = "max_backoff"

	fieldStallReplayAfter       = "stall_replay_after"
	fieldCommitMetadata         = "commit_metadata"
	fieldCommitMetadataMaxBytes = "commit_metadata_max_bytes"
	fieldLostRecordsReportFor   = "lost_records_report_for"

	fieldDeadLetter            = "dead_letter"
	fieldExactlyOnce           = "exactly_once"
	fieldTransactionalID       = "transactional_id"
	fieldTransactionTimeout    = "transaction_timeout"
	fieldDeadLetterTopic       = "topic"
	fieldDeadLetterMaxAttempts = "max_attempts"
	fieldDeadLetterReportFor   = "report_for"

	fieldOrdering       = "ordering"
	fieldMaxHeldRecords = "max_held_records"
)

// The values of ordering.
const (
	orderingNone = "none"
	orderingKey  = "key"
)

// defaultMaxAttempts is dead_letter.max_attempts's default.
const defaultMaxAttempts = 5

// Enum values.
const (
	startEarliest  = "earliest"
	startLatest    = "latest"
	startCommitted = "committed"

	protocolClassic  = "classic"
	protocolConsumer = "consumer"

	isolationUncommitted = "read_uncommitted"
	isolationCommitted   = "read_committed"

	saslPlain       = "PLAIN"
	saslScram256    = "SCRAM-SHA-256"
	saslScram512    = "SCRAM-SHA-512"
	saslOAuthBearer = "OAUTHBEARER"
	saslNone        = "none"
	// Accepted by the enum only so that lint names them with what to use
	// instead: neither is built into this input.
	saslAWSMSKIAM       = "AWS_MSK_IAM"
	saslRedpandaCloudSA = "REDPANDA_CLOUD_SERVICE_ACCOUNT"
)

// InputName is the name the input is registered under.
const InputName = "kafka_watermark"

// ConfigSpec returns the configuration specification of the kafka_watermark
// input.
func ConfigSpec() *service.ConfigSpec {
	// The lint rules call these methods, and Benthos parses a rule when it is
	// set: register them first. Registering can fail only on a name taken,
	// which registerLintMethods, called once, never does.
	if err := registerLintMethods(); err != nil {
		panic(err)
	}
	return service.NewConfigSpec().
		Beta().
		Categories("Services").
		Summary("Consumes Kafka topics in a consumer group and commits offsets only through the contiguous delivered watermark.").
		Description(`
Every batch this input hands to the pipeline holds records of one partition and is registered with that
partition's tracker before it leaves the input. Sinks may acknowledge batches in any order; the input commits, for
each partition, one past the last offset of the longest prefix of successfully acknowledged batches. A batch that
is still in flight holds the commit back; a batch that fails (a nack) stalls its partition's watermark for the life
of the assignment, so an offset is never committed past unacknowledged or failed data. After a restart or a
reassignment the partition resumes from the watermark, and the failed batch is delivered again (at-least-once).

Every commit also carries, in its offset commit metadata, the ranges of batches above the committed offset that were
already delivered; whoever is assigned the partition next skips them, so a restart or a rebalance delivers again only
what was not delivered.

A stalled partition keeps delivering until `+"`max_pending_batches`"+` batches are outstanding, then pauses;
other partitions are not affected. Route failures you do not want to replay to a dead-letter output with a
`+"`fallback`"+` output, so that the sink acknowledges them and the watermark moves on.

### Metadata

Each message carries, as Redpanda Connect's redpanda input sets them, `+"`kafka_key` (bytes), `kafka_topic`, "+
			"`kafka_partition`, `kafka_offset`, `kafka_lag`, `kafka_timestamp_unix`, `kafka_timestamp_ms`, "+
			"`kafka_tombstone_message`"+`, every record header under its own key (a string), and all headers under
`+"`__rpcn_kafka_headers`"+`.

### Metrics

Labelled by topic and partition: `+"`kafka_watermark_committed_offset`, `kafka_watermark_pending_batches`, "+
			"`kafka_watermark_stalled`, `kafka_watermark_paused`, `kafka_watermark_age_seconds`, `kafka_watermark_lag`, "+
			"`kafka_watermark_commits_total`, `kafka_watermark_commit_errors_total`, "+
			"`kafka_watermark_late_acks_total`, `kafka_watermark_duplicate_acks_total`, "+
			"`kafka_watermark_replay_exposure_records`, `kafka_watermark_skipped_records_total`, "+
			"`kafka_watermark_commit_metadata_truncated_total`"+`; and the timer
`+"`kafka_watermark_commit_latency_ns`"+` (nanoseconds, as every Benthos timer).`).
		Fields(
			service.NewStringListField(fieldSeedBrokers).LintRule(fieldRule(fieldSeedBrokers)).
				Description("Addresses of Kafka brokers to connect to first. An entry may hold several comma-separated addresses. Required: unlike the redpanda input, this input never falls back to a global `redpanda` block.").
				Example([]string{"localhost:9092"}).
				Example([]string{"foo:9092", "bar:9092"}),
			service.NewStringListField(fieldTopics).
				Description("Topics to consume. With `regexp_topics`, each entry is a regular expression. As in the redpanda input, an entry may hold several comma-separated topics (`foo,bar`, blanks trimmed), so a pattern cannot contain a comma. An entry with explicit partitions (`foo:0`, `foo:0-10`, `foo:0:10`) is rejected: this input is a group consumer, the group assigns partitions. Either `topics` or `regexp_topics_include` is required.").
				Example([]string{"orders"}).
				Example([]string{"orders,payments"}).
				Optional(),
			service.NewBoolField(fieldRegexpTopics).
				Description("Treat each entry of `topics` as a regular expression and consume every matching topic.").
				Default(false),
			service.NewStringListField(fieldRegexpTopicsInclude).
				Description("Regular expressions of topics to consume, as in the redpanda input: this turns on regular expression mode with these patterns (comma-separated in an entry, as `topics`), and cannot be used together with `topics`. New matching topics are seen every `metadata_max_age`.").
				Example([]string{"logs_.*", "metrics_.*"}).
				Optional(),
			service.NewStringListField(fieldRegexpTopicsExclude).
				Description("In regular expression mode (`regexp_topics` or `regexp_topics_include`), topics matching any of these regular expressions are not consumed, even if they match a pattern to consume. Rejected outside regular expression mode, as in the redpanda input.").
				Example([]string{"_internal$"}).
				Optional(),
			service.NewStringField(fieldConsumerGroup).LintRule(fieldRule(fieldConsumerGroup)).
				Description("The consumer group to join. Offsets are committed for this group."),
			service.NewStringField(fieldClientID).
				Description("The client identifier the broker sees.").
				Default("watermark-connect").Advanced(),
			service.NewStringField(fieldRackID).
				Description("A rack identifier for this client, for rack-aware fetching.").
				Default("").Advanced(),
			service.NewStringField(fieldInstanceID).
				Description("A static group membership identifier (KIP-345). A restart within `session_timeout` keeps the assignment instead of rebalancing.").
				Default("").Advanced(),
			service.NewStringAnnotatedEnumField(fieldStartOffset, map[string]string{
				startEarliest:  "Start from the earliest offset of a partition that has no committed offset.",
				startLatest:    "Start from the log end of a partition that has no committed offset.",
				startCommitted: "Consume only partitions that have a committed offset: any other is reported as an error and not consumed.",
			}).LintRule(fieldRule(fieldStartOffset)).
				Description("Where a partition with no committed offset starts. Only that: whatever this says, a position that falls out of the log (a commit, or a replay's rewind, below the log start after retention deleted records) resumes at the log start, so no record the log still holds is skipped, and what was deleted is reported lost.").
				Default(startEarliest),
			service.NewDurationField(fieldSessionTimeout).LintRule(fieldRule(fieldSessionTimeout)).
				Description("How long the broker waits for a heartbeat before it removes this member from the group, under `classic` (under `consumer` the broker's `group.consumer.session.timeout.ms` applies). Also how long a `classic` member keeps retrying its heartbeat while the group coordinator is unreachable, as during a broker restart, before it gives its partitions up as lost and everything after their last commit is delivered again. Under `consumer`, how long this member goes on handing out records while no heartbeat is answered (at most 45s, the broker's default `group.consumer.session.timeout.ms`): after that the broker may have given its partitions to another member, so it holds them back until the coordinator answers again. Keep it at or below the broker's setting.").
				Default("1m").Advanced(),
			service.NewDurationField(fieldRebalanceTimeout).LintRule(fieldRule(fieldRebalanceTimeout)).
				Description("How long members may take to rejoin a rebalance: the budget for draining and committing revoked partitions.").
				Default("45s").Advanced(),
			service.NewDurationField(fieldHeartbeatInterval).LintRule(fieldRule(fieldHeartbeatInterval)).
				Description("How often to heartbeat the group coordinator, under `classic` (under `consumer` the broker sets the interval).").
				Default("3s").Advanced(),
			service.NewStringField(fieldFetchMaxBytes).LintRule(fieldRule(fieldFetchMaxBytes)).
				Description("The most bytes one fetch request returns across partitions (a broker still returns a first record batch larger than this). Each broker's next fetch is read while its last one is handed out, and both are held decoded: this trades memory against read-ahead (too small, and the pipeline waits for the broker: reading a backlog of 1 KiB records on 64 partitions, 8MiB gave 0.78 to 1.00 of 50MiB's records per second). A `fetch_max_partition_bytes` above it is lowered to it. Our own default: 16MiB, where the redpanda input's is 50MiB, which 50 partitions of one broker fill: reading a backlog of 64 partitions, 50MiB took 2.6 times the peak memory (1.2 GB against 460 MB with 100 B records), and its page faults cost more CPU than the larger fetches saved.").
				Default(defaultFetchMaxBytes).Advanced(),
			service.NewStringField(fieldFetchMaxPartitionBytes).LintRule(fieldRule(fieldFetchMaxPartitionBytes)).
				Description("The most bytes one fetch request returns for one partition.").
				Default("1MiB").Advanced(),
			service.NewDurationField(fieldFetchMaxWait).LintRule(fieldRule(fieldFetchMaxWait)).
				Description("How long the broker may wait to fill a fetch.").
				Default("5s").Advanced(),
			service.NewStringField(fieldFetchMinBytes).LintRule(fieldRule(fieldFetchMinBytes)).
				Description("The fewest bytes the broker tries to return for a fetch before `fetch_max_wait` has passed (Java's `fetch.min.bytes`).").
				Default("1B").Advanced(),
			service.NewDurationField(fieldMetadataMaxAge).LintRule(fieldRule(fieldMetadataMaxAge)).
				Description("How often to refresh metadata: how quickly new partitions, and with `regexp_topics` new topics, are seen. Our own default: 5m, where the redpanda input's is 1m.").
				Default("5m").Advanced(),
			service.NewDurationField(fieldRequestTimeoutOverhead).LintRule(fieldRule(fieldRequestTimeoutOverhead)).
				Description("The time added to a request's own timeout when deadlining it (roughly Java's `request.timeout.ms`); between 100ms and 15m.").
				Default("10s").Advanced(),
			service.NewDurationField(fieldConnIdleTimeout).LintRule(fieldRule(fieldConnIdleTimeout)).
				Description("How long a broker connection may idle before it is closed; between 100ms and 15m.").
				Default("20s").Advanced(),
			service.NewDurationField(fieldTopicLagRefreshPeriod).LintRule(fieldRule(fieldTopicLagRefreshPeriod)).
				Description("How often to ask the brokers for the log end of partitions paused at `max_pending_batches`, which no fetch reports, so that their `kafka_watermark_lag` keeps moving. Other partitions learn their log end from every fetch.").
				Default("5s").Advanced(),
			service.NewStringAnnotatedEnumField(fieldIsolationLevel, map[string]string{
				isolationUncommitted: "Read every record, those of open and aborted transactions included.",
				isolationCommitted:   "Read only records of committed transactions (and non-transactional ones); the lag is measured against the last stable offset.",
			}).LintRule(fieldRule(fieldIsolationLevel)).
				Description("The transaction isolation level of fetches. At either level the transaction markers (control records) are accounted for without being delivered, so commits reach the log end past them.").
				Default(isolationUncommitted).Advanced(),
			service.NewTLSToggledField(fieldTLS),
			tcpFieldSpec("input"),
			saslFieldSpec("input"),

			service.NewDurationField(fieldCommitPeriod).LintRule(fieldRule(fieldCommitPeriod)).
				Description("How often to commit the partitions whose watermark moved. Shorter means less replay after a crash, more commit requests. Our own default: 1s, where the redpanda input's is 5s.").
				Default("1s"),
			service.NewIntField(fieldMaxPendingBatches).LintRule(fieldRule(fieldMaxPendingBatches)).
				Description("Per partition, the most batches handed to the pipeline and not yet behind the watermark. At the limit the partition's fetching pauses. This bounds memory and how much a crash replays, at the cost of throughput for slow sinks.").
				Default(defaultMaxPending),
			service.NewIntField(fieldBatchMaxRecords).LintRule(fieldRule(fieldBatchMaxRecords)).
				Description("The most records in one batch. A batch holds records of one partition only, and is the unit of acknowledgement and of replay.").
				Default(1024).Advanced(),
			service.NewStringField(fieldBatchMaxBytes).LintRule(fieldRule(fieldBatchMaxBytes)).
				Description("The most record bytes (keys, values, headers) in one batch; a single larger record still makes a batch of its own.").
				Default(defaultBatchMaxBytes).Advanced(),
			service.NewDurationField(fieldDrainTimeout).LintRule(fieldRule(fieldDrainTimeout)).
				Description("On a revoke, how long to wait for the revoked partitions' in-flight batches before committing their final watermark; also the bound on the final commit at shutdown. Must be below `rebalance_timeout`.").
				Default("10s").Advanced(),
			service.NewStringAnnotatedEnumField(fieldGroupProtocol, map[string]string{
				protocolClassic:  "The classic protocol with the cooperative-sticky balancer.",
				protocolConsumer: "The KIP-848 consumer protocol: the broker assigns partitions (Kafka 4.0+).",
			}).LintRule(fieldRule(fieldGroupProtocol)).
				Description("The consumer group protocol.").
				Default(protocolClassic).Advanced(),
			service.NewObjectField(fieldNackRetry,
				service.NewIntField(fieldNackMaxRetries).LintRule(fieldRule(fieldNackRetry+"."+fieldNackMaxRetries)).
					Description("How many times a nacked batch is delivered again in this process before it is declared failed. 0 declares it failed at once; -1 retries without limit (a sink that is down for an hour and comes back loses nothing and re-delivers nothing but the retried batch). When the nack is a batch error that names the failed messages, a retry re-delivers only those.").
					Default(0),
				service.NewDurationField(fieldNackInitialBack).LintRule(fieldRule(fieldNackRetry+"."+fieldNackInitialBack)).
					Description("The wait before the first retry; it doubles on each further retry.").
					Default("500ms"),
				service.NewDurationField(fieldNackMaxBack).LintRule(fieldRule(fieldNackRetry+"."+fieldNackMaxBack)).
					Description("The longest wait between retries.").
					Default("10s"),
			).
				Description("An optional bounded retry of a nacked batch, before it stalls its partition. While a batch is being retried it holds the watermark like any pending batch.").
				Advanced(),
			service.NewDurationField(fieldStallReplayAfter).LintRule(fieldRule(fieldStallReplayAfter)).
				Description("When a partition's head batch has failed for good (after its `nack_retry` retries) for this long, replay the partition in place: end its assignment epoch and read it again from its watermark, in this process, without a rebalance, delivering again only what was not delivered. Consecutive replays stalled at the same offset wait twice as long each time, up to 16 times this. `0s` never replays: the partition stays stalled until a restart or a reassignment.").
				Default("1m"),
			service.NewBoolField(fieldCommitMetadata).
				Description("Write, in every commit's offset metadata, which batches above the committed offset were already delivered, and skip them when a partition is assigned (after a restart, a crash or a rebalance): only what was not delivered is delivered again. Only delivered batches are ever written; metadata this input did not write is ignored. `false` commits kgo's member ID as metadata and skips nothing.").
				Default(true),
			service.NewIntField(fieldCommitMetadataMaxBytes).LintRule(fieldRule(fieldCommitMetadataMaxBytes)).
				Description("The most bytes of metadata one partition's commit carries, from 64. The broker refuses more than its `offset.metadata.max.bytes` (4096 by default); when the delivered ranges do not fit, those nearest the committed offset are kept (and the cut counted). A stalled partition's commit always says so: when the whole stall provenance does not fit, it carries the stall's mark, `sf=<first offset>` alone (the longest header and mark take 61 bytes). If a broker refuses metadata anyway, the partition is committed again at once without it, and the size halves, but not below 61 bytes until the broker refuses that much too.").
				Default(4000).Advanced(),
			service.NewDurationField(fieldLostRecordsReportFor).LintRule(fieldRule(fieldLostRecordsReportFor)).
				Description("How long a partition's commits carry a report of records Kafka deleted or rewrote before they were delivered (retention passing a stalled watermark, an unclean leader election), so that a restart, another member and `watermark-connect status` see the loss too. Each loss is also logged once at ERROR and counted in `kafka_watermark_lost_records_total`. `0s` carries nothing in the commits.").
				Default("24h").Advanced(),
			service.NewStringAnnotatedEnumField(fieldOrdering, map[string]string{
				orderingNone: "A partition's batches go out as they are fetched, and may be delivered in any order: the commit still never passes an undelivered record.",
				orderingKey:  "Within a partition, a record is never handed out while an earlier record with the same key is in another batch handed out and not yet delivered or dead-lettered; records of other keys go on past it, out of offset order. Keys are compared as bytes; an empty key is a key; a record with a null key stands alone. A batch may hold several records of one key, in log order: the pipeline must keep a batch's order for them.",
			}).LintRule(fieldRule(fieldOrdering)).
				Description("How records of one partition may be reordered between batches in flight.").
				Default(orderingNone),
			service.NewIntField(fieldMaxHeldRecords).LintRule(fieldRule(fieldMaxHeldRecords)).
				Description("Under `ordering: key`, the most records per partition fetched and waiting for their key; past it the partition's fetching pauses, every key included. At least 1.").
				Default(10000).Advanced(),
			service.NewObjectField(fieldDeadLetter,
				service.NewInterpolatedStringField(fieldDeadLetterTopic).
					Description("The topic, on the same cluster, that a record goes to once it was delivered `max_attempts` times without success; empty (the default) turns dead-lettering off. Evaluated once per record, on the record as the input built it (before any processor), so every attempt goes to the same place; an evaluation error counts as a failed write. The record keeps its key, value, timestamp and headers, with `dead_letter_*` headers saying where it came from and why. Only once the broker has acknowledged the write (acks all, idempotent producer) does the record count as delivered and the watermark pass it; a write that fails is retried with backoff while the partition stays stalled. A topic this input consumes is refused.").
					Default(""),
				service.NewIntField(fieldDeadLetterMaxAttempts).LintRule(fieldRule(fieldDeadLetter+"."+fieldDeadLetterMaxAttempts)).
					Description("How many times a record is delivered before it is dead-lettered, counting in-process retries (`nack_retry`), replays in place (`stall_replay_after`) and deliveries after a restart or a rebalance: the attempts are carried in the commit metadata. At least 1. With `stall_replay_after: 0s`, a batch whose `nack_retry` retries are spent is dead-lettered then, even below this: nothing else would try it again.").
					Default(defaultMaxAttempts),
				service.NewDurationField(fieldDeadLetterReportFor).LintRule(fieldRule(fieldDeadLetter+"."+fieldDeadLetterReportFor)).
					Description("How long a partition's commits carry the last dead-letter event (merged with those before it), for `watermark-connect status`. `0s` carries nothing.").
					Default("24h").Advanced(),
			).
				Description("Dead-letter topic: the ending of a stall. A record the sink never accepts is retried, then written to this topic and committed past, never lost: nothing is committed past a record that reached neither the sink nor the dead-letter topic. Needs `commit_metadata: true`."),
			service.NewBoolField(fieldExactlyOnce).
				Description("Make this input's client transactional, so that a `kafka_watermark` output bound to this consumer group (its `exactly_once.consumer_group`) writes inside Kafka transactions that also commit this input's offsets and delivered ranges: a `read_committed` reader of the output sees every input record's outputs exactly once, across crashes, restarts, rebalances and output errors. Every `commit_period` the input stops handing out batches until the pipeline is empty, then commits the transaction; a nacked batch aborts it and every partition goes back to its last commit, in place. Needs `commit_metadata: true`.").
				Default(false),
			service.NewStringField(fieldTransactionalID).
				Description("The transactional id of this member's producer under `exactly_once`. Empty (the default) derives one from the consumer group and a stable identity of this member: `instance_id` if set, else the host name (`wmc-<group>-<identity>`). A member restarted with the same id aborts its predecessor's open transaction at once; with another id, that transaction holds `read_committed` readers of the output until `transaction_timeout` passes. Two members running at once must not share one: the second fences the first.").
				Default("").Advanced(),
			service.NewDurationField(fieldTransactionTimeout).LintRule(fieldRule(fieldTransactionTimeout)).
				Description("How long the broker lets a transaction stay open before it aborts it (the producer's `transaction.timeout.ms`; at most the broker's `transaction.max.timeout.ms`, 15m by default). After a crash under an id that is not reused, `read_committed` readers of the output wait up to this long. Must be above `commit_period`.").
				Default("1m").Advanced(),
		).
		Fields(redpandaFields()...).
		LintRule(lintRule).
		Example("Out-of-order sink",
			"An HTTP sink with many requests in flight acknowledges batches out of order; commits still never pass an unacknowledged batch.",
			`
input:
  kafka_watermark:
    seed_brokers: [ localhost:9092 ]
    topics: [ orders ]
    consumer_group: orders-to-http
output:
  http_client:
    url: http://localhost:8080/ingest
    verb: POST
    max_in_flight: 64
`)
}
