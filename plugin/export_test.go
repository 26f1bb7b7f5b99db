package plugin

import (
	"context"
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/engine"
)

// InputClientOpts is, for the tests of package plugin_test, the kgo
// options the input would connect with for fields (the input's config,
// parsed with ConfigSpec and validated), bound to an engine that never runs.
// The rebalance callbacks are replaced with ones that return at once: the
// engine's wait for its owner goroutine, which never runs here, and a
// client built from these options that joined its group and then failed
// (a lost callback, seen under load: 3 s connect_timeout) hung in Close for
// ever, waiting on the callback.
func InputClientOpts(pc *service.ParsedConfig) ([]kgo.Opt, error) {
	c, err := parseConfig(pc)
	if err != nil {
		return nil, err
	}
	in := newInput(c, service.MockResources())
	noop := func(context.Context, *kgo.Client, map[string][]int32) {}
	return append(in.clientOpts(engine.New(c.engine(), in.log, in.m)),
		kgo.OnPartitionsAssigned(noop), kgo.OnPartitionsRevoked(noop), kgo.OnPartitionsLost(noop)), nil
}
