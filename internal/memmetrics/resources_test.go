package memmetrics

import (
	"context"
	"testing"
)

// Each call's resources report to its own store, and only to it.
func TestResourcesReportToTheirStore(t *testing.T) {
	res1, s1, close1, err := Resources()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = close1(context.Background()) }()
	res2, s2, close2, err := Resources()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = close2(context.Background()) }()
	res1.Metrics().NewGauge("g", "topic", "partition").Set(7, "t", "1")
	res2.Metrics().NewGauge("g", "topic", "partition").Set(9, "t", "1")
	if got := s1.Get("g", "t", 1); got != 7 {
		t.Fatalf("first store: g = %d, want 7", got)
	}
	if got := s2.Get("g", "t", 1); got != 9 {
		t.Fatalf("second store: g = %d, want 9", got)
	}
}
