package main

import (
	"context"
	"strconv"
	"sync"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// demoMetricsName is the metrics exporter the demo's stream is built with.
const demoMetricsName = "demo_gauges"

// Input metrics the demo reads. Committed offsets come from the broker, not
// from here: the broker is the truth; these are the input's own view of
// state the broker cannot know.
const (
	gaugePending = "kafka_watermark_pending_batches"
	gaugeStalled = "kafka_watermark_stalled"
	gaugePaused  = "kafka_watermark_paused"
)

// gaugeStore is a tiny in-memory Benthos metrics exporter that keeps the last
// value of every gauge labelled by topic and partition. The demo reads the
// kafka_watermark input's per-partition state from it in-process, which is
// simpler and more robust than serving and scraping Prometheus text. Counters
// and timers are dropped.
type gaugeStore struct {
	mu   sync.Mutex
	vals map[gaugeKey]int64
}

type gaugeKey struct {
	name, topic string
	partition   int32
}

func newGaugeStore() *gaugeStore {
	return &gaugeStore{vals: map[gaugeKey]int64{}}
}

// register adds the store to env as the metrics exporter demoMetricsName.
func (g *gaugeStore) register(env *service.Environment) error {
	return env.RegisterMetricsExporter(demoMetricsName, service.NewConfigSpec().Summary("In-memory gauges for the demo."),
		func(*service.ParsedConfig, *service.Logger) (service.MetricsExporter, error) { return g, nil })
}

// get returns a gauge's last value, 0 if it was never set.
func (g *gaugeStore) get(name, topic string, partition int32) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.vals[gaugeKey{name, topic, partition}]
}

func (g *gaugeStore) NewGaugeCtor(name string, labelKeys ...string) service.MetricsExporterGaugeCtor {
	ti, pi := -1, -1
	for i, k := range labelKeys {
		switch k {
		case "topic":
			ti = i
		case "partition":
			pi = i
		}
	}
	return func(labelValues ...string) service.MetricsExporterGauge {
		if ti < 0 || pi < 0 || ti >= len(labelValues) || pi >= len(labelValues) {
			return nopMetric{}
		}
		p, err := strconv.ParseInt(labelValues[pi], 10, 32)
		if err != nil {
			return nopMetric{}
		}
		return storedGauge{g: g, key: gaugeKey{name, labelValues[ti], int32(p)}}
	}
}

func (g *gaugeStore) NewCounterCtor(string, ...string) service.MetricsExporterCounterCtor {
	return func(...string) service.MetricsExporterCounter { return nopMetric{} }
}

func (g *gaugeStore) NewTimerCtor(string, ...string) service.MetricsExporterTimerCtor {
	return func(...string) service.MetricsExporterTimer { return nopMetric{} }
}

func (g *gaugeStore) Close(context.Context) error { return nil }

type storedGauge struct {
	g   *gaugeStore
	key gaugeKey
}

func (s storedGauge) Set(v int64) {
	s.g.mu.Lock()
	s.g.vals[s.key] = v
	s.g.mu.Unlock()
}

type nopMetric struct{}

func (nopMetric) Set(int64)    {}
func (nopMetric) Incr(int64)   {}
func (nopMetric) Timing(int64) {}
