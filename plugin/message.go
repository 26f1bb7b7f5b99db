package plugin

import (
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Metadata keys, named as Redpanda Connect's kafka inputs name them so
// pipelines port unchanged.
const (
	metaKey       = "kafka_key"
	metaTopic     = "kafka_topic"
	metaPartition = "kafka_partition"
	metaOffset    = "kafka_offset"
	metaTSUnix    = "kafka_timestamp_unix"
	metaTSMs      = "kafka_timestamp_ms"
	metaTombstone = "kafka_tombstone_message"
)

// RecordsToBatch converts records into a Benthos batch with Redpanda
// Connect's metadata. Values that are the same for every record of a
// partition (topic, partition) are boxed once per batch rather than once per
// message: setting metadata is most of the cost of this function. It is safe
// for concurrent use on distinct slices.
func RecordsToBatch(records []*kgo.Record) service.MessageBatch {
	batch := make(service.MessageBatch, len(records))
	if len(records) == 0 {
		return batch
	}
	var topic, partition any = records[0].Topic, int(records[0].Partition)
	for i, r := range records {
		m := service.NewMessage(r.Value)
		m.MetaSetMut(metaKey, string(r.Key))
		m.MetaSetMut(metaTopic, topic)
		m.MetaSetMut(metaPartition, partition)
		m.MetaSetMut(metaOffset, int(r.Offset))
		m.MetaSetMut(metaTSUnix, r.Timestamp.Unix())
		m.MetaSetMut(metaTSMs, r.Timestamp.UnixMilli())
		m.MetaSetMut(metaTombstone, r.Value == nil)
		for _, h := range r.Headers {
			m.MetaSetMut(h.Key, string(h.Value))
		}
		batch[i] = m
	}
	return batch
}
