package demo

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"
)

// durationFlag is a duration flag whose refusal says what a duration looks
// like. urfave/cli's DurationFlag hands parsing to the flag package, which
// answers `invalid value "2" for flag -stall-replay-after: parse error`: the
// flag is named but the expected form is not, and "2" (no unit) is the usual
// mistake. c.Duration reads it as any duration flag (it parses String()).
func durationFlag(name string, value time.Duration, usage string) *cli.GenericFlag {
	v := durationValue(value)
	return &cli.GenericFlag{Name: name, Value: &v, Usage: usage}
}

// durationValue is the flag.Value behind durationFlag.
type durationValue time.Duration

func (d *durationValue) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration with its unit, such as 2s, 500ms or 1m30s")
	}
	*d = durationValue(v)
	return nil
}

func (d *durationValue) String() string { return time.Duration(*d).String() }
