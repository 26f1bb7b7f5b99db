package plugin

import (
	"context"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"

	"github.com/watermark-connect/watermark-connect/internal/engine"
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
		MaxAttempts: 5, DeadLetterReportFor: 86400e9, MaxHeldRecords: 10000,
	}
	require.Equal(t, want, got, "keep internal/engine's testDefaults in step")
	require.Equal(t, fieldCommitMetadataMaxBytes, engine.FieldCommitMetadataMaxBytes, "a field the engine's log lines name")
	require.Equal(t, fieldSessionTimeout, engine.FieldSessionTimeout, "a field the engine's log lines name")
}

// directInput builds an Input from the test config (inputYAML's fields,
// without the kafka_watermark key), without a stream, for tests that drive
// ReadBatch and acks by hand.
func directInput(t *testing.T, addr, topic, group, extra string) *Input {
	t.Helper()
	pc, err := ConfigSpec().ParseYAML(inputYAML(addr, topic, group, extra)[len("\nkafka_watermark:\n"):], nil)
	require.NoError(t, err)
	conf, err := parseConfig(pc)
	require.NoError(t, err)
	return newInput(conf, service.MockResources())
}

// connectedInput is directInput, connected, with a context for the test.
func connectedInput(t *testing.T, addr, topic, group, extra string) (*Input, context.Context) {
	t.Helper()
	in := directInput(t, addr, topic, group, extra)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	require.NoError(t, in.Connect(ctx))
	return in, ctx
}
