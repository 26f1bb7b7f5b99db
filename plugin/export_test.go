package plugin

import (
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/engine"
)

// InputClientOpts is, for the tests of package plugin_test, the kgo
// options the input would connect with for fields (the input's config,
// parsed with ConfigSpec and validated), bound to an engine that never runs.
func InputClientOpts(pc *service.ParsedConfig) ([]kgo.Opt, error) {
	c, err := parseConfig(pc)
	if err != nil {
		return nil, err
	}
	in := newInput(c, service.MockResources())
	return in.clientOpts(engine.New(c.engine(), in.log, in.m)), nil
}
