package prometheus

import (
	"errors"
	"fmt"
	"math"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// Name is the name under which the exporter is registered, i.e. the key used
// under `metrics:` in a Benthos config.
const Name = "prometheus"

const (
	fieldPrefix            = "prefix"
	fieldHistogramBuckets  = "histogram_buckets"
	fieldAddProcessMetrics = "add_process_metrics"
	fieldAddGoMetrics      = "add_go_metrics"
)

// DefaultHistogramBuckets are the default upper bounds, in seconds, of the
// histograms that timers are exported as. Benthos latencies range from tens of
// microseconds (in-memory processors) to seconds (remote outputs), which the
// client_golang defaults (5ms to 10s) only partially cover.
var DefaultHistogramBuckets = []float64{
	0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
}

// ConfigSpec returns the configuration spec of the exporter.
func ConfigSpec() *service.ConfigSpec {
	defBuckets := make([]any, len(DefaultHistogramBuckets))
	for i, b := range DefaultHistogramBuckets {
		defBuckets[i] = b
	}
	return service.NewConfigSpec().
		Beta().
		Summary("Serves metrics at `/metrics` on the Benthos HTTP server in the Prometheus text exposition format.").
		Description(`
The metrics are not pushed anywhere: a Prometheus server (or any compatible agent) is expected to scrape the `+"`/metrics`"+` endpoint of the HTTP server configured under `+"`http`"+`, which therefore must be enabled.

Counters and gauges are exported under the name they are emitted with. Timers are exported as histograms observed in seconds; since Benthos timers are measured in nanoseconds and conventionally named with an `+"`_ns`"+` suffix, that suffix is replaced with `+"`_seconds`"+` (e.g. `+"`input_latency_ns`"+` becomes `+"`input_latency_seconds`"+`).

Metric and label names are rewritten to valid Prometheus names by replacing invalid characters with underscores. A metric name that is reused with a different type or different label names is not exported a second time; a warning is logged instead.`).
		Fields(
			service.NewStringField(fieldPrefix).
				Description("An optional prefix prepended, followed by an underscore, to the name of every metric emitted by the stream, e.g. `benthos` turns `input_received` into `benthos_input_received`.").
				Default("").
				Advanced(),
			service.NewFloatListField(fieldHistogramBuckets).
				Description("The upper bounds, in seconds, of the histogram buckets that timers are exported with. Must be strictly increasing; the `+Inf` bucket is implicit.").
				Default(defBuckets).
				Advanced(),
			service.NewBoolField(fieldAddProcessMetrics).
				Description("Whether to also export the standard `process_*` metrics (CPU, memory, open file descriptors) of the Benthos process.").
				Default(false),
			service.NewBoolField(fieldAddGoMetrics).
				Description("Whether to also export the standard `go_*` runtime metrics (goroutines, GC, heap) of the Benthos process.").
				Default(false),
		).
		Example("Scraped on the default HTTP server", "Exposes metrics at `http://<host>:4195/metrics`.", `
http:
  address: 0.0.0.0:4195
metrics:
  prometheus:
    add_process_metrics: true
    add_go_metrics: true
`)
}

// Options configures an Exporter. The zero value is valid and uses
// DefaultHistogramBuckets.
type Options struct {
	// Prefix, when non-empty, is prepended with an underscore separator to
	// every metric name.
	Prefix string
	// HistogramBuckets are the timer histogram upper bounds in seconds. When
	// empty DefaultHistogramBuckets is used. Must be strictly increasing.
	HistogramBuckets []float64
	// AddProcessMetrics registers the standard process collector.
	AddProcessMetrics bool
	// AddGoMetrics registers the standard Go runtime collector.
	AddGoMetrics bool
}

// OptionsFromParsed extracts Options from a config parsed with ConfigSpec.
func OptionsFromParsed(conf *service.ParsedConfig) (opts Options, err error) {
	if opts.Prefix, err = conf.FieldString(fieldPrefix); err != nil {
		return
	}
	if opts.HistogramBuckets, err = conf.FieldFloatList(fieldHistogramBuckets); err != nil {
		return
	}
	if len(opts.HistogramBuckets) == 0 {
		err = fmt.Errorf("field %v must contain at least one bucket", fieldHistogramBuckets)
		return
	}
	if opts.AddProcessMetrics, err = conf.FieldBool(fieldAddProcessMetrics); err != nil {
		return
	}
	opts.AddGoMetrics, err = conf.FieldBool(fieldAddGoMetrics)
	return
}

// validateBuckets rejects bucket lists that client_golang would panic on.
func validateBuckets(buckets []float64) error {
	for i, b := range buckets {
		if math.IsNaN(b) || math.IsInf(b, 0) {
			return errors.New("histogram buckets must be finite numbers")
		}
		if i > 0 && b <= buckets[i-1] {
			return fmt.Errorf("histogram buckets must be strictly increasing: %v follows %v", b, buckets[i-1])
		}
	}
	return nil
}

// Register adds the exporter to env under Name. Registering on an environment
// that already has an exporter of that name replaces it, so calling Register on
// an environment cloned from the global one (service.NewEnvironment) is fine.
func Register(env *service.Environment) error {
	return env.RegisterMetricsExporter(Name, ConfigSpec(), newFromParsed)
}

func newFromParsed(conf *service.ParsedConfig, log *service.Logger) (service.MetricsExporter, error) {
	opts, err := OptionsFromParsed(conf)
	if err != nil {
		return nil, err
	}
	return New(opts, log)
}

// init registers the exporter globally so that a blank import is all a binary
// needs, in the same way as Benthos's own component packages.
func init() {
	service.MustRegisterMetricsExporter(Name, ConfigSpec(), newFromParsed)
}
