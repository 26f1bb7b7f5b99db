package testkit

import "testing"

func TestMedianAndRange(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := Median(c.xs); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
	xs := []float64{5, 1, 3}
	if got, want := MedRange(xs, "%.1f"), "3.0 [1.0–5.0]"; got != want {
		t.Errorf("MedRange(%v) = %q, want %q", xs, got, want)
	}
	if xs[0] != 5 {
		t.Errorf("MedRange sorted its argument: %v", xs)
	}
}
