package engine

import (
	"strconv"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// The metric names, exported for the tests of the plugin and the tools that
// scrape them: names and labels are a contract (README). Every series is labelled by topic and partition; Benthos adds
// its own labels (label, path, stream) so two inputs never share a series.
const (
	MetricCommitted    = "kafka_watermark_committed_offset"
	MetricPending      = "kafka_watermark_pending_batches"
	MetricStalled      = "kafka_watermark_stalled"
	MetricPaused       = "kafka_watermark_paused"
	MetricAge          = "kafka_watermark_age_seconds"
	MetricLag          = "kafka_watermark_lag"
	MetricCommits      = "kafka_watermark_commits_total"
	MetricCommitErrors = "kafka_watermark_commit_errors_total"
	// A Benthos timer is in nanoseconds and named _ns by convention; exporters
	// that convert (ours turns _ns into _seconds) then show the right unit.
	MetricCommitLatency = "kafka_watermark_commit_latency_ns"
	MetricLateAcks      = "kafka_watermark_late_acks_total"
	MetricDuplicateAcks = "kafka_watermark_duplicate_acks_total"
	MetricMetaTruncated = "kafka_watermark_commit_metadata_truncated_total"
	MetricSkipped       = "kafka_watermark_skipped_records_total"
	MetricExposure      = "kafka_watermark_replay_exposure_records"
	MetricStallReplays  = "kafka_watermark_stall_replays_total"
	MetricLostRecords   = "kafka_watermark_lost_records_total"
	MetricTruncated     = "kafka_watermark_truncated_records_total"
	MetricHeadroom      = "kafka_watermark_retention_headroom_seconds"
	MetricRetention     = "kafka_watermark_retention_seconds"
	// Dead letters: records written to the dead-letter topic, and failed
	// tries of a write to it.
	MetricDeadLettered     = "kafka_watermark_dead_lettered_records_total"
	MetricDeadLetterErrors = "kafka_watermark_dead_letter_errors_total"
	// MetricHeld is the records waiting for their key (ordering: key).
	MetricHeld = "kafka_watermark_held_records"
	// Exactly once: transactions ended, by result ("committed",
	// "aborted") and the abort's reason (Reason*, "" for a commit); the
	// records they held, by result; how long an end took.
	MetricTransactions        = "kafka_watermark_transactions_total"
	MetricTransactionRecords  = "kafka_watermark_transaction_records_total"
	MetricTransactionDuration = "kafka_watermark_transaction_duration_ns"
)

// Metrics holds the input's metric handles. Benthos metric handles are safe
// for concurrent use, so ack goroutines may count duplicates directly.
type Metrics struct {
	committed, pending, stalled, paused, age, lag, exposure *service.MetricGauge
	headroom, retention, held                               *service.MetricGauge
	commits, commitErrors, lateAcks, dupAcks                *service.MetricCounter
	metaTruncated, skipped, stallReplays                    *service.MetricCounter
	lostRecords, truncatedRecords                           *service.MetricCounter
	deadLettered, deadLetterErrors                          *service.MetricCounter
	commitLatency                                           *service.MetricTimer
	txns, txnRecords                                        *service.MetricCounter
	txnDuration                                             *service.MetricTimer
}

// NewMetrics makes the input's metrics on m, once per input.
func NewMetrics(m *service.Metrics) *Metrics {
	l := []string{"topic", "partition"}
	return &Metrics{
		committed:        m.NewGauge(MetricCommitted, l...),
		pending:          m.NewGauge(MetricPending, l...),
		stalled:          m.NewGauge(MetricStalled, l...),
		paused:           m.NewGauge(MetricPaused, l...),
		age:              m.NewGauge(MetricAge, l...),
		lag:              m.NewGauge(MetricLag, l...),
		exposure:         m.NewGauge(MetricExposure, l...),
		headroom:         m.NewGauge(MetricHeadroom, l...),
		retention:        m.NewGauge(MetricRetention, l...),
		held:             m.NewGauge(MetricHeld, l...),
		metaTruncated:    m.NewCounter(MetricMetaTruncated, l...),
		skipped:          m.NewCounter(MetricSkipped, l...),
		stallReplays:     m.NewCounter(MetricStallReplays, l...),
		lostRecords:      m.NewCounter(MetricLostRecords, l...),
		truncatedRecords: m.NewCounter(MetricTruncated, l...),
		deadLettered:     m.NewCounter(MetricDeadLettered, l...),
		deadLetterErrors: m.NewCounter(MetricDeadLetterErrors, l...),
		commits:          m.NewCounter(MetricCommits, l...),
		commitErrors:     m.NewCounter(MetricCommitErrors, l...),
		lateAcks:         m.NewCounter(MetricLateAcks, l...),
		dupAcks:          m.NewCounter(MetricDuplicateAcks, l...),
		commitLatency:    m.NewTimer(MetricCommitLatency),
		txns:             m.NewCounter(MetricTransactions, "result", "reason"),
		txnRecords:       m.NewCounter(MetricTransactionRecords, "result"),
		txnDuration:      m.NewTimer(MetricTransactionDuration),
	}
}

// labels returns the label values of a partition, formatted once.
func labels(t topicPartition) [2]string {
	return [2]string{t.topic, strconv.Itoa(int(t.partition))}
}

// txnEnded counts a transaction's end (exactly once).
func (m *Metrics) txnEnded(committed bool, reason string, records int64, took time.Duration) {
	result := "aborted"
	if committed {
		result, reason = "committed", ""
	}
	m.txns.Incr(1, result, reason)
	m.txnRecords.Incr(records, result)
	m.txnDuration.Timing(took.Nanoseconds())
}
