package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/watermark-connect/watermark-connect/bench/keyed"
)

// The key-ordering section (issue 21, docs/BENCHMARKS.md "Key-ordered
// delivery"): kafka_watermark with ordering: key against ordering: none and
// against Confluent's Parallel Consumer (KEY ordering), all posting one
// request per batch of up to 64 records to one HTTP sink in this process
// that answers after a random 5-20 ms, 64 requests in flight, and checks
// every key's order (keySink). Each topic has keyPartitions partitions and
// -key-records records of 100 B over a number of distinct keys
// (-key-counts); each round runs every contender on every topic, in a
// random order per topic. The failure runs (keyfail.go) follow the rounds.
const (
	keyPartitions = 8
	keyValueSize  = 100
	keyBatch      = 64 // batch_max_records; PC's batchSize
	keyInFlight   = 64 // http_client max_in_flight; PC's maxConcurrency
	// keyMaxHeld is the input's max_held_records default, which the runs
	// keep: the failure runs watch the held gauge reach it.
	keyMaxHeld = 10_000
)

// keyOptions are the section's flags.
type keyOptions struct {
	counts      []int    // distinct keys of each topic
	records     int      // records per topic
	contenders  []string // of key, none, pc
	failFor     time.Duration
	failAt      float64 // share of the records first delivered when the failure starts
	failRounds  int
	hotShare    float64  // the hot key's share of the hot topic's records; 0: no hot run
	failWho     []string // contenders of the failure runs, of key and pc
	failKeysTop int      // distinct keys of the failure runs' topics (the first of counts)
	profile     bool     // CPU profiles of key and none at the first count
}

// keyResult is one run of one contender on one topic.
type keyResult struct {
	measured
	reordered, overlapped, duplicates, distinct, mixed int64
	requests                                           int64 // requests the sink received in the run, failed ones included
}

// keyTopic is one filled topic of the section.
type keyTopic struct {
	name   string
	keys   int
	filled keyed.Filled
	hot    string // the hot key, when the topic has one
}

func keyOrder(ctx context.Context, w io.Writer, o options, a *admin, b binaries) error {
	ko := o.key
	s, err := newKeySink(keyPartitions)
	if err != nil {
		return err
	}
	defer s.Close()
	tag := strconv.FormatInt(time.Now().Unix()%1_000_000, 10)
	var topics []*keyTopic
	if !o.keep {
		defer func() {
			names := make([]string, len(topics))
			for i, t := range topics {
				names[i] = t.name
			}
			dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := a.deleteTopics(dctx, names...); err != nil {
				logf("deleting the topics: %v", err)
			}
		}()
	}
	newTopic := func(keys int, hot string, hotShare float64) (*keyTopic, error) {
		t := &keyTopic{name: fmt.Sprintf("bench-keys-%s-%d", tag, keys), keys: keys, hot: hot}
		if hot != "" {
			t.name += "-hot"
		}
		start := time.Now()
		if err := a.createTopic(ctx, t.name, keyPartitions); err != nil {
			return nil, err
		}
		topics = append(topics, t)
		t.filled, err = keyed.Fill{Brokers: strings.Split(a.brokers, ","), Topic: t.name, Records: ko.records, Keys: keys,
			Size: keyValueSize, Seed: 1, Hot: hot, HotShare: hotShare}.Run(ctx)
		if err != nil {
			return nil, err
		}
		logf("filled %s: %d records, %d distinct keys, in %v", t.name, ko.records, len(t.filled.Keys), time.Since(start).Round(time.Millisecond))
		return t, nil
	}
	var rounded []*keyTopic
	for _, k := range ko.counts {
		t, err := newTopic(k, "", 0)
		if err != nil {
			return err
		}
		rounded = append(rounded, t)
	}

	cs := keyContenders(o, b, a.brokers, s.URL())
	results := make([]map[string][]keyResult, len(rounded)) // [topic][contender][round]
	for i := range results {
		results[i] = map[string][]keyResult{}
	}
	failedRuns := 0
	rng := rand.New(rand.NewPCG(o.seed, 21))
	for r := range o.rounds {
		for ti, t := range rounded {
			for _, k := range rng.Perm(len(cs)) {
				ct := cs[k]
				res, err := runKeyed(ctx, o, s, ct, t, fmt.Sprintf("r%d-%s", r, ct.key), false, nil)
				if err != nil {
					logf("round %d, %d keys, %s: %v", r+1, t.keys, ct.key, err)
					res = keyResult{measured: measured{rate: math.NaN(), cpuPerM: math.NaN()}}
					failedRuns++
				} else {
					logf("round %d, %d keys, %-4s %8.0f rec/s %6.3f cpu-s/Mrec, reordered %d, overlapped %d, %.1f records per request (window %v)",
						r+1, t.keys, ct.key, res.rate, res.cpuPerM, res.reordered, res.overlapped,
						float64(res.distinct+res.duplicates)/float64(max(res.requests, 1)), res.window.Round(time.Millisecond))
				}
				results[ti][ct.key] = append(results[ti][ct.key], res)
			}
		}
	}
	if o.rounds > 0 {
		writeKeyThroughput(w, o, cs, rounded, results)
	} else {
		fmt.Fprintf(w, "### Key-ordered delivery\n\n")
	}
	if ko.profile {
		if err := keyProfile(ctx, w, o, s, cs, rounded[0], results[0]); err != nil {
			return err
		}
	}

	if ko.failRounds > 0 && len(ko.failWho) > 0 {
		var hot *keyTopic
		if ko.hotShare > 0 {
			if hot, err = newTopic(ko.failKeysTop, "hot", ko.hotShare); err != nil {
				return err
			}
		}
		base := rounded[0]
		for _, t := range rounded {
			if t.keys == ko.failKeysTop {
				base = t
			}
		}
		if err := keyFailures(ctx, w, o, s, cs, base, hot); err != nil {
			return err
		}
	}
	if failedRuns > 0 {
		return fmt.Errorf("%d run(s) of the key-ordering section failed (logged above, n/a in the tables)", failedRuns)
	}
	return nil
}

