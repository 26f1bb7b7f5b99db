package plugin

import (
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"
)

// InputClientOpts is, for the tests of package plugin_test, the kgo
// options the input would connect with for fields (the input's config,
// parsed with ConfigSpec and validated), bound to an owner that never runs.
func InputClientOpts(pc *service.ParsedConfig) ([]kgo.Opt, error) {
	c, err := parseConfig(pc)
	if err != nil {
		return nil, err
	}
	in := newInput(c, service.MockResources())
	return in.clientOpts(newOwner(c, in.log, in.m)), nil
}
