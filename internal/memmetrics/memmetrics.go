// Package memmetrics is an in-memory Benthos metrics exporter, for reading a
// stream's metrics in-process: the demo reads the kafka_watermark input's
// per-partition state from it, and tests assert on it, without serving and
// scraping Prometheus text.
//
// A Store keeps, per metric name, topic and partition:
//   - for a gauge, the last value set;
//   - for a counter, the total of every increment;
//   - for a timer, the number of timings and their sum (see Timer).
//
// Only the values of the labels "topic" and "partition" are part of the key.
// Every other label, Benthos's own label, path and stream included, is
// ignored: series that differ only in those share one entry, so the counters
// of two components with the same metric name add up, and the gauge of the
// one set last wins. A metric without a "topic" label has topic "", one
// without a "partition" label (or with a value that is not an int32) has
// partition NoPartition.
package memmetrics

import (
	"context"
	"slices"
	"strconv"
	"sync"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// NoPartition is the partition under which a metric without a "partition"
// label is kept, e.g. Benthos's own output_sent.
const NoPartition int32 = -1

// Store is an in-memory metrics exporter (a service.MetricsExporter). It is
// safe for concurrent use: Benthos's components update it from many
// goroutines while a test or the demo reads it. The zero value is not
// ready; use New.
type Store struct {
	mu     sync.Mutex
	values map[key]int64  // gauges: the last value; counters: the total
	timers map[key]Timing // timers
}

// Timing is what a Store keeps of a timer: how many timings were recorded
// and their sum, in nanoseconds as Benthos reports them.
type Timing struct {
	Count int64
	Sum   int64
}

type key struct {
	name, topic string
	partition   int32
}

var _ service.MetricsExporter = (*Store)(nil)

// New returns an empty Store.
func New() *Store {
	return &Store{values: map[key]int64{}, timers: map[key]Timing{}}
}

// Register adds the store to env as the metrics exporter called name, so a
// stream built from env with `metrics: { <name>: {} }` reports to it. Every
// stream built that way reports to this one store.
func (s *Store) Register(env *service.Environment, name string) error {
	spec := service.NewConfigSpec().Summary("Keeps gauges, counters and timers in memory, keyed by name, topic and partition.")
	return env.RegisterMetricsExporter(name, spec,
		func(*service.ParsedConfig, *service.Logger) (service.MetricsExporter, error) { return s, nil })
}

// Get returns the last value of the gauge, or the total of the counter,
// called name for topic and partition; 0 when it was never set.
func (s *Store) Get(name, topic string, partition int32) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.values[key{name, topic, partition}]
}

// Timer returns what was timed under name for topic and partition; zero
// when nothing was.
func (s *Store) Timer(name, topic string, partition int32) Timing {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.timers[key{name, topic, partition}]
}

// Partitions returns, in ascending order, the partitions of topic that the
// gauge, counter or timer called name was set, incremented or timed for.
func (s *Store) Partitions(name, topic string) []int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ps []int32
	for k := range s.values {
		if k.name == name && k.topic == topic {
			ps = append(ps, k.partition)
		}
	}
	for k := range s.timers {
		if k.name == name && k.topic == topic && !slices.Contains(ps, k.partition) {
			ps = append(ps, k.partition)
		}
	}
	slices.Sort(ps)
	return ps
}

// NewCounterCtor implements service.MetricsExporter.
func (s *Store) NewCounterCtor(name string, labelKeys ...string) service.MetricsExporterCounterCtor {
	kf := keyFunc(name, labelKeys)
	return func(labelValues ...string) service.MetricsExporterCounter {
		return metric{s: s, k: kf(labelValues)}
	}
}

// NewGaugeCtor implements service.MetricsExporter.
func (s *Store) NewGaugeCtor(name string, labelKeys ...string) service.MetricsExporterGaugeCtor {
	kf := keyFunc(name, labelKeys)
	return func(labelValues ...string) service.MetricsExporterGauge {
		return metric{s: s, k: kf(labelValues)}
	}
}

// NewTimerCtor implements service.MetricsExporter.
func (s *Store) NewTimerCtor(name string, labelKeys ...string) service.MetricsExporterTimerCtor {
	kf := keyFunc(name, labelKeys)
	return func(labelValues ...string) service.MetricsExporterTimer {
		return metric{s: s, k: kf(labelValues)}
	}
}

// Close implements service.MetricsExporter. It keeps every value: a stream
// that stopped can still be read.
func (s *Store) Close(context.Context) error { return nil }

// keyFunc returns a function from label values (in the order of labelKeys)
// to the metric's key.
func keyFunc(name string, labelKeys []string) func(labelValues []string) key {
	ti, pi := slices.Index(labelKeys, "topic"), slices.Index(labelKeys, "partition")
	return func(labelValues []string) key {
		k := key{name: name, partition: NoPartition}
		if ti >= 0 && ti < len(labelValues) {
			k.topic = labelValues[ti]
		}
		if pi >= 0 && pi < len(labelValues) {
			if p, err := strconv.ParseInt(labelValues[pi], 10, 32); err == nil {
				k.partition = int32(p)
			}
		}
		return k
	}
}

// metric is one series: a counter, gauge or timer, as its constructor
// decided.
type metric struct {
	s *Store
	k key
}

func (m metric) Set(v int64) {
	m.s.mu.Lock()
	m.s.values[m.k] = v
	m.s.mu.Unlock()
}

func (m metric) Incr(n int64) {
	m.s.mu.Lock()
	m.s.values[m.k] += n
	m.s.mu.Unlock()
}

func (m metric) Timing(delta int64) {
	m.s.mu.Lock()
	t := m.s.timers[m.k]
	t.Count++
	t.Sum += delta
	m.s.timers[m.k] = t
	m.s.mu.Unlock()
}
