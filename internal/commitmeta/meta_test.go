package commitmeta

import (
	"math"
	"testing"
)

func TestCovered(t *testing.T) {
	m := Meta{1200, 3, []Range{{1210, 1260}, {1280, 1320}}}
	for _, tc := range []struct {
		offset int64
		want   bool
	}{
		{math.MinInt64, false},
		{1200, false}, // the base itself is never delivered
		{1209, false},
		{1210, true},
		{1259, true},
		{1260, false}, // To is exclusive
		{1279, false},
		{1280, true},
		{1319, true},
		{1320, false},
		{math.MaxInt64, false},
	} {
		if got := m.Covered(tc.offset); got != tc.want {
			t.Errorf("Covered(%d) = %v, want %v", tc.offset, got, tc.want)
		}
	}
	if got := (Meta{}).Covered(0); got {
		t.Errorf("Meta{}.Covered(0) = %v, want false", got)
	}
	full := Meta{0, 0, []Range{{1, math.MaxInt64}}}
	if got := full.Covered(math.MaxInt64 - 1); !got {
		t.Errorf("%+v.Covered(MaxInt64-1) = %v, want true", full, got)
	}
}

func TestRecords(t *testing.T) {
	const top = math.MaxInt64
	for _, tc := range []struct {
		m    Meta
		want int64
	}{
		{Meta{}, 0},
		{Meta{1200, 3, []Range{{1210, 1260}, {1280, 1320}}}, 90},
		{Meta{0, 0, []Range{{1, top}}}, top - 1},
		// Metas that break the invariants, as a caller may build them:
		// empty and inverted ranges count nothing, sums saturate.
		{Meta{0, 0, []Range{{5, 5}, {9, 2}}}, 0},
		{Meta{0, 0, []Range{{math.MinInt64, top}}}, top},
		{Meta{0, 0, []Range{{0, top}, {0, 1}}}, top},
		{Meta{0, 0, []Range{{0, top - 1}, {0, 1}}}, top},
		{Meta{0, 0, []Range{{0, top}, {0, top}}}, top},
	} {
		if got := tc.m.Records(); got != tc.want {
			t.Errorf("%+v.Records() = %d, want %d", tc.m, got, tc.want)
		}
	}
}
