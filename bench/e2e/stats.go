package main

import (
	"fmt"
	"math"
	"slices"
)

// spread is the median and range of one figure over the rounds.
type spread struct{ med, lo, hi float64 }

func spreadOf(xs []float64) spread {
	s := slices.Clone(xs)
	s = slices.DeleteFunc(s, math.IsNaN)
	if len(s) == 0 {
		return spread{math.NaN(), math.NaN(), math.NaN()}
	}
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return spread{m, s[0], s[len(s)-1]}
}

// format prints the median and its range with the given verb, e.g. "%.2f".
func (s spread) format(verb string) string {
	if math.IsNaN(s.med) {
		return "n/a"
	}
	return fmt.Sprintf(verb+" ["+verb+"–"+verb+"]", s.med, s.lo, s.hi)
}

// ratios pairs two contenders' figures round by round (they ran next to
// each other in time) and returns a/b for each round.
func ratios(a, b []float64) []float64 {
	out := make([]float64, 0, len(a))
	for i := range min(len(a), len(b)) {
		if b[i] == 0 {
			out = append(out, math.NaN())
			continue
		}
		out = append(out, a[i]/b[i])
	}
	return out
}

// kilo prints a rate in thousands.
func kilo(s spread) string {
	if math.IsNaN(s.med) {
		return "n/a"
	}
	return fmt.Sprintf("%.0fk [%.0f–%.0f]", s.med/1e3, s.lo/1e3, s.hi/1e3)
}
