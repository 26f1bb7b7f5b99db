package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"time"

	"github.com/watermark-connect/watermark-connect/bench/keyed"
	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// keySink is the key-ordering section's HTTP sink: one request per batch,
// answered after a random 5-20 ms, every request judged by a keyed.Check
// (violations of key order per run), and, when a run asks for it, one key's
// requests answered 500 for a while. It also keeps, per partition, when each
// record of a key other than the run's failing key was first delivered: the
// failure runs' rates come from that timeline.
//
// Every field but Sink is per run (startRun replaces them) and is read and
// written only under the Sink's lock: in judge (the Sink's Judge) and in
// View.
type keySink struct {
	*testkit.Sink

	run *keyRun
}

// keyRun is what the sink knows of one run.
type keyRun struct {
	chk *keyed.Check
	// failKey is the key whose records the timeline leaves out (the key a
	// failure run fails, and the same key in its control runs); failFor > 0
	// fails every request holding it for that long from the moment startAt
	// records were first delivered.
	failKey         string
	failFor         time.Duration
	startAt         int64
	start           time.Time // when startAt records were delivered; zero before
	failed          int64     // requests answered 500 on purpose
	others          [][]int64 // [partition]: Unix ns of each first delivery of a record not of failKey, in order
	failKeyLastSeen time.Time // the last first delivery of a failKey record
}

func newKeySink(partitions int) (*keySink, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	s := &keySink{}
	s.Sink, err = testkit.NewSink(testkit.SinkOptions{
		Addr: addr, Partitions: partitions, Decode: decodeKeyed,
		MinDelay: 5 * time.Millisecond, MaxDelay: 20 * time.Millisecond,
		Judge: s.judge,
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// startRun begins a run on topic: records of another topic are foreign.
// failKey, failFor and startAt are keyRun's.
func (s *keySink) startRun(topic string, partitions int, failKey string, failFor time.Duration, startAt int64) {
	r := &keyRun{chk: keyed.NewCheck(topic, partitions), failKey: failKey, failFor: failFor, startAt: startAt,
		others: make([][]int64, partitions)}
	r.chk.First = r.first
	s.Reset()
	s.View(func(*testkit.Ledger) { s.run = r })
}

// endRun returns the run's account. The run's process must be gone and the
// sink idle: requests still in progress would go on changing it.
func (s *keySink) endRun() *keyRun {
	var r *keyRun
	s.View(func(*testkit.Ledger) { r, s.run = s.run, nil })
	s.Reset()
	return r
}

// distinct is the number of records first delivered in this run.
func (s *keySink) distinct() int64 {
	var n int64
	s.View(func(*testkit.Ledger) {
		if s.run != nil {
			n = s.run.chk.Distinct
		}
	})
	return n
}

// judge is the Sink's Judge, under its lock.
func (s *keySink) judge(b testkit.Batch) testkit.Answer {
	r := s.run
	if r == nil {
		return testkit.Unavailable // between runs: a late request of a stopped process
	}
	now := time.Now()
	if r.failFor > 0 && !r.start.IsZero() && now.Sub(r.start) < r.failFor {
		for _, rec := range b.Records {
			if keyed.KeyOf(rec.V) == r.failKey {
				r.failed++
				return testkit.Fail
			}
		}
	}
	return r.chk.Judge(b, now)
}

// first is the run's Check.First: the timeline, and the failure's start.
func (r *keyRun) first(rec testkit.Record, key string, now time.Time) {
	if key == r.failKey {
		r.failKeyLastSeen = now
	} else if rec.P >= 0 && int(rec.P) < len(r.others) {
		r.others[rec.P] = append(r.others[rec.P], now.UnixNano())
	}
	if r.start.IsZero() && r.chk.Distinct >= r.startAt {
		r.start = now
	}
}

// decodeKeyed reads a request of any contender: Benthos's http_client with
// batch_as_multipart posts a batch of several messages as multipart (each
// part one rendered record) and a batch of one as that message alone (one
// JSON object); Parallel Consumer's contender posts a JSON array.
func decodeKeyed(body []byte) ([]testkit.Record, error) {
	b := bytes.TrimLeft(body, " \t\r\n")
	switch {
	case len(b) == 0:
		return nil, nil
	case b[0] == '[':
		var recs []testkit.Record
		err := json.Unmarshal(b, &recs)
		return recs, err
	case b[0] == '{':
		var r testkit.Record
		err := json.Unmarshal(b, &r)
		return []testkit.Record{r}, err
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	boundary, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("--"))
	if !ok || len(boundary) == 0 {
		return nil, fmt.Errorf("neither JSON nor multipart: %.40q", b)
	}
	mr := multipart.NewReader(bytes.NewReader(b), string(boundary))
	var recs []testkit.Record
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return recs, nil
		}
		if err != nil {
			return recs, err
		}
		var r testkit.Record
		if err := json.NewDecoder(p).Decode(&r); err != nil {
			return recs, fmt.Errorf("part %d: %w", len(recs), err)
		}
		recs = append(recs, r)
	}
}
