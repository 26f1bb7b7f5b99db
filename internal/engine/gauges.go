package engine

import (
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// Gauges are refreshed on a clock of their own (owner.gaugeEvery, at most a
// second), not on the commit tick, so an alert on a stall or on the
// watermark's age fires on time whatever commit_period is. A refresh visits
// only the partitions on the owner's gauge list (lists.gauges): those an
// event changed since the last refresh, and those whose age moves with the
// clock. It sets only the gauges whose value changed, so 10,000 idle
// partitions cost a refresh nothing.

// gaugeValues is what one partition's gauges show. A field of -1 has not
// been shown in this epoch (unshown), so the first refresh sets every gauge.
type gaugeValues struct {
	pending, stalled, paused, age, lag, exposure int64
	// headroom and retention are in seconds; noHeadroom (any value, for
	// headroom) is not shown (retention.go).
	headroom, retention int64
	// held is the records waiting for their key, under ordering: key;
	// -1 (not shown) under none.
	held int64
}

var unshown = gaugeValues{-1, -1, -1, -1, -1, -1, noHeadroom, noHeadroom, -2}

// values computes what p's gauges should show now. lag stays -1 (not shown)
// until both a resume point and a log end are known.
func (p *partState) values(now time.Time) gaugeValues {
	v := gaugeValues{
		pending:   int64(p.led.pending()),
		stalled:   b2i(p.stalled()),
		paused:    b2i(p.paused),
		age:       int64(p.watermarkAge(now) / time.Second),
		lag:       -1,
		exposure:  p.commits.exposure,
		headroom:  p.headroom(now),
		retention: noHeadroom,
		held:      int64(p.dlv.held()),
	}
	if ms, ok := p.loss.retention(); ok {
		v.retention = ms / 1000
	}
	if base, ok := p.resumePoint(); ok && p.queue.logEnd() >= 0 {
		v.lag = max(p.queue.logEnd()-base, 0)
	}
	return v
}

// publishGauges refreshes the gauges of the listed live partitions. A
// partition with batches pending or stalled stays listed, its age moving;
// any other leaves the list, showing what it will show until an event
// lists it again.
func (o *owner) publishGauges(now time.Time) {
	o.lists.gauges.keep(func(p *partState) bool {
		if !p.live() {
			return false
		}
		o.m.show(p, p.values(now))
		return p.led.pending() > 0 || p.stalled() || p.dlv.held() > 0
	})
}

// show sets the gauges of p whose value differs from what they show. The
// labels go as p.labels[:], a slice of the partition's own array, so a call
// allocates no slice for them.
func (m *Metrics) show(p *partState, v gaugeValues) {
	was := p.shown
	if v.pending != was.pending {
		m.pending.Set(v.pending, p.labels[:]...)
	}
	if v.stalled != was.stalled {
		m.stalled.Set(v.stalled, p.labels[:]...)
	}
	if v.paused != was.paused {
		m.paused.Set(v.paused, p.labels[:]...)
	}
	if v.age != was.age {
		m.age.Set(v.age, p.labels[:]...)
	}
	if v.lag != was.lag && v.lag >= 0 {
		m.lag.Set(v.lag, p.labels[:]...)
	}
	if v.exposure != was.exposure {
		m.exposure.Set(v.exposure, p.labels[:]...)
	}
	if v.headroom != was.headroom && v.headroom != noHeadroom {
		m.headroom.Set(v.headroom, p.labels[:]...)
	}
	if v.retention != was.retention && v.retention != noHeadroom {
		m.retention.Set(v.retention, p.labels[:]...)
	}
	if v.held != was.held && v.held >= 0 {
		m.held.Set(v.held, p.labels[:]...)
	}
	p.shown = v
}

// retire zeroes every gauge of a partition this member no longer owns, so a
// revoked partition neither keeps alerting nor shows a stale lag or commit.
// Benthos gauges cannot be deleted; nothing of an ended epoch sets them
// again (onCommitDone and onEnds check the epoch, finalCommit sets none).
func (m *Metrics) retire(p *partState) {
	for _, g := range []*service.MetricGauge{m.pending, m.stalled, m.paused, m.age, m.lag, m.exposure, m.committed, m.headroom, m.retention} {
		g.Set(0, p.labels[:]...)
	}
	if p.dlv.held() >= 0 {
		m.held.Set(0, p.labels[:]...)
	}
	p.shown = gaugeValues{}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
