package testkit

import (
	"fmt"
	"slices"
)

// Median returns the median of xs (the mean of the two middle values for an
// even count), 0 for none. xs is not changed.
func Median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	switch {
	case len(s) == 0:
		return 0
	case len(s)%2 == 1:
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// MedRange formats the median of xs and its range, each with format:
// "median [min–max]". xs must not be empty.
func MedRange(xs []float64, format string) string {
	lo, hi := slices.Min(xs), slices.Max(xs)
	return fmt.Sprintf(format+" ["+format+"–"+format+"]", Median(xs), lo, hi)
}
