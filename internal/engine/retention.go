package engine

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Retention headroom warns before retention overtakes a stalled partition
// (loss.go): kafka_watermark_retention_headroom_seconds is how long until
// time-based retention may delete the oldest record the partition has not
// delivered, the record at its watermark: the topic's retention.ms less that
// record's age. It is a lower bound (the broker deletes whole segments, and
// only once a segment's newest record is past retention), it goes negative
// once the record is past retention, and it is absent where no time limit
// applies (retention.ms -1, a compact-only topic) or the config cannot be
// read. retention.bytes is not modelled: a size-bounded topic can delete
// sooner than this says.
//
// The topics' configs are read with DescribeConfigs on a goroutine of their
// own, every metadata_max_age and when a topic is first assigned; the owner
// never waits for them.

// retentionResult carries the time retention of each topic described: in
// milliseconds, or -1 when no time limit applies. A topic missing from
// retention could not be described.
type retentionResult struct {
	retention map[string]int64
	err       error
}

// topicRetention reads a topic's time retention from its configs: -1 when
// none applies (retention.ms -1, or a cleanup.policy without delete).
func topicRetention(rc kadm.ResourceConfig) (int64, bool) {
	ms, deletes, found := int64(-1), false, false
	for _, c := range rc.Configs {
		switch c.Key {
		case "retention.ms":
			v, err := strconv.ParseInt(c.MaybeValue(), 10, 64)
			if err != nil {
				return 0, false
			}
			ms, found = v, true
		case "cleanup.policy":
			deletes = slices.Contains(strings.Split(c.MaybeValue(), ","), "delete")
		}
	}
	if !found {
		return 0, false
	}
	if !deletes || ms < 0 {
		return -1, true
	}
	return ms, true
}

// queryRetention starts a DescribeConfigs of every assigned topic, at most
// one at a time.
func (o *owner) queryRetention() {
	if o.queries.retentionInFlight || o.closed || len(o.parts) == 0 {
		return
	}
	topics := map[string]bool{}
	for tp := range o.parts {
		topics[tp.topic] = true
	}
	o.queries.retentionInFlight = true
	names := slices.Sorted(maps.Keys(topics))
	go func() {
		ctx, cancel := context.WithTimeout(o.ioCtx, 30*time.Second)
		defer cancel()
		r, err := o.cl.DescribeRetention(ctx, names...)
		select {
		case o.inbox.retentionCh <- retentionResult{retention: r, err: err}:
		case <-o.stopped():
		}
	}()
}

// onRetention records the topics' time retention on their live partitions.
// A refused description is said once, at WARN, naming the permission.
func (o *owner) onRetention(r retentionResult) {
	o.queries.retentionInFlight = false
	if r.err != nil && !o.queries.retentionWarned {
		o.queries.retentionWarned = true
		why := r.err.Error()
		if errors.Is(r.err, kerr.TopicAuthorizationFailed) || errors.Is(r.err, kerr.ClusterAuthorizationFailed) {
			why = "this principal lacks the DESCRIBE_CONFIGS permission on the topic: " + why
		}
		o.log.Warnf("kafka_watermark: cannot read the topics' retention.ms, so %s is not shown: %s", MetricHeadroom, why)
	}
	for topic, ms := range r.retention {
		o.queries.retention[topic] = ms
	}
	for tp, p := range o.parts {
		if ms, ok := r.retention[tp.topic]; ok && p.loss.setRetention(ms) {
			o.lists.gauges.add(p)
		}
	}
}

// anyUndescribed reports whether a topic of tps has not been described yet.
func (o *owner) anyUndescribed(tps []topicPartition) bool {
	for _, tp := range tps {
		if _, ok := o.queries.retention[tp.topic]; !ok {
			return true
		}
	}
	return false
}

// watermarkRecordTime is the timestamp of the record at p's watermark, the
// oldest p has not delivered, when p holds it: the first record of its
// first pending batch, or of the first batch it has queued while none is
// pending.
func (p *partState) watermarkRecordTime() (time.Time, bool) {
	if w, ok := p.led.head(); ok {
		if b := w.b; b != nil && len(b.raw.records) > 0 {
			return b.raw.records[0].Timestamp, true
		}
		return time.Time{}, false
	}
	return p.queue.frontTimestamp()
}

// headroom is p's retention headroom in seconds now, or noHeadroom.
func (p *partState) headroom(now time.Time) int64 {
	ms, known := p.loss.retention()
	if !known {
		return noHeadroom
	}
	ts, ok := p.watermarkRecordTime()
	if !ok {
		return noHeadroom
	}
	return (ms - now.Sub(ts).Milliseconds()) / 1000
}

// noHeadroom marks a headroom that is not shown.
const noHeadroom = -1 << 63
