package main

import (
	"bytes"
	"encoding/json"
	"math"
	"mime/multipart"
	"slices"
	"testing"
	"time"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

func TestDecodeKeyed(t *testing.T) {
	recs := []testkit.Record{{T: "t", P: 1, O: 7, V: "k1 aa"}, {T: "t", P: 1, O: 9, V: "k2 bb"}}
	array, _ := json.Marshal(recs)
	one, _ := json.Marshal(recs[0])
	// As Benthos's http_client writes a batch of several messages.
	var mp bytes.Buffer
	mw := multipart.NewWriter(&mp)
	for _, r := range recs {
		part, _ := mw.CreatePart(map[string][]string{"Content-Type": {"application/octet-stream"}})
		b, _ := json.Marshal(r)
		_, _ = part.Write(b)
	}
	_ = mw.Close()
	for _, c := range []struct {
		name string
		body []byte
		want []testkit.Record
	}{
		{"JSON array (pc)", array, recs},
		{"one message (a batch of one)", one, recs[:1]},
		{"multipart (a batch of several)", mp.Bytes(), recs},
	} {
		got, err := decodeKeyed(c.body)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("decodeKeyed(%s) = %v, %v; want %v", c.name, got, err, c.want)
		}
	}
	if _, err := decodeKeyed([]byte("hello")); err == nil {
		t.Errorf("decodeKeyed(hello): no error")
	}
}

func TestFailWindow(t *testing.T) {
	t0 := time.Unix(100, 0)
	at := func(ms ...int) []int64 {
		var out []int64
		for _, m := range ms {
			out = append(out, t0.Add(time.Duration(m)*time.Millisecond).UnixNano())
		}
		return out
	}
	// 12 other records: 2 before the start, 10 after; the failure run's
	// last one is a hostage of the failing hand-out, delivered at 5 s.
	fc := failCase{others: 12}
	fail := failRun{start: t0, limitAt: -1, others: at(-20, -10, 100, 200, 300, 400, 500, 600, 700, 800, 900, 5000)}
	ctrl := failRun{start: t0, limitAt: -1, others: at(-20, -10, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000)}
	for _, c := range []struct {
		name      string
		got, want time.Duration
	}{
		{"fail.othersDone", fail.othersDone(fc), 5 * time.Second},
		{"ctrl.othersDone", ctrl.othersDone(fc), time.Second},
		{"fail.othersAt(0.9)", fail.othersAt(fc, 0.9), 900 * time.Millisecond},
		{"othersAt past the end", failRun{start: t0, others: at(100)}.othersAt(fc, 0.5), -1},
		{"window: 90% of the others", failPair{fail, ctrl}.window(fc, 30*time.Second), 900 * time.Millisecond},
		{"window: the failure's end", failPair{fail, ctrl}.window(fc, 250*time.Millisecond), 250 * time.Millisecond},
		{"window: the held limit", failPair{failRun{start: t0, limitAt: 150 * time.Millisecond, others: fail.others}, ctrl}.window(fc, 30*time.Second), 150 * time.Millisecond},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if got := fail.rate(900 * time.Millisecond); math.Abs(got-10) > 1e-9 {
		t.Errorf("rate over 900ms = %v, want 10 (9 records)", got)
	}
}

func TestSchedulerCum(t *testing.T) {
	const kp = "github.com/watermark-connect/watermark-connect/internal/keyorder."
	for _, c := range []struct {
		name string
		cum  map[string]float64
		want float64
	}{
		{"plain", map[string]float64{kp + "(*Scheduler).Add": 1, kp + "(*Scheduler).Pick": 2, kp + "(*Scheduler).Done": 3, kp + "(*Scheduler).newSlot": 9}, 6},
		{"generic, Pick wrapping PickClass", map[string]float64{
			kp + "(*Scheduler[go.shape.struct { a int }]).Add": 1, kp + "(*Scheduler[go.shape.struct { a int }]).Pick": 2,
			kp + "(*Scheduler[go.shape.struct { a int }]).PickClass": 2, kp + "(*Scheduler[go.shape.struct { a int }]).Done": 3}, 6},
	} {
		if got := schedulerCum(c.cum); got != c.want {
			t.Errorf("schedulerCum(%s) = %v, want %v", c.name, got, c.want)
		}
	}
}
