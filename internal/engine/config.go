package engine

import "time"

// Config is what the engine needs of the input's configuration: its batching,
// commit, retry, drain and reporting settings. The plugin parses and
// validates the user's config and fills it in; the engine trusts it. A plain
// value, copied into the owner at New and never changed after (but for
// what the DeadLetter writer holds).
type Config struct {
	// ClientID names this member in stall provenance (memberName).
	ClientID string
	// ConsumerProtocol is true under group_protocol: consumer (KIP-848),
	// which needs the heartbeat fence (fence.go); SessionTimeout bounds it.
	ConsumerProtocol bool
	SessionTimeout   time.Duration
	// RebalanceTimeout bounds a revoke's drain and final commit together.
	RebalanceTimeout time.Duration
	// ReadCommitted: a partition's log end is its last stable offset.
	ReadCommitted bool

	// Batching: records and bytes per batch; batches handed out and
	// unresolved per partition before its fetching pauses.
	BatchMaxRecords int
	BatchMaxBytes   int64
	MaxPending      int

	// Commits: the period, and the delivered ranges in the metadata.
	CommitPeriod           time.Duration
	CommitMetadata         bool
	CommitMetadataMaxBytes int

	// Failures: in-process retries of a nack (NackRetries < 0: no limit)
	// and their backoff; the replay in place of a stalled partition (0: never).
	NackRetries      int
	NackBackoff      time.Duration
	NackMaxBackoff   time.Duration
	StallReplayAfter time.Duration

	// Dead letters (deadletter.go): the writer (nil: no dead-letter
	// topic), the attempts a record gets before it is dead-lettered, and
	// how long commits carry the last dead-letter event.
	DeadLetter          DeadLetterWriter
	MaxAttempts         int
	DeadLetterReportFor time.Duration

	// Ordering: key (keyed.go) holds a record back while an earlier record
	// of its key is out; MaxHeldRecords bounds what is held per partition.
	OrderingKey    bool
	MaxHeldRecords int

	// Txn, under exactly_once, ends the transactions whose commits are
	// the group's (txn.go); nil is at least once.
	Txn Transactor

	// DrainTimeout bounds a revoke's and a close's wait for acks.
	DrainTimeout time.Duration
	// LostReportFor is how long commits carry a loss (loss.go).
	LostReportFor time.Duration
	// TopicLagRefresh and MetadataMaxAge pace the log-end queries of paused
	// and stalled partitions, and the retention descriptions.
	TopicLagRefresh time.Duration
	MetadataMaxAge  time.Duration
}

// The names of the input's fields that the engine's log lines quote; the
// plugin's spec test checks that each is a field of the input.
const (
	FieldCommitMetadataMaxBytes = "commit_metadata_max_bytes"
	FieldSessionTimeout         = "session_timeout"
)
