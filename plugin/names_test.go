package plugin

// The metadata keys the tests read, as RecordsToBatch sets them.
const (
	metaOffset    = "kafka_offset"
	metaPartition = "kafka_partition"
)
