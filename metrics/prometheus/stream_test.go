package prometheus

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	_ "github.com/redpanda-data/benthos/v4/public/components/pure"
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// TestStreamServesMetricsOnBenthosHTTPServer scrapes /metrics from the HTTP
// server Benthos itself starts for the stream, using the exporter registered
// globally by init.
func TestStreamServesMetricsOnBenthosHTTPServer(t *testing.T) {
	addr := freeAddr(t)

	// Benthos shuts its HTTP server down as soon as the stream ends, which a
	// bare generate input with a count would do before it can be scraped. The
	// idle inproc input (nothing ever writes to it) keeps the stream, and so
	// the server, running after generate is exhausted.
	b := service.NewStreamBuilder()
	require.NoError(t, b.SetYAML(fmt.Sprintf(`
http:
  enabled: true # stream builders disable the server by default
  address: %s
input:
  broker:
    inputs:
      - generate:
          count: 5
          interval: ""
          mapping: 'root = "x"'
      - inproc: idle
output:
  drop: {}
metrics:
  prometheus: {}
logger:
  level: none
`, addr)))
	strm, err := b.Build()
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- strm.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-runErr
		_ = strm.StopWithin(10 * time.Second)
	})

	const (
		generated = `input_received{label="",path="root.input.broker.inputs.0"}`
		sent      = `output_sent{label="",path="root.output"}`
	)
	url := "http://" + addr + "/metrics"
	var body string
	require.Eventually(t, func() bool {
		var err error
		if body, err = scrapeURL(url); err != nil {
			return false
		}
		in, okIn := sample(body, generated)
		out, okOut := sample(body, sent)
		return okIn && okOut && in == 5 && out == 5
	}, 20*time.Second, 10*time.Millisecond, "last scrape of %s:\n%s", url, body)

	assert.Contains(t, body, "# TYPE input_received counter")
	assert.Contains(t, body, "# TYPE output_latency_seconds histogram")
	assert.Contains(t, body, `output_latency_seconds_count{label="",path="root.output"}`)
}

// TestStreamOnRegisteredEnvironment runs the plain generate -> drop stream to
// completion on an environment the exporter was registered on explicitly. The
// endpoints are mounted on a caller-owned mux (SetHTTPMux), which outlives the
// stream, so the final totals can be scraped after Run returns.
func TestStreamOnRegisteredEnvironment(t *testing.T) {
	env := service.NewEnvironment()
	require.NoError(t, Register(env))

	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	b := env.NewStreamBuilder()
	b.SetHTTPMux(mux)
	require.NoError(t, b.SetYAML(`
input:
  generate:
    count: 5
    interval: ""
    mapping: 'root = "x"'
output:
  drop: {}
metrics:
  prometheus: {}
logger:
  level: none
`))
	strm, err := b.Build()
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, strm.Run(ctx))

	body, err := scrapeURL(srv.URL + "/metrics")
	require.NoError(t, err)
	requireSample(t, body, `input_received{label="",path="root.input"}`, 5)
	requireSample(t, body, `output_sent{label="",path="root.output"}`, 5)
	requireSample(t, body, `output_latency_seconds_count{label="",path="root.output"}`, 5)

	// /stats is Benthos's alias for the same handler.
	stats, err := scrapeURL(srv.URL + "/stats")
	require.NoError(t, err)
	assert.Contains(t, stats, "input_received")
}

// TestTwoStreamsDoNotShareSeries runs two streams in one process and checks
// that each exporter only reports its own stream.
func TestTwoStreamsDoNotShareSeries(t *testing.T) {
	run := func(count int) string {
		mux := http.NewServeMux()
		srv := httptest.NewServer(mux)
		defer srv.Close()

		b := service.NewStreamBuilder()
		b.SetHTTPMux(mux)
		require.NoError(t, b.SetYAML(fmt.Sprintf(`
input:
  generate:
    count: %d
    interval: ""
    mapping: 'root = "x"'
output:
  drop: {}
metrics:
  prometheus: {}
logger:
  level: none
`, count)))
		strm, err := b.Build()
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, strm.Run(ctx))

		body, err := scrapeURL(srv.URL + "/metrics")
		require.NoError(t, err)
		return body
	}

	first, second := run(3), run(4)
	requireSample(t, first, `input_received{label="",path="root.input"}`, 3)
	requireSample(t, second, `input_received{label="",path="root.input"}`, 4)
}
