package prometheus

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExporterCountersGaugesTimers(t *testing.T) {
	e := newTestExporter(t, `{}`)

	in := e.NewCounterCtor("input_received", "label", "path")
	c := in("gen", "root.input")
	c.Incr(3)
	c.Incr(2)
	in("other", "root.input").Incr(1)

	g := e.NewGaugeCtor("queue_depth", "label")
	g("a").Set(7)
	g("b").Set(-2)

	tm := e.NewTimerCtor("output_latency_ns", "path")
	lat := tm("root.output")
	lat.Timing(1_500_000_000) // 1.5s
	lat.Timing(500_000_000)   // 0.5s

	body := scrape(t, e)

	requireSample(t, body, `input_received{label="gen",path="root.input"}`, 5)
	requireSample(t, body, `input_received{label="other",path="root.input"}`, 1)
	assert.Contains(t, body, "# TYPE input_received counter")

	requireSample(t, body, `queue_depth{label="a"}`, 7)
	requireSample(t, body, `queue_depth{label="b"}`, -2)
	assert.Contains(t, body, "# TYPE queue_depth gauge")

	// Timers are histograms in seconds, renamed from _ns to _seconds.
	assert.Contains(t, body, "# TYPE output_latency_seconds histogram")
	assert.NotContains(t, body, "output_latency_ns")
	requireSample(t, body, `output_latency_seconds_count{path="root.output"}`, 2)
	requireSample(t, body, `output_latency_seconds_sum{path="root.output"}`, 2)
	requireSample(t, body, `output_latency_seconds_bucket{path="root.output",le="0.5"}`, 1)
	requireSample(t, body, `output_latency_seconds_bucket{path="root.output",le="1"}`, 1)
	requireSample(t, body, `output_latency_seconds_bucket{path="root.output",le="2.5"}`, 2)
	requireSample(t, body, `output_latency_seconds_bucket{path="root.output",le="+Inf"}`, 2)

	require.NoError(t, e.Close(context.Background()))
}

func TestExporterFloatMethods(t *testing.T) {
	e := newTestExporter(t, `{}`)

	// Benthos discovers these optional methods through type assertions.
	c := e.NewCounterCtor("bytes_total")()
	cf, ok := c.(interface{ IncrFloat64(float64) })
	require.True(t, ok)
	cf.IncrFloat64(1.25)

	g := e.NewGaugeCtor("ratio")()
	gf, ok := g.(interface{ SetFloat64(float64) })
	require.True(t, ok)
	gf.SetFloat64(0.75)

	body := scrape(t, e)
	requireSample(t, body, "bytes_total", 1.25)
	requireSample(t, body, "ratio", 0.75)
}

func TestExporterTimerNames(t *testing.T) {
	e := newTestExporter(t, `{}`)
	e.NewTimerCtor("custom_duration_seconds")().Timing(250_000_000)
	e.NewTimerCtor("plain_timer")().Timing(1_000_000_000)

	body := scrape(t, e)
	requireSample(t, body, "custom_duration_seconds_sum", 0.25)
	requireSample(t, body, "plain_timer_sum", 1)
}

func TestExporterCustomBucketsAndPrefix(t *testing.T) {
	e := newTestExporter(t, `
prefix: wm
histogram_buckets: [ 0.1, 1 ]
`)
	e.NewCounterCtor("output_sent")().Incr(4)
	e.NewTimerCtor("input_latency_ns")().Timing(200_000_000)

	body := scrape(t, e)
	requireSample(t, body, "wm_output_sent", 4)
	requireSample(t, body, `wm_input_latency_seconds_bucket{le="0.1"}`, 0)
	requireSample(t, body, `wm_input_latency_seconds_bucket{le="1"}`, 1)
	requireSample(t, body, `wm_input_latency_seconds_bucket{le="+Inf"}`, 1)
	assert.NotContains(t, body, `le="0.5"`)
}

func TestExporterRejectsBadBuckets(t *testing.T) {
	for name, yaml := range map[string]string{
		"decreasing": `histogram_buckets: [ 1, 0.5 ]`,
		"duplicate":  `histogram_buckets: [ 1, 1 ]`,
		"empty":      `histogram_buckets: []`,
	} {
		t.Run(name, func(t *testing.T) {
			conf, err := ConfigSpec().ParseYAML(yaml, nil)
			require.NoError(t, err)
			_, err = newFromParsed(conf, nil)
			require.Error(t, err)
		})
	}
}

func TestExporterSanitisesNames(t *testing.T) {
	e := newTestExporter(t, `{}`)
	e.NewCounterCtor("my-metric.total", "some-label", "2nd", "__reserved")("v", "w", "x").Incr(1)
	e.NewTimerCtor("9lives_ns", "le")("x").Timing(1_000_000_000)
	e.NewGaugeCtor("bad_value", "l")("\xff\xfeok").Set(1)

	body := scrape(t, e)
	requireSample(t, body, `my_metric_total{_2nd="w",_reserved="x",some_label="v"}`, 1)
	// "le" is reserved by histograms, so a caller's "le" label is renamed.
	requireSample(t, body, `_9lives_seconds_bucket{le_="x",le="1"}`, 1)
	// Invalid UTF-8 in label values is replaced, not rejected.
	requireSample(t, body, "bad_value{l=\"\uFFFDok\"}", 1)
}

