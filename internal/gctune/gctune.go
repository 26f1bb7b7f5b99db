// Package gctune picks the Go garbage collector's settings of the
// watermark-connect binary: a GC percent higher than Go's 100, and a soft
// memory limit from the container the process runs in.
//
// Per record, a Benthos pipeline reading Kafka allocates about a kilobyte
// that dies young (the message, its metadata map, its spans), and at Go's
// GOGC=100 the background GC took a quarter of the binary's CPU
// (docs/BENCHMARKS.md). A higher percent lets the heap grow further past
// what is live before a cycle, so cycles are rarer; the price is memory, up
// to (1 + percent/100) times the live heap. The soft limit is what makes
// that price safe in a container: near the limit the GC runs as often as it
// must, whatever the percent, so a burst that would grow the heap past the
// container's memory costs CPU instead of an OOM kill.
//
// The user decides first: GOGC, when set, is the percent and GOMEMLIMIT,
// when set, the limit (the runtime has applied them before main runs; each
// wins over the binary for its own setting). Otherwise the percent is
// DefaultPercent, and the limit is, in this order, the one given explicitly
// (--memory-limit), LimitFraction of the container's cgroup memory limit,
// or none. Settings.String is the one line the binary logs at start.
//
// Why not github.com/KimMachineGun/automemlimit (v1.0.2, which pulls in
// only github.com/pbnjay/memory): its cgroup reader (memlimit.FromCgroup)
// reads the real /proc/self/cgroup and /proc/self/mountinfo and nothing
// else, so the cases this package promises (v1, v2, "max", no cgroup) could
// not be tested against files of our own; and it returns a number, not the
// file it came from, which the start-up line names. ReadContainer follows
// its selection rules (cgroup.go says which).
package gctune

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"

	"github.com/dustin/go-humanize"
)

const (
	// DefaultPercent is the GC percent when GOGC is not set. Chosen by
	// measurement (docs/BENCHMARKS.md, "The GC percent"): against Go's 100,
	// 300 took 0.76 to 0.84 of the CPU per record at 8 partitions and 0.84
	// to 0.94 at 64 (100 B and 1 KiB records), as little as 400, 600 or 800
	// did, at 1.5 to 1.8 times the peak RSS, where 400 cost about 2.1 times.
	DefaultPercent = 300

	// LimitFraction is the share of the container's memory limit that
	// becomes the soft memory limit. The rest is headroom for what the Go
	// runtime does not count (the binary's mapped text, the kernel's page
	// cache charged to the cgroup) and for the limit being soft.
	LimitFraction = 0.9
)

// Env is what the user set in the environment; "" is unset (the runtime
// reads an empty GOGC or GOMEMLIMIT as unset too).
type Env struct {
	GOGC, GOMEMLIMIT string
}

// EnvFromOS reads GOGC and GOMEMLIMIT.
func EnvFromOS() Env {
	return Env{GOGC: os.Getenv("GOGC"), GOMEMLIMIT: os.Getenv("GOMEMLIMIT")}
}

// Inputs are what Decide decides from.
type Inputs struct {
	Env Env
	// FlagLimit is the limit given explicitly (--memory-limit), in bytes;
	// 0 when not given.
	FlagLimit int64
	// Container is the cgroup's memory limit (ReadContainer).
	Container Container
}

// Source says where a setting came from.
type Source string

const (
	FromEnv       Source = "env"       // GOGC or GOMEMLIMIT, applied by the runtime
	FromDefault   Source = "default"   // DefaultPercent
	FromFlag      Source = "flag"      // --memory-limit
	FromContainer Source = "container" // LimitFraction of the cgroup's limit
	FromNone      Source = "none"      // no limit: Go's default
)

