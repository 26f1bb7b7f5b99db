package sample

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/watermark-connect/watermark-connect/internal/status"
)

// Command is `watermark-connect sample`. Add it to the binary with
// service.CLIOptAddCommand.
func Command() *cli.Command {
	return &cli.Command{
		Name:      "sample",
		Usage:     "Put sample records in a topic (created when it does not exist), to try a pipeline on a real broker",
		ArgsUsage: " ",
		Description: `
Produces JSON orders, keyed by customer (50 of them), to a topic, creating it
with --partitions partitions and the broker's default replication when it
does not exist. It connects as the kafka_watermark input does: -c takes the
connection settings (seed_brokers, tls, sasl, ...) of a config's input, and
--seed-brokers overrides them.

  {{.BinaryName}} sample --seed-brokers localhost:19092 --topic orders --records 1000

Exit status: 0 when every record was produced, 1 when not (the reason on
stderr, and stdout says how many were), 2 on a usage error.`[1:],
		OnUsageError: status.OnUsageError,
		Flags: append(status.ConnFlags(),
			&cli.StringFlag{Name: "topic", Usage: "the topic to produce to (required)"},
			&cli.IntFlag{Name: "partitions", Value: 4, Usage: "partitions of the topic, when it is created"},
			&cli.IntFlag{Name: "records", Value: 1000, Usage: "how many records to produce"},
			&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "give up after this long"},
		),
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				fmt.Fprintf(c.App.ErrWriter, "sample: unexpected arguments %v: the topic is given with --topic\n", c.Args().Slice())
				return cli.Exit("", status.ExitUsage)
			}
			o := Options{Conn: status.ConnFromFlags(c), Topic: c.String("topic"), Partitions: c.Int("partitions"),
				Records: c.Int("records"), Timeout: c.Duration("timeout")}
			if err := o.check(); err != nil {
				fmt.Fprintf(c.App.ErrWriter, "sample: %s\n", err)
				return cli.Exit("", status.ExitUsage)
			}
			if code := Run(c.Context, o, c.App.Writer, c.App.ErrWriter); code != ExitOK {
				return cli.Exit("", code)
			}
			return nil
		},
	}
}
