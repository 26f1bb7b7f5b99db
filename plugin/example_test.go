package plugin_test

import (
	"fmt"
	"strings"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/watermark-connect/watermark-connect/plugin"
)

// Register the input on an environment of your own (importing the package
// registers it on Benthos's global one), then build streams from YAML. An
// invalid limit is refused when the config is linted, before anything runs.
func ExampleRegister() {
	env := service.NewEmptyEnvironment()
	if err := plugin.Register(env); err != nil {
		panic(err)
	}
	err := env.NewStreamBuilder().AddInputYAML(`
kafka_watermark:
  seed_brokers: [ localhost:9092 ]
  topics: [ orders ]
  consumer_group: orders-sink
  max_pending_batches: 0
`)
	fmt.Println(strings.Contains(err.Error(), "max_pending_batches (0) must be at least 1"))
	// Output: true
}
