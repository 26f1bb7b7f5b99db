package plugin

import (
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/kafkamsg"
)

// RecordsToBatch converts records of one partition into a Benthos batch with
// Redpanda Connect's metadata (kafka_key, kafka_topic, kafka_partition,
// kafka_offset, kafka_lag, kafka_timestamp_unix, kafka_timestamp_ms,
// kafka_tombstone_message, each header under its own key, and
// __rpcn_kafka_headers). logEnd is the partition's log end when the records
// were fetched, from which each message's kafka_lag is computed; -1 when
// unknown. Safe for concurrent use on distinct slices.
func RecordsToBatch(records []*kgo.Record, logEnd int64) service.MessageBatch {
	return kafkamsg.RecordsToBatch(records, logEnd)
}
