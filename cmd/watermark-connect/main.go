// Command watermark-connect is a Benthos / Redpanda Connect-style binary with
// the kafka_watermark input and output.
package main

import (
	"context"
	"runtime/debug"

	"github.com/redpanda-data/benthos/v4/public/service"

	_ "github.com/redpanda-data/benthos/v4/public/components/io"
	_ "github.com/redpanda-data/benthos/v4/public/components/pure"

	"github.com/watermark-connect/watermark-connect/internal/demo"
	"github.com/watermark-connect/watermark-connect/internal/dlcmd"
	"github.com/watermark-connect/watermark-connect/internal/sample"
	"github.com/watermark-connect/watermark-connect/internal/status"
	wmversion "github.com/watermark-connect/watermark-connect/internal/version"
	_ "github.com/watermark-connect/watermark-connect/metrics/prometheus"
	"github.com/watermark-connect/watermark-connect/plugin"
)

// Empty unless set at build time with -ldflags "-X main.version=... -X
// main.dateBuilt=...": then the version and date come from what Go recorded
// of the build (internal/version says the scheme).
var (
	version   string
	dateBuilt string
)

func main() {
	gc := startGC()
	info, _ := debug.ReadBuildInfo()
	installHelpPrinter()
	opts := append([]service.CLIOptFunc{
		service.CLIOptSetVersion(wmversion.String(version, info), wmversion.Date(dateBuilt, info)),
		service.CLIOptSetBinaryName("watermark-connect"),
		service.CLIOptSetProductName("watermark-connect"),
		service.CLIOptSetDocumentationURL(docsURL),
		service.CLIOptAddCommand(demo.Command()),
		service.CLIOptAddCommand(status.Command()),
		service.CLIOptAddCommand(dlcmd.Command()),
		service.CLIOptAddCommand(sample.Command()),
		// exactly_once's rules across components (a bound output needs its
		// input, one per group, never in a fan_out broker), before run
		// connects anything.
		service.CLIOptOnConfigParse(plugin.CheckExactlyOnceConfig),
	}, gc.cliOptions()...)
	service.RunCLI(context.Background(), opts...)
}
