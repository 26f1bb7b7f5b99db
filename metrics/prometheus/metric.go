package prometheus

import (
	"math"

	"github.com/prometheus/client_golang/prometheus"
)

// The types below adapt client_golang metrics to the Benthos exporter metric
// interfaces. They wrap metrics that are themselves safe for concurrent use,
// and add no state, so they are too.

// counter exports a Benthos counter. Prometheus counters panic when decreased,
// so negative (or NaN) increments are dropped instead.
type counter struct {
	c prometheus.Counter
}

func (c counter) Incr(n int64) {
	if n > 0 {
		c.c.Add(float64(n))
	}
}

// IncrFloat64 is discovered by Benthos via a type assertion, which lets
// fractional increments through unrounded.
func (c counter) IncrFloat64(n float64) {
	if n > 0 && !math.IsInf(n, 0) {
		c.c.Add(n)
	}
}

// gauge exports a Benthos gauge.
type gauge struct {
	g prometheus.Gauge
}

func (g gauge) Set(v int64) {
	g.g.Set(float64(v))
}

// SetFloat64 is discovered by Benthos via a type assertion, which lets
// fractional values through unrounded.
func (g gauge) SetFloat64(v float64) {
	g.g.Set(v)
}

// timer exports a Benthos timer, whose deltas are nanoseconds, as a histogram
// observation in seconds.
type timer struct {
	o prometheus.Observer
}

func (t timer) Timing(deltaNanos int64) {
	t.o.Observe(float64(deltaNanos) / 1e9)
}

// noop stands in for metrics that cannot be exported (conflicting or invalid
// names, wrong number of label values), so callers never have to nil-check.
type noop struct{}

func (noop) Incr(int64)          {}
func (noop) IncrFloat64(float64) {}
func (noop) Set(int64)           {}
func (noop) SetFloat64(float64)  {}
func (noop) Timing(int64)        {}
