package plugin

import (
	"strconv"
	"sync/atomic"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/share"
)

// The kafka_share input's metric names: a contract (README).
const (
	// MetricShareRecords counts records by their verdict, labelled verdict:
	// accepted, released, rejected or dead_lettered.
	MetricShareRecords = "kafka_share_records_total"
	// MetricShareRenewals counts lock renewals given, one per record.
	MetricShareRenewals = "kafka_share_lock_renewals_total"
	// MetricShareLockExpired counts acknowledgements the broker refused
	// because it no longer held the records for this member (lock expired,
	// session ended: the records may have gone to another member), one per
	// partition of a refused request, labelled topic and partition.
	MetricShareLockExpired = "kafka_share_lock_expired_total"
	// MetricShareAckErrors counts acknowledgements that failed otherwise,
	// as MetricShareLockExpired counts.
	MetricShareAckErrors = "kafka_share_ack_errors_total"
	// MetricShareInFlight is the records held: polled and without a verdict
	// given yet.
	MetricShareInFlight = "kafka_share_in_flight_records"
)

// shareMetrics holds the input's metric handles. Safe for concurrent use:
// Benthos's handles are, and inFlightN is atomic. Two goroutines may set the
// gauge out of order; the renewal loop sets it again from inFlightN at every
// tick (syncGauge), so a stale value lasts one tick at most.
type shareMetrics struct {
	records              *service.MetricCounter // labelled verdict
	renewals             *service.MetricCounter
	lockExpired, ackErrs *service.MetricCounter
	inFlight             *service.MetricGauge
	inFlightN            atomic.Int64 // the records held; the gauge follows it
	// renewedN counts renewals as renewals does, for tests to wait on
	// (Benthos's counters cannot be read back).
	renewedN atomic.Int64
	// lockLostN and ackFailedN count what lockExpired and ackErrs count,
	// for tests as renewedN.
	lockLostN, ackFailedN atomic.Int64
}

func newShareMetrics(m *service.Metrics) *shareMetrics {
	return &shareMetrics{
		records:     m.NewCounter(MetricShareRecords, "verdict"),
		renewals:    m.NewCounter(MetricShareRenewals),
		lockExpired: m.NewCounter(MetricShareLockExpired, "topic", "partition"),
		ackErrs:     m.NewCounter(MetricShareAckErrors, "topic", "partition"),
		inFlight:    m.NewGauge(MetricShareInFlight),
	}
}

// verdict counts one record's verdict and that it is no longer held.
func (m *shareMetrics) verdict(v share.Verdict) {
	m.records.Incr(1, v.String())
	m.inFlight.Set(m.inFlightN.Add(-1))
}

// verdictCounts counts the verdicts given in one go, by verdict, for
// verdicts: the labelled counter and the gauge are then touched once per
// kind and batch rather than once per record (per record they took 10% of
// the input's CPU into drop, the label lookup most of it).
type verdictCounts [share.DeadLettered + 1]int64

// verdicts counts n's verdicts and that their records are no longer held.
func (m *shareMetrics) verdicts(n *verdictCounts) {
	var total int64
	for v, k := range n {
		if k > 0 {
			m.records.Incr(k, share.Verdict(v).String())
			total += k
		}
	}
	if total > 0 {
		m.inFlight.Set(m.inFlightN.Add(-total))
	}
}

// polled counts n records newly held.
func (m *shareMetrics) polled(n int) { m.inFlight.Set(m.inFlightN.Add(int64(n))) }

// ackResult counts one partition's result of an acknowledgement.
func (m *shareMetrics) ackResult(r kgo.ShareAckResult) share.AckOutcome {
	o := share.ClassifyAck(r.Err)
	switch o {
	case share.AckLockLost:
		m.lockExpired.Incr(1, r.Topic, strconv.Itoa(int(r.Partition)))
		m.lockLostN.Add(1)
	case share.AckFailed:
		m.ackErrs.Incr(1, r.Topic, strconv.Itoa(int(r.Partition)))
		m.ackFailedN.Add(1)
	}
	return o
}

// syncGauge sets the in-flight gauge from the count.
func (m *shareMetrics) syncGauge() { m.inFlight.Set(m.inFlightN.Load()) }

// renewed counts n lock renewals.
func (m *shareMetrics) renewed(n int) {
	m.renewals.Incr(int64(n))
	m.renewedN.Add(int64(n))
}
