package main

import (
	"fmt"
	"math"

	"github.com/dustin/go-humanize"
	"github.com/redpanda-data/benthos/v4/public/service"
	ucli "github.com/urfave/cli/v2"

	"github.com/watermark-connect/watermark-connect/internal/gctune"
)

// memoryLimitFlag sets the soft memory limit explicitly, for run, streams
// and the root command's -c (internal/gctune decides what wins).
const memoryLimitFlag = "memory-limit"

// gcTuning holds the GC settings of this process: decided and applied at
// start from the environment and the container (gctune.Start), decided
// again once the run flags are parsed, and logged once the service's logger
// exists. Benthos calls its hooks one after the other on the goroutine that
// runs the command (benthos v4.60.0 internal/cli/common/service.go:43 the
// flags, :57 the logger), so it needs no lock.
type gcTuning struct {
	s gctune.Settings
}

// startGC decides and applies the settings from the environment and the
// container: before anything else runs, so every command gets them.
func startGC() *gcTuning {
	return &gcTuning{s: gctune.Start()}
}

// cliOptions add --memory-limit to Benthos's run flags (run, streams and
// the root's -c; service.CLIOptCustomRunFlags, benthos v4.60.0
// public/service/service.go:247, appended to each in
// internal/cli/common/run_flags.go:143) and log the settings in force at
// the service's start (service.CLIOptOnLoggerInit, service.go:166, called
// from internal/cli/common/logger.go:28 for run and streams only).
func (g *gcTuning) cliOptions() []service.CLIOptFunc {
	flag := &ucli.StringFlag{
		Name:  memoryLimitFlag,
		Usage: "the Go runtime's soft memory limit, e.g. 1536MiB (default: 90% of the container's cgroup memory limit, or none; GOMEMLIMIT wins over it)",
	}
	return []service.CLIOptFunc{
		service.CLIOptCustomRunFlags([]ucli.Flag{flag}, g.onRunFlags),
		service.CLIOptOnLoggerInit(func(l *service.Logger) {
			l.With("gc_percent_from", string(g.s.PercentFrom), "memory_limit_from", string(g.s.LimitFrom)).Info(g.s.String())
		}),
	}
}

// onRunFlags applies --memory-limit when given. The flag may be given to
// the subcommand or, for `-c`, to the root command: urfave/cli's c.String
// reads the innermost command that defines the flag, set or not, so each
// context of the lineage is asked whether it was set there.
func (g *gcTuning) onRunFlags(c *ucli.Context) error {
	for _, cc := range c.Lineage() {
		if !cc.IsSet(memoryLimitFlag) {
			continue
		}
		v := cc.String(memoryLimitFlag)
		n, err := humanize.ParseBytes(v)
		if err != nil || n == 0 || n > math.MaxInt64 {
			return fmt.Errorf("--%s %q: want a size such as 512MiB or 2GB, above zero", memoryLimitFlag, v)
		}
		g.s = g.s.WithFlagLimit(int64(n))
		g.s.Apply()
		return nil
	}
	return nil
}
