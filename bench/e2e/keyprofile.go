package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// keyCategories are where a kafka_watermark contender of the key-ordering
// section spends its CPU. Unlike the throughput matrix's, the pipeline and
// the output have rows, each with its own tracing spans; no root calls
// another (the HTTP connections' goroutines are started, not called, by the
// output's writes).
var keyCategories = []category{
	{"record to message: plugin.RecordsToBatch", regexp.MustCompile(`^github.com/watermark-connect/watermark-connect/plugin\.RecordsToBatch$`)},
	{"kafka_watermark's owner goroutine (under key, the scheduler too)", regexp.MustCompile(`^github.com/watermark-connect/watermark-connect/internal/engine\.\(\*owner\)\.run$`)},
	{"franz-go: fetch, decompress, decode (kgo source loop)", regexp.MustCompile(`^github.com/twmb/franz-go/pkg/kgo\.\(\*source\)\.loopFetch$`)},
	{"the pipeline: the mapping rendering each record as JSON, its spans", regexp.MustCompile(`^github.com/redpanda-data/benthos/v4/internal/pipeline\.\(\*Processor\)\.loop$`)},
	{"the output's writes: a multipart body per batch, the request", regexp.MustCompile(`^github.com/redpanda-data/benthos/v4/internal/component/output\.\(\*AsyncWriter\)\.latencyMeasuringWrite$`)},
	{"HTTP connections: dials, read and write loops", regexp.MustCompile(`^net/http\.\(\*Transport\)\.dialConnFor$|^net/http\.\(\*persistConn\)\.(readLoop|writeLoop)$`)},
	{"GC in the background (mark workers, sweeper, scavenger)", regexp.MustCompile(`^runtime\.(gcBgMarkWorker|bgsweep|bgscavenge)$`)},
}

// schedulerAPI matches the scheduler's methods the engine calls, generic
// or not (pprof names an instance Scheduler[go.shape...]); Pick may be a
// wrapper of PickClass, so schedulerCum counts Pick only without PickClass.
var schedulerAPI = regexp.MustCompile(`^github.com/watermark-connect/watermark-connect/internal/keyorder\.\(\*Scheduler(\[.*\])?\)\.(Add|Pick|PickClass|Done)$`)

// schedulerCum is the cumulative time of the scheduler's methods in cum.
func schedulerCum(cum map[string]float64) float64 {
	by := map[string]float64{}
	for fn, v := range cum {
		if m := schedulerAPI.FindStringSubmatch(fn); m != nil {
			by[m[2]] += v
		}
	}
	if _, ok := by["PickClass"]; ok {
		delete(by, "Pick")
	}
	total := 0.0
	for _, v := range by {
		total += v
	}
	return total
}

// keyProfile takes a CPU profile of one run of key and of none on t (the
// first of -key-counts), keeps them in o.profileDir and prints where each
// spends its CPU, with the share of the key-order scheduler.
func keyProfile(ctx context.Context, w io.Writer, o options, s *keySink, cs []contender, t *keyTopic, res map[string][]keyResult) error {
	if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
		return err
	}
	profiles := map[string][]string{}
	var order []string
	for _, ct := range cs {
		if ct.key != "key" && ct.key != "none" {
			continue
		}
		// Long enough to cover the run: the median window plus the start.
		secs := 30
		if r := spreadOf(keyFigures(res[ct.key], func(r keyResult) float64 { return r.rate })).med; !math.IsNaN(r) {
			secs = int(math.Ceil(float64(o.key.records)/r)) + 3
		}
		path := filepath.Join(o.profileDir, fmt.Sprintf("cpu-keyorder-%s-%d.pprof", ct.key, t.keys))
		var perr error
		_, err := runKeyed(ctx, o, s, ct, t, "prof-"+ct.key, true, func(addr string) {
			perr = fetchProfile(ctx, addr, secs, path)
		})
		if err == nil {
			err = perr
		}
		if err != nil {
			return fmt.Errorf("profile of %s: %w", ct.key, err)
		}
		profiles[ct.key] = []string{path}
		order = append(order, ct.key)
		logf("profiled %s: %s", ct.key, path)
	}
	if len(order) == 0 {
		return nil
	}
	fmt.Fprintf(w, "#### Where the CPU goes (%s keys)\n\n", thousands(t.keys))
	fmt.Fprintf(w, "One run of each over the whole topic (start and group join included), profiled with /debug/pprof/profile (`http.debug_endpoints: true`); kept as %s. A row sums the cumulative time of its call-graph roots.\n\n",
		"`"+strings.Join(func() []string {
			var ps []string
			for _, k := range order {
				ps = append(ps, filepath.Base(profiles[k][0]))
			}
			return ps
		}(), "`, `")+"`")
	if err := breakdown(w, order, keyCategories, "everything else (the input's reads and acks, Benthos, runtime)", profiles, o.key.records); err != nil {
		return err
	}
	// The scheduler runs inside the owner goroutine: its share is part of
	// that row, given apart.
	_, cum, err := pprofCum(profiles[order[0]])
	if err == nil && order[0] == "key" {
		sched := schedulerCum(cum)
		fmt.Fprintf(w, "Of `key`'s owner goroutine, keyorder.Scheduler's methods (Add, Pick, Done; cumulative): %.2f s per million records.\n\n", sched/(float64(o.key.records)/1e6))
	}
	return nil
}
