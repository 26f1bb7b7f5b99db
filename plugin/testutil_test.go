package plugin

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"

	"github.com/watermark-connect/watermark-connect/internal/engine"
	"github.com/watermark-connect/watermark-connect/internal/memmetrics"
)

// benchConfig parses the input's config with the required fields and extra.
func benchConfig(tb testing.TB, extra string) *config {
	tb.Helper()
	pc, err := ConfigSpec().ParseYAML("seed_brokers: [ 127.0.0.1:1 ]\ntopics: [ t ]\nconsumer_group: g\n"+extra, nil)
	if err != nil {
		tb.Fatal(err)
	}
	conf, err := parseConfig(pc)
	if err != nil {
		tb.Fatal(err)
	}
	return conf
}

// testStores holds the gauge store of each testMetrics call by its id: the
// exporter registered below is global (Benthos's ResourceBuilder builds from
// the global environment) and picks its store by id.
var testStores sync.Map

func init() {
	if err := service.RegisterMetricsExporter("plugin_test_metrics", service.NewConfigSpec().Field(service.NewStringField("id")),
		func(pc *service.ParsedConfig, _ *service.Logger) (service.MetricsExporter, error) {
			id, err := pc.FieldString("id")
			if err != nil {
				return nil, err
			}
			g, ok := testStores.Load(id)
			if !ok {
				return nil, fmt.Errorf("no store %q", id)
			}
			return g.(*memmetrics.Store), nil
		}); err != nil {
		panic(err)
	}
}

// testMetrics returns the input's metrics, reporting to a gauge store.
func testMetrics(t *testing.T) (*engine.Metrics, *memmetrics.Store) {
	t.Helper()
	g := memmetrics.New()
	testStores.Store(t.Name(), g)
	b := service.NewResourceBuilder()
	require.NoError(t, b.SetMetricsYAML(fmt.Sprintf("plugin_test_metrics: { id: %q }", t.Name())))
	res, closeRes, err := b.Build()
	require.NoError(t, err)
	t.Cleanup(func() { _ = closeRes(context.Background()) })
	return engine.NewMetrics(res.Metrics()), g
}

// The engine's defaults are the input's: a config with only the required
// fields gives the engine what its own tests take for defaults.
func TestEngineConfigDefaults(t *testing.T) {
	got := benchConfig(t, "").engine()
	want := engine.Config{
		ClientID: "watermark-connect", SessionTimeout: 60e9, RebalanceTimeout: 45e9,
		BatchMaxRecords: 1024, BatchMaxBytes: 1 << 20, MaxPending: 1024,
		CommitPeriod: 1e9, CommitMetadata: true, CommitMetadataMaxBytes: 4000,
		NackBackoff: 500e6, NackMaxBackoff: 10e9, StallReplayAfter: 60e9,
		DrainTimeout: 10e9, LostReportFor: 86400e9, TopicLagRefresh: 5e9, MetadataMaxAge: 300e9,
	}
	require.Equal(t, want, got, "keep internal/engine's testDefaults in step")
	require.Equal(t, fieldCommitMetadataMaxBytes, engine.FieldCommitMetadataMaxBytes, "a field the engine's log lines name")
	require.Equal(t, fieldSessionTimeout, engine.FieldSessionTimeout, "a field the engine's log lines name")
}
