package gctune

import (
	"math"
	"runtime/debug"
	"strings"
	"testing"
)

func TestDecide(t *testing.T) {
	gib := Container{Limit: 1 << 30, Where: "cgroup v2 /sys/fs/cgroup/memory.max"}
	none := Container{Where: "cgroup v2 /sys/fs/cgroup/memory.max: max"}
	broken := Container{Where: "cgroup v2 /sys/fs/cgroup/memory.max", Err: errString("permission denied")}
	for _, tc := range []struct {
		name        string
		in          Inputs
		percentFrom Source
		limitFrom   Source
		limit       int64
		line        []string // substrings of the start-up line
	}{
		{
			name:        "nothing set, a container limit: the default percent and 90% of the container",
			in:          Inputs{Container: gib},
			percentFrom: FromDefault, limitFrom: FromContainer, limit: 966367641,
			line: []string{"GC percent 300, the binary's default (GOGC unset)", "memory limit 922 MiB, 90% of the container limit 1.0 GiB in cgroup v2 /sys/fs/cgroup/memory.max"},
		},
		{
			name:        "nothing set, no container limit: the percent alone",
			in:          Inputs{Container: none},
			percentFrom: FromDefault, limitFrom: FromNone,
			line: []string{"GC percent 300", "no memory limit (container: cgroup v2 /sys/fs/cgroup/memory.max: max)"},
		},
		{
			name:        "the cgroup could not be read: the percent alone, and the line says why",
			in:          Inputs{Container: broken},
			percentFrom: FromDefault, limitFrom: FromNone,
			line: []string{"no memory limit (container limit unknown: cgroup v2 /sys/fs/cgroup/memory.max: permission denied)"},
		},
		{
			name:        "GOGC set: the user's percent; the limit is still the container's",
			in:          Inputs{Env: Env{GOGC: "150"}, Container: gib},
			percentFrom: FromEnv, limitFrom: FromContainer, limit: 966367641,
			line: []string{"GC percent 150 from GOGC", "90% of the container limit"},
		},
		{
			name:        "GOGC=off: the user's; with a container limit the GC still runs near it",
			in:          Inputs{Env: Env{GOGC: "off"}, Container: gib},
			percentFrom: FromEnv, limitFrom: FromContainer, limit: 966367641,
			line: []string{"GC percent off from GOGC"},
		},
		{
			name:        "GOMEMLIMIT set: the user's limit, over the container's",
			in:          Inputs{Env: Env{GOMEMLIMIT: "512MiB"}, Container: gib},
			percentFrom: FromDefault, limitFrom: FromEnv,
			line: []string{"GC percent 300", "memory limit 512MiB from GOMEMLIMIT; container limit 1.0 GiB in cgroup v2"},
		},
		{
			name:        "both set: nothing of the binary's",
			in:          Inputs{Env: Env{GOGC: "100", GOMEMLIMIT: "off"}, Container: gib},
			percentFrom: FromEnv, limitFrom: FromEnv,
			line: []string{"GC percent 100 from GOGC", "memory limit off from GOMEMLIMIT"},
		},
		{
			name:        "the flag: over the container's limit",
			in:          Inputs{FlagLimit: 256 << 20, Container: gib},
			percentFrom: FromDefault, limitFrom: FromFlag, limit: 256 << 20,
			line: []string{"memory limit 256 MiB from --memory-limit; container limit 1.0 GiB in"},
		},
		{
			name:        "the flag with no container limit",
			in:          Inputs{FlagLimit: 256 << 20, Container: none},
			percentFrom: FromDefault, limitFrom: FromFlag, limit: 256 << 20,
			line: []string{"memory limit 256 MiB from --memory-limit; container: cgroup v2"},
		},
		{
			name:        "GOMEMLIMIT wins over the flag too, and the line says the flag lost",
			in:          Inputs{Env: Env{GOMEMLIMIT: "2GiB"}, FlagLimit: 256 << 20, Container: none},
			percentFrom: FromDefault, limitFrom: FromEnv,
			line: []string{"memory limit 2GiB from GOMEMLIMIT, over --memory-limit 256 MiB"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Decide(tc.in)
			if s.PercentFrom != tc.percentFrom || s.LimitFrom != tc.limitFrom || s.Limit != tc.limit {
				t.Errorf("Decide(%+v) = percent from %s, limit %d from %s; want percent from %s, limit %d from %s",
					tc.in, s.PercentFrom, s.Limit, s.LimitFrom, tc.percentFrom, tc.limit, tc.limitFrom)
			}
			if s.PercentFrom == FromDefault && s.Percent != DefaultPercent {
				t.Errorf("Percent = %d, want %d", s.Percent, DefaultPercent)
			}
			line := s.String()
			for _, want := range tc.line {
				if !strings.Contains(line, want) {
					t.Errorf("String() = %q, want it to contain %q", line, want)
				}
			}
		})
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// Apply sets what is the binary's and leaves what the runtime took from the
// environment.
func TestApply(t *testing.T) {
	prevPercent, prevLimit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(prevPercent); debug.SetMemoryLimit(prevLimit) })

	Decide(Inputs{FlagLimit: 64 << 20}).Apply()
	if got := debug.SetGCPercent(100); got != DefaultPercent {
		t.Errorf("GC percent after Apply = %d, want %d", got, DefaultPercent)
	}
	if got := debug.SetMemoryLimit(-1); got != 64<<20 {
		t.Errorf("memory limit after Apply = %d, want %d", got, 64<<20)
	}

	debug.SetMemoryLimit(math.MaxInt64)
	Decide(Inputs{Env: Env{GOGC: "100", GOMEMLIMIT: "1GiB"}, FlagLimit: 64 << 20, Container: Container{Limit: 1 << 30}}).Apply()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GC percent after Apply with GOGC set = %d, want it left at 100", got)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("memory limit after Apply with GOMEMLIMIT set = %d, want it left alone", got)
	}
}
