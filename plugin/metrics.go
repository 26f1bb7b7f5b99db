package plugin

import (
	"strconv"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// Metric names. Every series is labelled by topic and partition; Benthos adds
// its own labels (label, path, stream) so two inputs never share a series.
const (
	metricCommitted    = "kafka_watermark_committed_offset"
	metricPending      = "kafka_watermark_pending_batches"
	metricStalled      = "kafka_watermark_stalled"
	metricPaused       = "kafka_watermark_paused"
	metricAge          = "kafka_watermark_age_seconds"
	metricLag          = "kafka_watermark_lag"
	metricCommits      = "kafka_watermark_commits_total"
	metricCommitErrors = "kafka_watermark_commit_errors_total"
	// A Benthos timer is in nanoseconds and named _ns by convention; exporters
	// that convert (ours turns _ns into _seconds) then show the right unit.
	metricCommitLatency = "kafka_watermark_commit_latency_ns"
	metricLateAcks      = "kafka_watermark_late_acks_total"
	metricDuplicateAcks = "kafka_watermark_duplicate_acks_total"
	metricMetaTruncated = "kafka_watermark_commit_metadata_truncated_total"
	metricSkipped       = "kafka_watermark_skipped_records_total"
	metricExposure      = "kafka_watermark_replay_exposure_records"
	metricStallReplays  = "kafka_watermark_stall_replays_total"
	metricLostRecords   = "kafka_watermark_lost_records_total"
	metricTruncated     = "kafka_watermark_truncated_records_total"
	metricHeadroom      = "kafka_watermark_retention_headroom_seconds"
	metricRetention     = "kafka_watermark_retention_seconds"
)

// metrics holds the input's metric handles. Benthos metric handles are safe
// for concurrent use, so ack goroutines may count duplicates directly.
type metrics struct {
	committed, pending, stalled, paused, age, lag, exposure *service.MetricGauge
	headroom, retention                                     *service.MetricGauge
	commits, commitErrors, lateAcks, dupAcks                *service.MetricCounter
	metaTruncated, skipped, stallReplays                    *service.MetricCounter
	lostRecords, truncatedRecords                           *service.MetricCounter
	commitLatency                                           *service.MetricTimer
}

func newMetrics(m *service.Metrics) *metrics {
	l := []string{"topic", "partition"}
	return &metrics{
		committed:        m.NewGauge(metricCommitted, l...),
		pending:          m.NewGauge(metricPending, l...),
		stalled:          m.NewGauge(metricStalled, l...),
		paused:           m.NewGauge(metricPaused, l...),
		age:              m.NewGauge(metricAge, l...),
		lag:              m.NewGauge(metricLag, l...),
		exposure:         m.NewGauge(metricExposure, l...),
		headroom:         m.NewGauge(metricHeadroom, l...),
		retention:        m.NewGauge(metricRetention, l...),
		metaTruncated:    m.NewCounter(metricMetaTruncated, l...),
		skipped:          m.NewCounter(metricSkipped, l...),
		stallReplays:     m.NewCounter(metricStallReplays, l...),
		lostRecords:      m.NewCounter(metricLostRecords, l...),
		truncatedRecords: m.NewCounter(metricTruncated, l...),
		commits:          m.NewCounter(metricCommits, l...),
		commitErrors:     m.NewCounter(metricCommitErrors, l...),
		lateAcks:         m.NewCounter(metricLateAcks, l...),
		dupAcks:          m.NewCounter(metricDuplicateAcks, l...),
		commitLatency:    m.NewTimer(metricCommitLatency),
	}
}

// labels returns the label values of a partition, formatted once.
func labels(t topicPartition) [2]string {
	return [2]string{t.topic, strconv.Itoa(int(t.partition))}
}
