package prometheus

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRegisterOnEmptyEnvironment(t *testing.T) {
	// Without registration an empty environment does not know the exporter.
	require.Error(t, service.NewEmptyEnvironment().NewStreamBuilder().SetMetricsYAML(`prometheus: {}`))

	env := service.NewEmptyEnvironment()
	require.NoError(t, Register(env))
	require.NoError(t, env.NewStreamBuilder().SetMetricsYAML(`
prometheus:
  add_go_metrics: true
  histogram_buckets: [ 0.01, 0.1, 1 ]
`))
}

func TestRegisterTwice(t *testing.T) {
	// NewEnvironment clones the global environment, which init has already
	// registered the exporter on; registering again replaces it.
	env := service.NewEnvironment()
	require.NoError(t, Register(env))
	require.NoError(t, Register(env))
	require.NoError(t, env.NewStreamBuilder().SetMetricsYAML(`prometheus: {}`))
}

func TestConfigDefaults(t *testing.T) {
	conf, err := ConfigSpec().ParseYAML(`{}`, nil)
	require.NoError(t, err)
	opts, err := OptionsFromParsed(conf)
	require.NoError(t, err)
	assert.Equal(t, Options{HistogramBuckets: DefaultHistogramBuckets}, opts)
	require.NoError(t, validateBuckets(DefaultHistogramBuckets))
}

func TestConflictingFamilyIsLogged(t *testing.T) {
	var buf bytes.Buffer
	log := service.NewLoggerFromSlog(slog.New(slog.NewTextHandler(&buf, nil)))
	e, err := New(Options{}, log)
	require.NoError(t, err)

	e.NewCounterCtor("foo", "a")
	assert.Empty(t, buf.String())
	e.NewCounterCtor("foo", "b")
	assert.Contains(t, buf.String(), "foo")
	assert.Contains(t, buf.String(), "already registered")
}
