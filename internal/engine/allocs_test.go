package engine

import "testing"

// allocsPerRun is testing.AllocsPerRun taken at its least over a few
// measurements. AllocsPerRun counts every allocation in the process, and in
// this package goroutines of earlier tests (streams, clients and timers that
// are still winding down) can allocate while it measures, so one measurement
// can only be too high, never too low: the least of several is the closest
// to what f itself allocates. A real regression raises every measurement,
// so it still fails the tests that use this.
func allocsPerRun(runs int, f func()) float64 {
	least := testing.AllocsPerRun(runs, f)
	for range 4 {
		if least == 0 {
			break
		}
		least = min(least, testing.AllocsPerRun(runs, f))
	}
	return least
}
