package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// profileRuns is how many runs of a contender one profile merges: one run of
// a cell is only a second or two of consumption.
const profileRuns = 4

// profile takes CPU profiles of kafka_watermark (today's and the old one),
// the baseline, the raw loop and the variants on the first cell, over
// profileRuns runs each, keeps them in o.profileDir and prints where each
// spends its CPU (see breakdown).
func profile(ctx context.Context, w io.Writer, o options, m *matrix) error {
	c := m.cells[0]
	if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
		return err
	}
	fmt.Fprintf(w, "### CPU profiles (%s)\n\n", c)
	fmt.Fprintf(w, "Each profile merges %d runs of one contender over the whole cell (start and group join included), taken with /debug/pprof/profile on the process's HTTP server (`http.debug_endpoints: true`; the raw loop serves the same). A row sums the cumulative time of its call-graph roots, allocations and GC assists included.\n\n", profileRuns)
	profiles := map[string][]string{}
	order := []string{"wm", "wm-old", "base", "raw"}
	for _, v := range o.variants {
		order = append(order, "wm-"+v)
	}
	for _, key := range order {
		ct, ok := m.contender(key)
		if !ok {
			continue
		}
		// Long enough to cover the run: the median window plus the start.
		secs := 10
		if r := spreadOf(m.figures(0, key, rate)).med; !math.IsNaN(r) {
			secs = int(math.Ceil(float64(c.records)/r)) + 2
		}
		for i := range profileRuns {
			path := filepath.Join(o.profileDir, fmt.Sprintf("cpu-%s-%d.pprof", key, i))
			var perr error
			_, err := m.runOne(ctx, o, c, ct, fmt.Sprintf("prof%d-%s", i, key), true, func(addr string) {
				perr = fetchProfile(ctx, addr, secs, path)
			})
			if err == nil {
				err = perr
			}
			if err != nil {
				return fmt.Errorf("profile of %s: %w", key, err)
			}
			profiles[key] = append(profiles[key], path)
		}
		logf("profiled %s: %s", key, strings.Join(profiles[key], " "))
	}
	return breakdown(w, order, categories, "everything else (Benthos's pipeline and output, HTTP, runtime)", profiles, c.records)
}

func (m *matrix) contender(key string) (contender, bool) {
	for _, c := range m.cs {
		if c.key == key {
			return c, true
		}
	}
	return contender{}, false
}

// fetchProfile waits for the process's HTTP server, then asks it for a CPU
// profile of secs seconds and writes it to path.
func fetchProfile(ctx context.Context, addr string, secs int, path string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := scrapeSent(ctx, addr); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, secs)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// category is where a contender's CPU goes: a set of call-graph roots whose
// cumulative time is summed. Each root's time includes what it calls (its
// allocations and their GC assists too); in a list of categories no root
// calls another, so the rows add up to at most the whole.
type category struct {
	name  string
	roots *regexp.Regexp
}

// categories are the throughput matrix's.
var categories = []category{
	// kafkamsg's since 29b9199 and before (plugin.RecordsToBatch, which wraps
	// it, is inlined into the same frames).
	{"record to message: RecordsToBatch", regexp.MustCompile(`^github.com/watermark-connect/watermark-connect/internal/kafkamsg\.RecordsToBatch$`)},
	{"Benthos tracing: a span per message at the input and the output (noop tracer)", regexp.MustCompile(`^github.com/redpanda-data/benthos/v4/internal/tracing\.(InitSpans|WithChildSpans)$`)},
	{"franz-go: fetch, decompress, decode (kgo source loop)", regexp.MustCompile(`^github.com/twmb/franz-go/pkg/kgo\.\(\*source\)\.loopFetch$`)},
	{"kafka_watermark bookkeeping: owner, poller, acks", regexp.MustCompile(`^github.com/watermark-connect/watermark-connect/(internal/engine\.\(\*owner\)\.run|internal/engine\.\(\*poller\)\.start\.func1|plugin\.\(\*Input\)\.handOut\.func1)$`)},
	{"GC in the background (mark workers, sweeper, scavenger)", regexp.MustCompile(`^runtime\.(gcBgMarkWorker|bgsweep|bgscavenge)$`)},
}

// pprofCum returns the total sample time and each function's cumulative
// time, in seconds, of the merged profiles.
func pprofCum(files []string) (float64, map[string]float64, error) {
	args := append([]string{"tool", "pprof", "-top", "-cum", "-nodecount=1000000"}, files...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		return 0, nil, fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
	}
	total := 0.0
	cum := map[string]float64{}
	for _, line := range strings.Split(string(out), "\n") {
		if i := strings.Index(line, "Total samples = "); i >= 0 {
			f := strings.Fields(line[i+len("Total samples = "):])
			total = seconds(f[0])
			continue
		}
		f := strings.Fields(line)
		if len(f) < 6 || !strings.HasSuffix(f[1], "%") || !strings.HasSuffix(f[4], "%") {
			continue
		}
		cum[strings.TrimSuffix(strings.Join(f[5:], " "), " (inline)")] += seconds(f[3])
	}
	if total == 0 {
		return 0, nil, fmt.Errorf("no samples in %v", files)
	}
	return total, cum, nil
}

// seconds parses pprof's durations: 480ms, 2.48s, 1.20mins.
func seconds(s string) float64 {
	for _, u := range []struct {
		suffix string
		scale  float64
	}{{"mins", 60}, {"ms", 1e-3}, {"us", 1e-6}, {"s", 1}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f * u.scale
		}
	}
	return 0
}

// breakdown prints, per contender of order that has profiles, the CPU
// seconds per million records each category takes, and its share of the
// profile; what no category holds is the row named rest.
func breakdown(w io.Writer, order []string, cats []category, rest string, profiles map[string][]string, records int) error {
	keys := []string{}
	totals := map[string]float64{}
	cums := map[string]map[string]float64{}
	for _, key := range order {
		if len(profiles[key]) == 0 {
			continue
		}
		t, c, err := pprofCum(profiles[key])
		if err != nil {
			return err
		}
		keys, totals[key], cums[key] = append(keys, key), t, c
	}
	perM := func(key string, sec float64) float64 {
		return sec / (float64(len(profiles[key])) * float64(records) / 1e6)
	}
	fmt.Fprintf(w, "CPU seconds per million records (share of the profile):\n\n| where | %s |\n| --- |%s\n",
		"`"+strings.Join(keys, "` | `")+"`", strings.Repeat(" ---: |", len(keys)))
	others := map[string]float64{}
	for _, k := range keys {
		others[k] = totals[k]
	}
	row := func(name string, sec map[string]float64) {
		fmt.Fprintf(w, "| %s |", name)
		for _, k := range keys {
			fmt.Fprintf(w, " %.2f (%.0f%%) |", perM(k, sec[k]), 100*sec[k]/totals[k])
		}
		fmt.Fprintln(w)
	}
	for _, c := range cats {
		sec := map[string]float64{}
		for _, k := range keys {
			for fn, v := range cums[k] {
				if c.roots.MatchString(fn) {
					sec[k] += v
				}
			}
			others[k] -= sec[k]
		}
		row(c.name, sec)
	}
	row(rest, others)
	row("**whole process**", totals)
	fmt.Fprintln(w)
	return nil
}
