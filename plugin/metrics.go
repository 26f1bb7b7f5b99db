package plugin

import (
	"strconv"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// Metric names. Every series is labelled by topic and partition; Benthos adds
// its own labels (label, path, stream) so two inputs never share a series.
const (
	metricCommitted     = "kafka_watermark_committed_offset"
	metricPending       = "kafka_watermark_pending_batches"
	metricStalled       = "kafka_watermark_stalled"
	metricPaused        = "kafka_watermark_paused"
	metricAge           = "kafka_watermark_age_seconds"
	metricLag           = "kafka_watermark_lag"
	metricCommits       = "kafka_watermark_commits_total"
	metricCommitErrors  = "kafka_watermark_commit_errors_total"
	metricCommitLatency = "kafka_watermark_commit_latency_seconds"
	metricLateAcks      = "kafka_watermark_late_acks_total"
	metricDuplicateAcks = "kafka_watermark_duplicate_acks_total"
)

// metrics holds the input's metric handles. Benthos metric handles are safe
// for concurrent use, so ack goroutines may count duplicates directly.
type metrics struct {
	committed, pending, stalled, paused, age, lag *service.MetricGauge
	commits, commitErrors, lateAcks, dupAcks      *service.MetricCounter
	commitLatency                                 *service.MetricTimer
}

func newMetrics(m *service.Metrics) *metrics {
	l := []string{"topic", "partition"}
	return &metrics{
		committed:     m.NewGauge(metricCommitted, l...),
		pending:       m.NewGauge(metricPending, l...),
		stalled:       m.NewGauge(metricStalled, l...),
		paused:        m.NewGauge(metricPaused, l...),
		age:           m.NewGauge(metricAge, l...),
		lag:           m.NewGauge(metricLag, l...),
		commits:       m.NewCounter(metricCommits, l...),
		commitErrors:  m.NewCounter(metricCommitErrors, l...),
		lateAcks:      m.NewCounter(metricLateAcks, l...),
		dupAcks:       m.NewCounter(metricDuplicateAcks, l...),
		commitLatency: m.NewTimer(metricCommitLatency),
	}
}

// labels returns the label values of a partition, formatted once.
func labels(t topicPartition) [2]string {
	return [2]string{t.topic, strconv.Itoa(int(t.partition))}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// publish sets the gauges of one live partition. Called by the owner on each
// commit tick, so gauges lag reality by at most commit_period.
func (m *metrics) publish(p *partState, now time.Time) {
	l := p.labels
	m.pending.Set(int64(p.tracker.Pending()), l[0], l[1])
	m.stalled.Set(b2i(p.tracker.Stalled()), l[0], l[1])
	m.paused.Set(b2i(p.paused), l[0], l[1])
	m.age.Set(int64(p.watermarkAge(now)/time.Second), l[0], l[1])
	if base, ok := p.resumePoint(); ok && p.highWatermark >= 0 {
		m.lag.Set(max(p.highWatermark-base, 0), l[0], l[1])
	}
}

// retire zeroes the state gauges of a partition this member no longer owns,
// so a revoked partition does not keep alerting from a stale series.
func (m *metrics) retire(p *partState) {
	l := p.labels
	m.pending.Set(0, l[0], l[1])
	m.stalled.Set(0, l[0], l[1])
	m.paused.Set(0, l[0], l[1])
	m.age.Set(0, l[0], l[1])
}
