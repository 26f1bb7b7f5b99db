package plugin

import (
	"fmt"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// ShareInputName is the name the share group input is registered under.
const ShareInputName = "kafka_share"

// The kafka_share input's own fields; the others are kafka_watermark's
// names (spec.go), with the same meaning.
const (
	fieldShareGroup = "share_group"
	fieldMembers    = "members"
)

// Defaults and bounds of kafka_share's fields.
const (
	// defaultShareBatchMaxRecords is kgo's and Kafka's share fetch default
	// (kgo.ShareMaxRecords, 500), not kafka_watermark's 1024: a member holds
	// what one poll returns until every record of it has a verdict, and the
	// broker caps the records locked per partition
	// (group.share.partition.max.record.locks, 2000 by default) across all
	// members, so smaller polls spread a partition over more members.
	defaultShareBatchMaxRecords = 500
	defaultMembers              = 4
	maxMembers                  = 64
)

// The values of kafka_share's start_offset: kafka_watermark's first two.
// Unset, the group's share.auto.offset.reset is left as it is.

// shareFieldChecks holds the field checks (check.go) of kafka_share, by
// dotted path. Lint and start run them both.
var shareFieldChecks = map[string]fieldCheck{
	fieldSeedBrokers: checkBrokers(msgNoBrokers),
	fieldShareGroup:  checkNotEmpty("a share group name is required"),
	fieldStartOffset: checkOneOf(startEarliest, startLatest),

	fieldMembers:         checkIntBetween(1, maxMembers),
	fieldBatchMaxRecords: checkIntBetween(1, maxInt32),
	fieldBatchMaxBytes:   checkByteSize,
	// At least 1; at most the group's delivery limit, which only the
	// broker knows: Connect checks that.
	fieldDeadLetter + "." + fieldDeadLetterMaxAttempts: checkAtLeast(1, "at least 1 (and at most the share group's delivery count limit)"),
	fieldDeadLetter + "." + fieldDeadLetterReportFor:   checkNotNegative("0s (status does not look) or positive"),

	fieldMetadataMaxAge:         checkPositive,
	fieldRequestTimeoutOverhead: checkDurationBetween(100*time.Millisecond, 15*time.Minute),
	fieldConnIdleTimeout:        checkDurationBetween(100*time.Millisecond, 15*time.Minute),
}

// shareRequiredFields are checked when absent too.
var shareRequiredFields = map[string]bool{fieldSeedBrokers: true, fieldShareGroup: true}

// checkIntBetween: a whole number from lo to hi.
func checkIntBetween(lo, hi int) fieldCheck {
	return func(path string, v any) error {
		n, err := intOf(path, v)
		if err == nil && (n < lo || n > hi) {
			err = fmt.Errorf("%s (%d) must be between %d and %d", path, n, lo, hi)
		}
		return err
	}
}

// shareFieldRule is fieldRule for kafka_share's field at path.
func shareFieldRule(path string) string {
	return fmt.Sprintf("root = this.%s(%q)", methodShareCheckField, path)
}

// ShareConfigSpec returns the configuration specification of the
// kafka_share input.
func ShareConfigSpec() *service.ConfigSpec {
	if err := registerLintMethods(); err != nil {
		panic(err)
	}
	return service.NewConfigSpec().
		Beta().
		Categories("Services").
		Summary("Consumes Kafka topics in a share group (KIP-932, Kafka 4.2+): a work queue where an ack accepts a record and a nack releases it for another delivery.").
		Description(`
Many members of a share group read one partition; the broker hands each record to one member under a lock and
counts its deliveries. A message this input hands out is accepted when the pipeline acknowledges it, released for
another delivery (maybe to another member, maybe out of order) when the pipeline fails it, and, when it fails at its
last attempt, written to the dead-letter topic and accepted only once the broker acknowledged the write, or
rejected with an ERROR log line and a count when there is no dead-letter topic. A `+"`*service.BatchError`"+` settles each
message by its own verdict. No record is archived by the group's delivery limit without this input having said so.

There is no order and no commit: choose `+"`kafka_watermark`"+` when order within a partition or offsets matter, this input
to scale a work queue past the partition count. Redpanda brokers do not implement share groups.

The input runs `+"`members`"+` members; each polls again only once every record of its previous poll has a verdict
(kgo would accept the rest at the next poll), so up to `+"`members`"+` polls of `+"`batch_max_records`"+` are in flight.
Records held longer than half the group's lock duration are renewed (Kafka 4.2+).

### Metadata

As `+"`kafka_watermark`"+`: `+"`kafka_key`, `kafka_topic`, `kafka_partition`, `kafka_offset`, `kafka_timestamp_unix`, "+
			"`kafka_timestamp_ms`, `kafka_tombstone_message`"+`, the headers, and `+"`kafka_delivery_attempt`"+` from the second
delivery on (the broker's delivery count; absent means 1); and `+"`kafka_share_group`"+`. Not `+"`kafka_lag`"+`: a share fetch
reports no log end, and a lag of 0 would be wrong.

### Metrics

`+"`kafka_share_records_total{verdict}`, `kafka_share_lock_renewals_total`, `kafka_share_lock_expired_total`, "+
			"`kafka_share_ack_errors_total`, `kafka_share_in_flight_records`"+`.`).
		Fields(
			service.NewStringListField(fieldSeedBrokers).LintRule(shareFieldRule(fieldSeedBrokers)).
				Description("Addresses of Kafka brokers to connect to first. An entry may hold several comma-separated addresses.").
				Example([]string{"localhost:9092"}),
			service.NewStringListField(fieldTopics).
				Description("Topics to consume; an entry may hold several comma-separated topics.").
				Example([]string{"orders"}),
			service.NewStringField(fieldShareGroup).LintRule(shareFieldRule(fieldShareGroup)).
				Description("The share group to join."),
			service.NewStringField(fieldClientID).
				Description("The client identifier the broker sees.").
				Default("watermark-connect").Advanced(),
			service.NewStringField(fieldRackID).
				Description("A rack identifier for this client, for rack-aware fetching.").
				Default("").Advanced(),
			service.NewStringAnnotatedEnumField(fieldStartOffset, map[string]string{
				startEarliest: "A share-partition the group starts reading begins at the log start.",
				startLatest:   "A share-partition the group starts reading begins at the log end.",
			}).LintRule(shareFieldRule(fieldStartOffset)).
				Description("Sets the group's `share.auto.offset.reset` (IncrementalAlterConfigs on the GROUP resource: the ALTER_CONFIGS operation on the group, where ACLs are on) at every connect. It applies only to share-partitions the group has not started reading. Left out, the group's setting is left as it is; a group never set starts at the log end (Kafka's default), so records already in the topic are not read.").
				Optional(),
			service.NewIntField(fieldMembers).LintRule(shareFieldRule(fieldMembers)).
				Description("How many share group members (kgo clients, each with its own connections and share sessions) this input runs. A member polls again only when every record of its previous poll has a verdict, so this is how many polls the pipeline may have in flight at once.").
				Default(defaultMembers),
			service.NewIntField(fieldBatchMaxRecords).LintRule(shareFieldRule(fieldBatchMaxRecords)).
				Description("The most records one poll of one member acquires (kgo.ShareMaxRecords, strict), which is also the most records in one batch.").
				Default(defaultShareBatchMaxRecords).Advanced(),
			service.NewStringField(fieldBatchMaxBytes).LintRule(shareFieldRule(fieldBatchMaxBytes)).
				Description("The most record bytes (keys, values, headers) in one batch: a poll is cut into batches at this size; a single larger record makes a batch of its own.").
				Default(defaultBatchMaxBytes).Advanced(),
			service.NewDurationField(fieldMetadataMaxAge).LintRule(shareFieldRule(fieldMetadataMaxAge)).
				Description("How often to refresh metadata.").
				Default("5m").Advanced(),
			service.NewDurationField(fieldRequestTimeoutOverhead).LintRule(shareFieldRule(fieldRequestTimeoutOverhead)).
				Description("The time added to a request's own timeout when deadlining it; between 100ms and 15m.").
				Default("10s").Advanced(),
			service.NewDurationField(fieldConnIdleTimeout).LintRule(shareFieldRule(fieldConnIdleTimeout)).
				Description("How long a broker connection may idle before it is closed; between 100ms and 15m. The broker releases every record a member holds when its connection closes, so held records are renewed at least every half of this.").
				Default("20s").Advanced(),
			service.NewTLSToggledField(fieldTLS),
			tcpFieldSpec("input"),
			saslFieldSpec("input"),
			service.NewObjectField(fieldDeadLetter,
				service.NewInterpolatedStringField(fieldDeadLetterTopic).
					Description("The topic, on the same cluster, that a record goes to when it fails at its last attempt; empty (the default) rejects such a record instead (the broker archives it), with an ERROR log line. Evaluated once per record on the record as the input built it; a topic this input consumes is refused. The record is accepted only once the broker acknowledged the write (acks all, idempotent producer); a write that fails is tried again with backoff while the record's lock is renewed.").
					Default(""),
				service.NewIntField(fieldDeadLetterMaxAttempts).LintRule(shareFieldRule(fieldDeadLetter+"."+fieldDeadLetterMaxAttempts)).
					Description("The delivery attempt (the broker's delivery count) at which a failed record is dead-lettered or rejected instead of released. Left out: the group's delivery count limit (`share.delivery.count.limit`, else the broker's `group.share.delivery.count.limit`, 5 by default), read at connect. More than that limit is refused at connect: the broker archives a record released at its limit, in silence.").
					Optional(),
				service.NewDurationField(fieldDeadLetterReportFor).LintRule(shareFieldRule(fieldDeadLetter+"."+fieldDeadLetterReportFor)).
					Description("How far back `watermark-connect status --share-group` looks in the dead-letter topic for this group's dead letters (each carries the `dead_letter_share_group` header), to show how many there were and the last. A share group commits no offsets, so the report lives in the dead-letter topic itself; the input does not read this. `0s`: status does not look.").
					Default("24h").Advanced(),
			).
				Description("What becomes of a record that fails at its last attempt."),
		).
		LintRule(shareLintRule).
		Example("A work queue into an HTTP sink",
			"Four members of the share group `orders-workers` in this process; run more processes to scale past the partition count. Failed requests are released and retried, maybe by another process; at the fifth attempt they go to `orders-dlq`.",
			`
input:
  kafka_share:
    seed_brokers: [ localhost:9092 ]
    topics: [ orders ]
    share_group: orders-workers
    start_offset: earliest
    dead_letter:
      topic: orders-dlq
output:
  http_client:
    url: http://localhost:8080/ingest
    verb: POST
    max_in_flight: 16
`)
}