// Settings are the GC settings in force and where each came from. Apply
// sets the ones whose source is the binary's (default, flag, container);
// the runtime has set the others. A Settings is a plain value.
type Settings struct {
	Percent     int // the GC percent set when PercentFrom is FromDefault
	PercentFrom Source
	Limit       int64 // the soft memory limit set when LimitFrom is FromFlag or FromContainer, bytes
	LimitFrom   Source
	in          Inputs
}

// Start decides the settings of this process from its environment and its
// cgroup, and applies them. Call it first thing in main: the binary's
// commands and the benchmark's baseline all do.
func Start() Settings {
	s := Decide(Inputs{Env: EnvFromOS(), Container: ReadContainer("/")})
	s.Apply()
	return s
}

// WithFlagLimit decides again with a limit given explicitly, in bytes (0:
// none), from the same environment and container.
func (s Settings) WithFlagLimit(limit int64) Settings {
	in := s.in
	in.FlagLimit = limit
	return Decide(in)
}

// Decide picks the settings: the environment first, then the flag, then
// the container, then the defaults (package doc).
func Decide(in Inputs) Settings {
	s := Settings{in: in, Percent: DefaultPercent, PercentFrom: FromDefault}
	if in.Env.GOGC != "" {
		s.Percent, s.PercentFrom = 0, FromEnv
	}
	switch {
	case in.Env.GOMEMLIMIT != "":
		s.LimitFrom = FromEnv
	case in.FlagLimit > 0:
		s.Limit, s.LimitFrom = in.FlagLimit, FromFlag
	case in.Container.Limit > 0:
		s.Limit, s.LimitFrom = SoftLimit(in.Container.Limit), FromContainer
	default:
		s.LimitFrom = FromNone
	}
	return s
}

// SoftLimit is the soft memory limit the binary sets in a container of the
// given limit: LimitFraction of it.
func SoftLimit(limit uint64) int64 {
	return int64(min(float64(limit)*LimitFraction, math.MaxInt64))
}

// Apply sets the settings that are the binary's own. It is meant for a
// process's start, before the work begins; the runtime makes either call
// safe at any time.
func (s Settings) Apply() {
	if s.PercentFrom == FromDefault {
		debug.SetGCPercent(s.Percent)
	}
	if s.LimitFrom == FromFlag || s.LimitFrom == FromContainer {
		debug.SetMemoryLimit(s.Limit)
	}
}

// String is the start-up line: each setting in force, where it came from,
// and what it won over.
func (s Settings) String() string {
	var percent string
	switch s.PercentFrom {
	case FromEnv:
		percent = fmt.Sprintf("GC percent %s from GOGC", s.in.Env.GOGC)
	default:
		percent = fmt.Sprintf("GC percent %d, the binary's default (GOGC unset)", s.Percent)
	}
	c := s.in.Container
	container := "container: " + c.Where
	switch {
	case c.Err != nil:
		container = fmt.Sprintf("container limit unknown: %s: %v", c.Where, c.Err)
	case c.Limit > 0:
		container = fmt.Sprintf("container limit %s in %s", humanize.IBytes(c.Limit), c.Where)
	}
	var limit string
	switch s.LimitFrom {
	case FromEnv:
		limit = fmt.Sprintf("memory limit %s from GOMEMLIMIT", s.in.Env.GOMEMLIMIT)
		if s.in.FlagLimit > 0 {
			limit += fmt.Sprintf(", over --memory-limit %s", humanize.IBytes(uint64(s.in.FlagLimit)))
		}
		limit += "; " + container
	case FromFlag:
		limit = fmt.Sprintf("memory limit %s from --memory-limit; %s", humanize.IBytes(uint64(s.Limit)), container)
	case FromContainer:
		limit = fmt.Sprintf("memory limit %s, %.0f%% of the container limit %s in %s",
			humanize.IBytes(uint64(s.Limit)), LimitFraction*100, humanize.IBytes(c.Limit), c.Where)
	default:
		limit = "no memory limit (" + container + ")"
	}
	return "GC settings: " + percent + "; " + limit
}
