package main

import (
	"bytes"
	"io"
	"strings"

	ucli "github.com/urfave/cli/v2"
)

// The binary's own documentation, and the engine's: Benthos's help links
// its guides (Bloblang, streams mode, unit tests, templates) under the
// documentation URL, and those guides are Redpanda Connect's.
const (
	docsURL       = "https://github.com/watermark-connect/watermark-connect"
	engineDocsURL = "https://docs.redpanda.com/redpanda-connect"
)

// helpFixes rewrites what Benthos's help says about Benthos into what is true
// of this binary. Benthos v4.60.0 hard-codes the root description's tagline
// and the examples of the root and `create` help (internal/cli/app.go:161-168,
// internal/cli/create.go:129-131), which name components this binary lacks
// (kafka, awk, nats, protobuf), and it links its guides as
// <documentation URL>/guides/...; urfave/cli prints every help page through
// the package variable HelpPrinter (urfave/cli/v2 help.go:100), the one hook
// that reaches all of them. TestHelpNamesOnlyWhatThisBinaryHas fails when a
// Benthos upgrade changes a string below, so a fix cannot silently stop
// applying.
var helpFixes = strings.NewReplacer(
	"A stream processor for mundane tasks - "+docsURL,
	"Benthos with the kafka_watermark input: Kafka in a consumer group, committing only what was delivered - "+docsURL,
	"create kafka//file > ./config.yaml", "create kafka_watermark/mapping/http_client > ./config.yaml",
	"create stdin/bloblang,awk/nats", "create kafka_watermark/mapping,log/file",
	"create file,http_server/protobuf/http_client", "create kafka_watermark,http_server/jq/http_client",
	docsURL+"/guides/bloblang/about", engineDocsURL+"/guides/bloblang/about/",
	docsURL+"/guides/streams_mode/about", engineDocsURL+"/guides/streams_mode/about/",
	docsURL+"/configuration/unit_testing", engineDocsURL+"/configuration/unit_testing/",
	docsURL+"/configuration/templating", engineDocsURL+"/configuration/templating/",
)

// installHelpPrinter makes every help page go through helpFixes.
func installHelpPrinter() {
	next := ucli.HelpPrinter
	ucli.HelpPrinter = func(w io.Writer, templ string, data any) {
		var b bytes.Buffer
		next(&b, templ, data)
		_, _ = helpFixes.WriteString(w, b.String())
	}
}
