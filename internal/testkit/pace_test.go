package testkit

import (
	"testing"
	"time"
)

func TestPacerSchedule(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var p Pacer
	if got := p.Reserve(1_000_000, t0); got != 0 {
		t.Fatalf("zero Pacer: Reserve = %v, want 0", got)
	}
	p.SetRate(1000) // a record per millisecond
	for _, step := range []struct {
		n    int
		at   time.Duration // after t0
		want time.Duration
	}{
		{100, 0, 0},                      // the first batch goes at once
		{100, 0, 100 * time.Millisecond}, // the second waits for the first's 100 records
		{50, 50 * time.Millisecond, 150 * time.Millisecond}, // slot at 200ms, asked at 50ms
		{10, 250 * time.Millisecond, 0},                     // the schedule ended at 250ms: no wait
		{10, 10 * time.Second, 0},                           // idle time is not banked...
		{10, 10 * time.Second, 10 * time.Millisecond},       // ...so the next waits its predecessor's share
	} {
		if got := p.Reserve(step.n, t0.Add(step.at)); got != step.want {
			t.Errorf("Reserve(%d) at +%v = %v, want %v", step.n, step.at, got, step.want)
		}
	}
	p.SetRate(0)
	if got := p.Reserve(100, t0.Add(10*time.Second)); got != 0 {
		t.Errorf("after SetRate(0): Reserve = %v, want 0", got)
	}
	p.SetRate(100)
	if got, want := p.Rate(), 100.0; got != want {
		t.Errorf("Rate() = %v, want %v", got, want)
	}
	// A new rate starts a new schedule: the backlog of the old one is gone.
	p.Reserve(1000, t0)
	p.SetRate(100)
	if got := p.Reserve(1, t0); got != 0 {
		t.Errorf("Reserve right after SetRate = %v, want 0", got)
	}
}
