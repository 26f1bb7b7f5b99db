package prometheus

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redpanda-data/benthos/v4/public/service"
)

// Exporter is a service.MetricsExporter backed by a private
// prometheus.Registry. Benthos discovers its HandlerFunc method and mounts it
// at /metrics and /stats on the stream's HTTP server.
//
// An Exporter is safe for concurrent use: constructors may be called from any
// goroutine, and the counters, gauges and timers they return may be updated
// concurrently with each other and with scrapes.
type Exporter struct {
	log     *service.Logger
	prefix  string
	buckets []float64
	reg     *prometheus.Registry
	handler http.HandlerFunc

	mu       sync.Mutex
	families map[string]*family // by exported metric name
}

// family is one registered metric vector. Benthos asks for the same metric many
// times (once per component instance), so vectors are shared by name.
type family struct {
	kind   kind
	labels []string             // sanitised label names, in caller order
	vec    prometheus.Collector // *CounterVec, *GaugeVec or *HistogramVec, per kind
}

type kind int

const (
	kindCounter kind = iota
	kindGauge
	kindTimer
)

func (k kind) String() string {
	switch k {
	case kindCounter:
		return "counter"
	case kindGauge:
		return "gauge"
	default:
		return "timer"
	}
}

var _ service.MetricsExporter = (*Exporter)(nil)

// New creates an Exporter. The logger may be nil, in which case warnings about
// unusable metrics are discarded.
func New(opts Options, log *service.Logger) (*Exporter, error) {
	buckets := slices.Clone(opts.HistogramBuckets)
	if len(buckets) == 0 {
		buckets = slices.Clone(DefaultHistogramBuckets)
	}
	if err := validateBuckets(buckets); err != nil {
		return nil, err
	}

	reg := prometheus.NewRegistry()
	if opts.AddProcessMetrics {
		if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
			return nil, fmt.Errorf("registering process collector: %w", err)
		}
	}
	if opts.AddGoMetrics {
		if err := reg.Register(collectors.NewGoCollector()); err != nil {
			return nil, fmt.Errorf("registering Go collector: %w", err)
		}
	}

	prefix := ""
	if opts.Prefix != "" {
		prefix = strings.TrimSuffix(opts.Prefix, "_") + "_"
	}

	e := &Exporter{
		log:      log,
		prefix:   prefix,
		buckets:  buckets,
		reg:      reg,
		families: map[string]*family{},
	}
	e.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog: promLogger{log},
		// Serve whatever could be gathered rather than failing the whole
		// scrape because of one misbehaving collector.
		ErrorHandling: promhttp.ContinueOnError,
	}).ServeHTTP
	return e, nil
}

// HandlerFunc returns the handler serving the registry in the Prometheus
// exposition format. Benthos mounts it at /metrics and /stats.
func (e *Exporter) HandlerFunc() http.HandlerFunc {
	return e.handler
}

// Close is a no-op. The registry is private to this exporter and is garbage
// collected with it; leaving it intact lets a final scrape after a stream has
// stopped still report its totals.
func (e *Exporter) Close(context.Context) error {
	return nil
}

// NewCounterCtor implements service.MetricsExporter. The counter keeps the
// (sanitised, prefixed) name it is given.
func (e *Exporter) NewCounterCtor(name string, labelKeys ...string) service.MetricsExporterCounterCtor {
	f := e.family(kindCounter, e.metricName(name), labelKeys)
	if f == nil {
		return func(...string) service.MetricsExporterCounter { return noop{} }
	}
	vec := f.vec.(*prometheus.CounterVec)
	return func(labelValues ...string) service.MetricsExporterCounter {
		c, err := vec.GetMetricWithLabelValues(e.labelValues(labelValues)...)
		if err != nil {
			e.warnLabelValues(name, err)
			return noop{}
		}
		return counter{c}
	}
}

// NewGaugeCtor implements service.MetricsExporter. The gauge keeps the
// (sanitised, prefixed) name it is given.
func (e *Exporter) NewGaugeCtor(name string, labelKeys ...string) service.MetricsExporterGaugeCtor {
	f := e.family(kindGauge, e.metricName(name), labelKeys)
	if f == nil {
		return func(...string) service.MetricsExporterGauge { return noop{} }
	}
	vec := f.vec.(*prometheus.GaugeVec)
	return func(labelValues ...string) service.MetricsExporterGauge {
		g, err := vec.GetMetricWithLabelValues(e.labelValues(labelValues)...)
		if err != nil {
			e.warnLabelValues(name, err)
			return noop{}
		}
		return gauge{g}
	}
}

// NewTimerCtor implements service.MetricsExporter. The timer is exported as a
// histogram of seconds, and a trailing "_ns" in its name becomes "_seconds".
func (e *Exporter) NewTimerCtor(name string, labelKeys ...string) service.MetricsExporterTimerCtor {
	f := e.family(kindTimer, timerName(e.metricName(name)), labelKeys)
	if f == nil {
		return func(...string) service.MetricsExporterTimer { return noop{} }
	}
	vec := f.vec.(*prometheus.HistogramVec)
	return func(labelValues ...string) service.MetricsExporterTimer {
		o, err := vec.GetMetricWithLabelValues(e.labelValues(labelValues)...)
		if err != nil {
			e.warnLabelValues(name, err)
			return noop{}
		}
		return timer{o}
	}
}

func (e *Exporter) metricName(name string) string {
	return sanitiseMetricName(e.prefix + name)
}

func (e *Exporter) labelValues(values []string) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = sanitiseLabelValue(v)
	}
	return out
}

// family returns the vector registered under name, registering it first if
// needed. It returns nil, after logging a warning, when the metric cannot be
// exported: the name is already used with another type or other label names,
// or client_golang rejects the name (e.g. it is empty or collides with a
// process/Go collector metric). Callers then hand out no-op metrics so that a
// naming mistake never takes a pipeline down.
func (e *Exporter) family(k kind, name string, rawLabels []string) *family {
	labels := sanitiseLabelNames(rawLabels, k == kindTimer)

	e.mu.Lock()
	defer e.mu.Unlock()

	if f, exists := e.families[name]; exists {
		if f.kind == k && slices.Equal(f.labels, labels) {
			return f
		}
		e.log.Warnf(
			"Prometheus metric %q requested as a %v with labels %v, but it is already registered as a %v with labels %v; the new metric will not be exported",
			name, k, labels, f.kind, f.labels,
		)
		return nil
	}

	var vec prometheus.Collector
	switch k {
	case kindCounter:
		vec = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: name,
			Help: "Benthos counter metric.",
		}, labels)
	case kindGauge:
		vec = prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: name,
			Help: "Benthos gauge metric.",
		}, labels)
	default:
		vec = prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    name,
			Help:    "Benthos timing metric, in seconds.",
			Buckets: e.buckets,
		}, labels)
	}
	if err := e.reg.Register(vec); err != nil {
		e.log.Warnf("Prometheus %v %q with labels %v cannot be exported: %v", k, name, labels, err)
		return nil
	}

	f := &family{kind: k, labels: labels, vec: vec}
	e.families[name] = f
	return f
}

func (e *Exporter) warnLabelValues(name string, err error) {
	e.log.Warnf("Prometheus metric %q not exported for these label values: %v", name, err)
}

// promLogger adapts a *service.Logger (possibly nil) to promhttp.Logger.
type promLogger struct {
	log *service.Logger
}

func (l promLogger) Println(v ...any) {
	l.log.Error(strings.TrimSuffix(fmt.Sprintln(v...), "\n"))
}
