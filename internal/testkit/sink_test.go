package testkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func newTestSink(t *testing.T, o SinkOptions) *Sink {
	t.Helper()
	s, err := NewSink(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// post sends b to the sink as the pipeline's http_client does, and returns
// the status.
func post(t *testing.T, s *Sink, b Batch) int {
	t.Helper()
	body, err := json.Marshal(b.Records)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, s.URL(), bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Instance", b.Instance)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestSinkRecordsAndJudges(t *testing.T) {
	var lie bool
	s := newTestSink(t, SinkOptions{Topic: "t", Partitions: 2, Want: val, Judge: func(b Batch) Answer {
		switch {
		case b.Records[0].P == 1:
			return Fail
		case lie:
			lie = false
			return AckUnrecorded
		}
		return Accept
	}})
	for _, c := range []struct {
		b    Batch
		want int
	}{
		{batch("a", 0, 0, 10), 200},
		{batch("b", 0, 10, 20), 200},
		{batch("a", 1, 0, 10), 500}, // Judge fails partition 1
		{Batch{}, 200},              // an empty batch: nothing to record
	} {
		if got := post(t, s, c.b); got != c.want {
			t.Errorf("POST of %d records: status %d, want %d", len(c.b.Records), got, c.want)
		}
	}
	s.View(func(*Ledger) { lie = true }) // Judge reads lie under the same lock
	if got := post(t, s, batch("a", 0, 20, 30)); got != 200 {
		t.Errorf("the lie: status %d, want 200", got)
	}
	l := s.Snapshot()
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"Prefix(0)", l.Prefix(0), 20},
		{"Prefix(1)", l.Prefix(1), 0},
		{"Records()", s.Records(), 20},
		{"Requests()", s.Requests(), 5},
		{"Failed()", s.Failed(), 1},
		{"ByInstance[b]", l.ByInstance["b"], 10},
		{"InFlight()", s.InFlight(), 0},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if l.BadCount != 0 {
		t.Errorf("bad: %q", l.Bad)
	}
	old := s.Reset()
	if old.Distinct() != 20 || s.Records() != 0 || s.Snapshot().Distinct() != 0 {
		t.Errorf("Reset: old ledger %d records, Records() = %d, new ledger %d; want 20, 0, 0", old.Distinct(), s.Records(), s.Snapshot().Distinct())
	}
}

func TestSinkBadBodies(t *testing.T) {
	s := newTestSink(t, SinkOptions{Partitions: 1})
	resp, err := http.Post(s.URL(), "application/json", strings.NewReader(`{"not": "an array"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("an object: status %d, want 400", resp.StatusCode)
	}
	// A client that dies mid-body: counted as aborted, not as bad.
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "POST /ingest HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n[{\"p\": 0, \"o\"")
	time.Sleep(50 * time.Millisecond)
	c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for s.Aborted() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := s.Aborted(); got != 1 {
		t.Errorf("Aborted() = %d, want 1", got)
	}
	l := s.Snapshot()
	if l.BadCount != 1 || !strings.Contains(l.Bad[0], "undecodable") {
		t.Errorf("Bad = %q, want one undecodable body", l.Bad)
	}
}

// A Gate in Hold holds the head batch while later ones pass; Open lets it
// through; Close answers what is still held 503 and records nothing.
func TestSinkHoldsAndCloses(t *testing.T) {
	g := NewGate()
	s := newTestSink(t, SinkOptions{Topic: "t", Partitions: 2, Hold: func(ctx context.Context, b Batch) Answer {
		if b.Records[0].O == 0 && !g.Wait(ctx, len(b.Records)) {
			return Unavailable
		}
		return Accept
	}})
	var wg sync.WaitGroup
	status := make([]int, 2)
	for p := range int32(2) {
		wg.Go(func() { status[p] = post(t, s, batch("a", p, 0, 5)) })
	}
	deadline := time.Now().Add(5 * time.Second)
	for g.Waiting() < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := post(t, s, batch("a", 0, 5, 10)); got != 200 {
		t.Errorf("a batch behind the held head: status %d, want 200", got)
	}
	if got := s.Snapshot().Prefix(0); got != 0 {
		t.Errorf("Prefix(0) = %d with the head held, want 0", got)
	}
	if g.Waiting() != 2 || g.HeldRecords() != 10 {
		t.Errorf("Waiting() = %d, HeldRecords() = %d, want 2, 10", g.Waiting(), g.HeldRecords())
	}
	s.Close()
	wg.Wait()
	if status[0] != 503 || status[1] != 503 {
		t.Errorf("held requests at Close: status %v, want 503s", status)
	}
	if got := s.Snapshot().Distinct(); got != 5 {
		t.Errorf("%d records recorded, want the 5 that were not held", got)
	}

	g2 := NewGate()
	s2 := newTestSink(t, SinkOptions{Topic: "t", Partitions: 1, Hold: func(ctx context.Context, b Batch) Answer {
		if !g2.Wait(ctx, len(b.Records)) {
			return Unavailable
		}
		return Accept
	}})
	done := make(chan int)
	go func() { done <- post(t, s2, batch("a", 0, 0, 3)) }()
	for g2.Waiting() < 1 {
		time.Sleep(5 * time.Millisecond)
	}
	g2.Open()
	g2.Open() // idempotent
	if got := <-done; got != 200 || s2.Records() != 3 {
		t.Errorf("after Open: status %d, %d records; want 200, 3", got, s2.Records())
	}
	if got := post(t, s2, batch("a", 0, 3, 4)); got != 200 || g2.Held() != 1 {
		t.Errorf("through an open gate: status %d, Held() = %d; want 200, 1", got, g2.Held())
	}
}

// The sink paces by records, across requests: 5 batches of 200 records at
// 2000 records/s take 400ms after the first, which goes at once.
func TestSinkPaces(t *testing.T) {
	s := newTestSink(t, SinkOptions{Topic: "t", Partitions: 1})
	s.SetRate(2000)
	start := time.Now()
	for i := range int64(5) {
		if got := post(t, s, batch("a", 0, i*200, (i+1)*200)); got != 200 {
			t.Fatalf("status %d", got)
		}
	}
	took := time.Since(start)
	if took < 380*time.Millisecond || took > 3*time.Second {
		t.Errorf("5 batches of 200 at 2000 records/s took %v, want about 400ms", took)
	}
	s.SetRate(0)
	start = time.Now()
	post(t, s, batch("a", 0, 1000, 2000))
	if took := time.Since(start); took > time.Second {
		t.Errorf("without a rate, a batch of 1000 took %v", took)
	}
}

func TestSinkDelays(t *testing.T) {
	s := newTestSink(t, SinkOptions{Topic: "t", Partitions: 1, MinDelay: 60 * time.Millisecond, MaxDelay: 70 * time.Millisecond})
	start := time.Now()
	post(t, s, batch("a", 0, 0, 1))
	if took := time.Since(start); took < 60*time.Millisecond {
		t.Errorf("a request took %v, want at least MinDelay 60ms", took)
	}
}

// A sink for an output that posts raw lines: Decode gives them no place,
// so they are counted and nothing else; Judge still sees every one.
func TestSinkDecodesRawBodies(t *testing.T) {
	var judged []string
	s := newTestSink(t, SinkOptions{
		Decode: func(body []byte) ([]Record, error) {
			var recs []Record
			for _, l := range strings.Split(strings.TrimSpace(string(body)), "\n") {
				recs = append(recs, Record{P: NoPartition, V: l})
			}
			return recs, nil
		},
		Judge: func(b Batch) Answer {
			judged = append(judged, b.Records[0].V)
			if b.Records[0].V == "poison" {
				return Fail
			}
			return Accept
		},
	})
	for _, c := range []struct {
		body string
		want int
	}{
		{"a\nb\nc\n", 200},
		{"poison", 500},
		{"", 200},
	} {
		resp, err := http.Post(s.URL(), "text/plain", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("POST %q: status %d, want %d", c.body, resp.StatusCode, c.want)
		}
	}
	l := s.Snapshot()
	if s.Records() != 4 || l.BadCount != 0 || len(l.Parts) != 0 {
		t.Errorf("Records() = %d, BadCount = %d, %d partitions; want 4, 0, 0", s.Records(), l.BadCount, len(l.Parts))
	}
	s.View(func(*Ledger) {
		if want := []string{"a", "poison", ""}; !reflect.DeepEqual(judged, want) {
			t.Errorf("judged %q, want %q", judged, want)
		}
	})
}
