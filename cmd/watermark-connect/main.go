// Command watermark-connect is a Benthos / Redpanda Connect-style binary with
// the kafka_watermark input.
package main

import (
	"context"

	"github.com/redpanda-data/benthos/v4/public/service"

	_ "github.com/redpanda-data/benthos/v4/public/components/io"
	_ "github.com/redpanda-data/benthos/v4/public/components/pure"

	"github.com/watermark-connect/watermark-connect/internal/demo"
	"github.com/watermark-connect/watermark-connect/internal/status"
	_ "github.com/watermark-connect/watermark-connect/metrics/prometheus"
	_ "github.com/watermark-connect/watermark-connect/plugin"
)

// Set at build time with -ldflags "-X main.version=... -X main.dateBuilt=...".
var (
	version   = "dev"
	dateBuilt = "unknown"
)

func main() {
	service.RunCLI(context.Background(),
		service.CLIOptSetVersion(version, dateBuilt),
		service.CLIOptSetBinaryName("watermark-connect"),
		service.CLIOptSetProductName("watermark-connect"),
		service.CLIOptAddCommand(demo.Command()),
		service.CLIOptAddCommand(status.Command()),
	)
}
