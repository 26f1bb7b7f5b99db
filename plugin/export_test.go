package plugin

import (
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/engine"
)

// InputClientOpts is, for the tests of package plugin_test, the kgo
// options the input would connect with for fields (the input's config,
// parsed with ConfigSpec and validated), bound to an engine that never runs
// and is marked stopped (Abandon): a client built from these options that
// joined its group and then failed (seen under load: a 3 s connect_timeout)
// called the lost callback, which waited for the owner goroutine for ever,
// and Close hung the package's tests for 10 minutes.
func InputClientOpts(pc *service.ParsedConfig) ([]kgo.Opt, error) {
	c, err := parseConfig(pc)
	if err != nil {
		return nil, err
	}
	in := newInput(c, service.MockResources())
	e := engine.New(c.engine(), in.log, in.m)
	e.Abandon()
	return in.clientOpts(e), nil
}