// keyContenders are the section's contenders, in the order of -key-contenders.
func keyContenders(o options, b binaries, brokers, sinkURL string) []contender {
	seeds := yamlList(strings.Split(brokers, ","))
	wm := func(ordering string) func(string, cell, string, string, bool) (string, []string, error) {
		return func(dir string, c cell, group, addr string, debug bool) (string, []string, error) {
			return keyBenthos(dir, b.head, seeds, c.topic, group, ordering, addr, sinkURL, debug)
		}
	}
	all := map[string]contender{
		"key":  {"key", "kafka_watermark, ordering: key", scrapeBenthos, wm("key"), nil},
		"none": {"none", "kafka_watermark, ordering: none", scrapeBenthos, wm("none"), nil},
		"pc": {"pc", "Confluent Parallel Consumer 0.5.3.3 (bench/parallelconsumer), KEY ordering, maxConcurrency 64, batchSize 64, commits every 1 s", scrapeBenthos,
			func(_ string, c cell, group, addr string, _ bool) (string, []string, error) {
				// -records past the log: the driver stops it (SIGTERM) once its
				// scrapes see every record delivered, as the other contenders.
				return "java", []string{"-jar", b.pcJar, "-brokers", brokers, "-topic", c.topic, "-group", group,
					"-sink", sinkURL, "-records", strconv.Itoa(10 * c.records), "-http", addr, "-timeout-s", "3600"}, nil
			}, nil},
	}
	var cs []contender
	for _, k := range o.key.contenders {
		cs = append(cs, all[k])
	}
	return cs
}

// keyBenthos writes the config of a kafka_watermark contender: the topic
// into one multipart request per batch (each message the record rendered as
// a testkit.Record), 64 in flight, no retries in the output: a failed
// request is a nack, which the input retries (nack_retry, without limit,
// backoff 100 ms to 1 s, so that a key failing for a while is delivered
// within a second of the failure's end).
func keyBenthos(dir, bin, seeds, topic, group, ordering, addr, sinkURL string, debug bool) (string, []string, error) {
	yaml := fmt.Sprintf(`http:
  enabled: true
  address: %s
  debug_endpoints: %v
logger:
  level: WARN
metrics:
  prometheus: {}
input:
  kafka_watermark:
    seed_brokers: %s
    topics: [ %q ]
    consumer_group: %q
    batch_max_records: %d
    ordering: %s
    max_held_records: %d
    nack_retry:
      max_retries: -1
      initial_backoff: 100ms
      max_backoff: 1s
pipeline:
  processors:
    - mapping: 'root = {"t": @kafka_topic, "p": @kafka_partition, "o": @kafka_offset, "v": content().string()}'
output:
  http_client:
    url: %q
    verb: POST
    batch_as_multipart: true
    max_in_flight: %d
    retries: 0
    timeout: 30s
`, addr, debug, seeds, topic, group, keyBatch, ordering, keyMaxHeld, sinkURL, keyInFlight)
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		return "", nil, err
	}
	return bin, []string{"-c", path}, nil
}

// runKeyed runs one contender over topic t with a fresh group and measures
// it as the throughput section does (its window, its process's CPU), with
// the sink's account of key order. debug serves /debug/pprof; during, when
// set, runs beside the measurement with the process's HTTP address, and the
// process is stopped only once it has returned.
func runKeyed(ctx context.Context, o options, s *keySink, ct contender, t *keyTopic, tag string, debug bool, during func(addr string)) (keyResult, error) {
	dir := filepath.Join(o.workDir, "keyorder", t.name+"-"+tag)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return keyResult{}, err
	}
	addr, err := freeAddr()
	if err != nil {
		return keyResult{}, err
	}
	c := cell{partitions: keyPartitions, size: keyValueSize, codec: "none", records: o.key.records, topic: t.name}
	bin, args, err := ct.args(dir, c, "g-"+t.name+"-"+tag, addr, debug)
	if err != nil {
		return keyResult{}, err
	}
	s.startRun(t.name, keyPartitions, "", 0, math.MaxInt64)
	reqs := s.Requests()
	p, err := startProc(dir, ct.key, bin, args, addr)
	if err != nil {
		s.endRun()
		return keyResult{}, err
	}
	var hold chan struct{}
	if during != nil {
		hold = make(chan struct{})
		go func() { defer close(hold); during(addr) }()
	}
	m, err := p.measure(ctx, int64(c.records), ct.scrape, o.runTimeout, hold)
	s.WaitIdle(10 * time.Second)
	run := s.endRun()
	if err != nil {
		return keyResult{}, err
	}
	res := keyResult{measured: m, reordered: run.chk.Reordered, overlapped: run.chk.Overlapped,
		duplicates: run.chk.Duplicates, distinct: run.chk.Distinct, mixed: run.chk.MixedBatches, requests: s.Requests() - reqs}
	if run.chk.Foreign > 0 {
		return res, fmt.Errorf("the sink saw %d records of another topic or partition", run.chk.Foreign)
	}
	if res.distinct < int64(c.records) {
		return res, fmt.Errorf("the sink saw %d distinct records of %d", res.distinct, c.records)
	}
	return res, nil
}
