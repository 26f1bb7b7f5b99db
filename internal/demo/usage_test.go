package demo

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"
)

// Regression: `demo --stall-replay-after 2` answered only "parse error" (the
// flag package's word for any bad duration), which says neither which flag
// nor what form it wants. Every duration flag now says both
// (status.OnUsageError, which every command uses).
func TestDurationFlagSaysWhatItWants(t *testing.T) {
	for _, flag := range []string{"--stall-replay-after", "--fail-for", "--duration", "--max-latency"} {
		var out bytes.Buffer
		code := 0
		app := &cli.App{Name: "watermark-connect", Writer: &out, ErrWriter: &out, Commands: []*cli.Command{Command()},
			ExitErrHandler: func(_ *cli.Context, err error) {
				var ec cli.ExitCoder
				if errors.As(err, &ec) {
					code = ec.ExitCode()
				}
			}}
		err := app.Run([]string{"watermark-connect", "demo", flag, "2"})
		require.Error(t, err, flag)
		require.Equal(t, 2, code, "a usage error exits 2 (status.OnUsageError)")
		msg := out.String()
		require.Contains(t, msg, flag, "the error names the flag")
		require.Contains(t, msg, `"2"`, "the error names the value")
		require.Contains(t, msg, "2s", "the error shows the expected form")
		require.NotContains(t, msg, "parse error")
	}
	// A good value still reads as a duration, and the help shows the default.
	var got string
	cmd := Command()
	cmd.Action = func(c *cli.Context) error { got = c.Duration("stall-replay-after").String(); return nil }
	require.NoError(t, (&cli.App{Commands: []*cli.Command{cmd}}).Run([]string{"x", "demo", "--stall-replay-after", "1m30s"}))
	require.Equal(t, "1m30s", got)
}
