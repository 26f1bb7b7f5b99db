// Command custom-build is the smallest custom Benthos binary with the
// kafka_watermark input: one blank import of the plugin beside the components
// you already build with, and service.RunCLI. CI compiles it, so the recipe
// in the README cannot rot.
//
// A Redpanda Connect build does the same with Connect's component bundle in
// place of Benthos's pure and io components:
//
//	import (
//		_ "github.com/redpanda-data/connect/v4/public/components/all"
//		_ "github.com/watermark-connect/watermark-connect/plugin"
//	)
package main

import (
	"context"

	"github.com/redpanda-data/benthos/v4/public/service"

	_ "github.com/redpanda-data/benthos/v4/public/components/io"
	_ "github.com/redpanda-data/benthos/v4/public/components/pure"

	_ "github.com/watermark-connect/watermark-connect/plugin"
)

func main() {
	service.RunCLI(context.Background())
}