func TestExporterReusesAndRejectsFamilies(t *testing.T) {
	e := newTestExporter(t, `{}`)

	// The same name and labels yield the same vector, so series accumulate.
	e.NewCounterCtor("processor_received", "path")("p").Incr(1)
	e.NewCounterCtor("processor_received", "path")("p").Incr(2)

	// Different labels or a different type must neither panic nor disturb the
	// original: they are exported as no-ops.
	assert.NotPanics(t, func() {
		e.NewCounterCtor("processor_received", "other")("x").Incr(100)
		e.NewCounterCtor("processor_received")().Incr(100)
		e.NewGaugeCtor("processor_received", "path")("p").Set(100)
		e.NewTimerCtor("processor_received", "path")("p").Timing(100)
	})

	body := scrape(t, e)
	requireSample(t, body, `processor_received{path="p"}`, 3)
	_, found := sample(body, `processor_received{other="x"}`)
	assert.False(t, found)
	_, found = sample(body, `processor_received`)
	assert.False(t, found)
}

func TestExporterNoPanicsOnBadInput(t *testing.T) {
	e := newTestExporter(t, `{}`)

	assert.NotPanics(t, func() {
		// Wrong number of label values.
		e.NewCounterCtor("c", "a", "b")("only-one").Incr(1)
		e.NewGaugeCtor("g", "a")("x", "y").Set(1)
		e.NewTimerCtor("t_ns")("unexpected").Timing(1)

		// Counters cannot decrease in Prometheus; negative increments are
		// dropped.
		c := e.NewCounterCtor("monotonic")()
		c.Incr(2)
		c.Incr(-5)
		c.(interface{ IncrFloat64(float64) }).IncrFloat64(-1)

		// Names client_golang rejects outright.
		e.NewCounterCtor("")().Incr(1)
		e.NewCounterCtor("dup_labels", "a-b", "a_b")("1", "2").Incr(1)
	})

	body := scrape(t, e)
	requireSample(t, body, "monotonic", 2)
	assert.NotContains(t, body, "dup_labels")
}

func TestExporterRuntimeCollectors(t *testing.T) {
	e := newTestExporter(t, `{}`)
	assert.NotContains(t, scrape(t, e), "go_goroutines")

	e = newTestExporter(t, `
add_go_metrics: true
add_process_metrics: true
`)
	body := scrape(t, e)
	assert.Contains(t, body, "go_goroutines")
	if runtime.GOOS == "linux" {
		assert.Contains(t, body, "process_cpu_seconds_total")
	}

	// A Benthos metric clashing with a collector metric is dropped, not fatal.
	assert.NotPanics(t, func() { e.NewGaugeCtor("go_goroutines")().Set(1) })
}

func TestExportersDoNotShareSeries(t *testing.T) {
	a := newTestExporter(t, `{}`)
	b := newTestExporter(t, `{}`)

	a.NewCounterCtor("input_received", "path")("root.input").Incr(2)
	b.NewCounterCtor("input_received", "path")("root.input").Incr(7)
	// Registering a name only in b, with other labels than in a, is fine too.
	b.NewCounterCtor("only_in_b", "x")("y").Incr(1)
	a.NewCounterCtor("only_in_b")().Incr(1)

	bodyA, bodyB := scrape(t, a), scrape(t, b)
	requireSample(t, bodyA, `input_received{path="root.input"}`, 2)
	requireSample(t, bodyB, `input_received{path="root.input"}`, 7)
	requireSample(t, bodyA, "only_in_b", 1)
	requireSample(t, bodyB, `only_in_b{x="y"}`, 1)
}

func TestExporterConcurrentUse(t *testing.T) {
	e := newTestExporter(t, `{}`)

	const workers, perWorker = 8, 500
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				// Recreate ctors as Benthos components do on startup, racing
				// registration against updates and scrapes.
				e.NewCounterCtor("shared_total", "k")("v").Incr(1)
				e.NewTimerCtor("shared_ns", "k")("v").Timing(int64(i))
				e.NewGaugeCtor("shared_gauge")().Set(int64(i))
				if i%100 == 0 {
					// Not scrape(): require must not be used off the test
					// goroutine.
					rec := httptest.NewRecorder()
					e.HandlerFunc()(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
				}
			}
		}()
	}
	wg.Wait()

	body := scrape(t, e)
	requireSample(t, body, `shared_total{k="v"}`, workers*perWorker)
	requireSample(t, body, `shared_seconds_count{k="v"}`, workers*perWorker)
}
