package deadletter

// Header names: a contract with users and scripts.
const (
	Prefix              = "dead_letter_"
	HeaderTopic         = "dead_letter_topic"           // origin topic, plain text
	HeaderPartition     = "dead_letter_partition"       // decimal ASCII
	HeaderOffset        = "dead_letter_offset"          // decimal
	HeaderTimestampMs   = "dead_letter_timestamp_ms"    // the original record's timestamp, unix ms, decimal
	HeaderAttempts      = "dead_letter_attempts"        // decimal >= 1
	HeaderError         = "dead_letter_error"           // sanitized error class of the last failure
	HeaderFirstFailedMs = "dead_letter_first_failed_ms" // decimal unix ms
	HeaderMember        = "dead_letter_member"          // client id @ host
	HeaderRedrivenFrom  = "dead_letter_redriven_from"   // set by redrive: "<dlq topic>/<partition>/<offset>"
	// HeaderShareGroup is the share group of the kafka_share input that
	// wrote the dead letter; kafka_watermark's dead letters have none.
	HeaderShareGroup = "dead_letter_share_group"
)

// provenanceHeaders is how many headers Letter adds for every writer: the
// eight that make a record a dead letter (HeaderTopic to HeaderMember).
// A kafka_share input's letters carry shareHeaders more.
const (
	provenanceHeaders = 8
	shareHeaders      = 1 // HeaderShareGroup
)

// maxShareGroupLen is the longest share group name: a Kafka string's
// length is an int16.
const maxShareGroupLen = 1<<15 - 1

// isOurs reports whether a header key is in the dead_letter_ namespace.
func isOurs(key string) bool {
	return len(key) >= len(Prefix) && key[:len(Prefix)] == Prefix
}
