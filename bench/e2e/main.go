// Command e2e is the end-to-end benchmark on a real broker (docs/BENCHMARKS.md,
// sections 1, 5 and 7): throughput and CPU per record of kafka_watermark
// against a no-tracking baseline input, a raw franz-go poll loop and the
// binary of a fixed older commit, then the replay a kill -9 costs, and, with
// -sections keyorder, key-ordered delivery (ordering: key against none and
// Confluent's Parallel Consumer, key order checked at the sink, one key
// failing for a while). It prints docs/BENCHMARKS.md-ready markdown.
//
//	bash resources/kafka/broker.sh start   # or: make bench-e2e, which starts its own
//	KAFKA_ENV_FILE=$(bash resources/kafka/broker.sh run-dir)/env go run ./bench/e2e -out /tmp/e2e.md
//
// Every comparison is made side by side in one run: each round runs every
// contender on every cell, in a random order per cell, and the tables give
// medians with their ranges over the rounds, and ratios paired round by
// round. On a shared machine the absolute figures are noise; the ratios are
// the result.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

type options struct {
	rounds       int
	partitions   []int
	sizes        []int
	codecs       []string
	records100   int // records per cell of values up to 512 bytes
	recordsLarge int // records per cell of larger values
	headRef      string
	oldRef       string
	sections     map[string]bool
	replayRounds int
	profileDir   string
	workDir      string
	keep         bool
	seed         uint64
	runTimeout   time.Duration
	out          string
	root         string
	loadAtStart  string
	key          keyOptions
	pgoOut       string   // -sections pgo: where the merged profile goes
	contenders   []string // of the throughput matrix: raw, base, wm, wm-nometa, wm-old
	variants     []string // more contenders: today's binary with one thing changed (contenders.go)
	warm         bool     // read a cell's topic once, unmeasured, before its contenders in each round (admin.warm)
}

func main() {
	var o options
	var parts, sizes, codecs, sections, keyCounts, keyContenders, keyFailWho, tpContenders, variants string
	flag.IntVar(&o.rounds, "rounds", 5, "rounds of the throughput matrix")
	flag.StringVar(&parts, "partitions", "8,64", "partition counts")
	flag.StringVar(&sizes, "sizes", "100,1024", "record value sizes in bytes")
	flag.StringVar(&codecs, "codecs", "none,snappy", "producer compression codecs")
	flag.IntVar(&o.records100, "records-small", 2_000_000, "records per cell for values up to 512 bytes")
	flag.IntVar(&o.recordsLarge, "records-large", 600_000, "records per cell for larger values")
	flag.StringVar(&o.headRef, "head-ref", "", "commit to build today's binaries from (default: the working tree)")
	flag.StringVar(&o.oldRef, "old-ref", "4cc7f9b", "commit whose cmd/watermark-connect is the fixed \"before\" (empty: none)")
	flag.StringVar(&tpContenders, "contenders", "raw,base,wm,wm-nometa,wm-old", "contenders of the throughput matrix and its profiles, of raw, base, wm, wm-nometa, wm-old (only with -old-ref), k2k and k2k-eos (Kafka to Kafka through the kafka_watermark output, at least once and exactly once)")
	flag.StringVar(&variants, "variants", "", "more contenders, today's kafka_watermark (wm) with one thing changed: nopgo (built with -pgo=off), plain (-pgo=off and GOGC=100: Go's defaults), gogc<N> (GOGC=<N> in its environment), fetchmax<size> and partmax<size> (fetch_max_bytes and fetch_max_partition_bytes set to <size>, e.g. fetchmax8MiB), e.g. nopgo,plain or gogc100,gogc200,gogc400")
	flag.StringVar(&sections, "sections", "throughput,profile,convert,replay", "what to run, of throughput, profile, convert, replay, keyorder and pgo (a CPU profile of wm over every cell, merged into -pgo-out: make pgo)")
	flag.StringVar(&o.pgoOut, "pgo-out", "", "-sections pgo: the merged profile to write (make pgo: cmd/watermark-connect/default.pgo)")
	flag.BoolVar(&o.warm, "warm", true, "read each cell's topic once, unmeasured, before its contenders in each round, so that none of them reads the log from disk while the others read it from the page cache")
	flag.IntVar(&o.replayRounds, "replay-rounds", 5, "kill -9 trials per replay configuration")
	flag.StringVar(&o.profileDir, "profile-dir", "", "where to keep the CPU profiles (default: the work dir)")
	flag.StringVar(&o.workDir, "work", "", "work dir for binaries, configs and logs (default: a temporary one, removed at the end)")
	flag.BoolVar(&o.keep, "keep", false, "keep the work dir and the topics")
	flag.Uint64Var(&o.seed, "seed", uint64(time.Now().UnixNano()), "seed of the contenders' order")
	flag.DurationVar(&o.runTimeout, "run-timeout", 3*time.Minute, "longest one contender may take over one cell")
	flag.StringVar(&o.out, "out", "", "also write the markdown to this file")
	flag.StringVar(&keyCounts, "key-counts", "100000,1000", "keyorder: distinct keys of each topic")
	flag.IntVar(&o.key.records, "key-records", 1_000_000, "keyorder: records per topic")
	flag.StringVar(&keyContenders, "key-contenders", "key,none,pc", "keyorder: contenders, of key, none (kafka_watermark's ordering) and pc (Parallel Consumer; builds bench/parallelconsumer with mvn)")
	flag.DurationVar(&o.key.failFor, "key-fail-for", 30*time.Second, "keyorder: how long the failing key's requests fail")
	flag.Float64Var(&o.key.failAt, "key-fail-at", 0.1, "keyorder: share of the records delivered when the failure starts")
	flag.IntVar(&o.key.failRounds, "key-fail-rounds", 1, "keyorder: failure runs (each with its control) per failing key (0: none)")
	flag.Float64Var(&o.key.hotShare, "key-hot-share", 0.02, "keyorder: the hot failing key's share of its topic's records (0: no hot key)")
	flag.StringVar(&keyFailWho, "key-fail-contenders", "key", "keyorder: contenders of the failure runs, of key and pc")
	flag.BoolVar(&o.key.profile, "key-profile", true, "keyorder: CPU profiles of key and none at the first of -key-counts, kept in -profile-dir")
	flag.Parse()
	o.contenders = strings.Split(tpContenders, ",")
	if variants != "" {
		o.variants = strings.Split(variants, ",")
	}
	o.key.counts = ints(keyCounts)
	o.key.failKeysTop = o.key.counts[0]
	o.key.contenders = strings.Split(keyContenders, ",")
	o.key.failWho = strings.Split(keyFailWho, ",")
	o.partitions, o.sizes = ints(parts), ints(sizes)
	o.codecs = strings.Split(codecs, ",")
	o.sections = map[string]bool{}
	for _, s := range strings.Split(sections, ",") {
		o.sections[s] = true
	}
	if err := runAll(o); err != nil {
		log.Fatal(err)
	}
}

func runAll(o options) error {
	ctx := context.Background()
	brokers, version, err := brokerEnv()
	if err != nil {
		return err
	}
	o.root, err = os.Getwd()
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(o.root, "go.mod")); err != nil {
		return fmt.Errorf("run from the module root: %w", err)
	}
	if o.workDir == "" {
		if o.workDir, err = os.MkdirTemp("", "wm-bench-e2e-"); err != nil {
			return err
		}
		if !o.keep {
			defer os.RemoveAll(o.workDir)
		}
	}
	if o.profileDir == "" {
		o.profileDir = o.workDir
	}
	o.loadAtStart = loadavg()
	if !o.sections["throughput"] && !o.sections["profile"] || !slices.Contains(o.contenders, "wm-old") {
		o.oldRef = "" // only the throughput matrix and its profiles run the "before"
	}
	logf("building the contenders in %s", o.workDir)
	matrixRuns := o.sections["throughput"] || o.sections["profile"] || o.sections["pgo"]
	bins, err := build(o.root, o.workDir, o.headRef, o.oldRef, matrixRuns, matrixRuns && needsNoPGO(o.variants))
	if err != nil {
		return err
	}
	if o.sections["keyorder"] && slices.Contains(o.key.contenders, "pc") {
		if bins.pcJar, err = buildPC(o.root, o.workDir); err != nil {
			return err
		}
	}
	a, err := newAdmin(brokers)
	if err != nil {
		return err
	}
	defer a.close()

	var md strings.Builder
	w := io.MultiWriter(os.Stdout, &md)
	against := "" // -old-ref "": no "before" contender (the replay alone does not need one)
	if o.oldRef != "" {
		against = " against " + o.oldRef
	}
	fmt.Fprintf(w, "bench/e2e at %s%s; %s; Go %s, Apache Kafka %s (one broker, KRaft, 127.0.0.1); %s; seed %d.\n\n",
		describe(o.root, o.headRef), against, machine(), strings.TrimPrefix(runtime.Version(), "go"), version,
		time.Now().UTC().Format("2006-01-02 15:04 MST"), o.seed)
	cs, err := contenders(bins, brokers, o.contenders, o.variants)
	if err != nil {
		return err
	}
	var m *matrix
	if matrixRuns {
		if m, err = newMatrix(ctx, a, o, cs); err != nil {
			return err
		}
		if !o.keep {
			defer m.dropTopics(a)
		}
	}
	if o.sections["throughput"] {
		m.run(ctx, a, o)
		m.write(w, o)
	}
	if o.sections["profile"] {
		if err := profile(ctx, w, o, m); err != nil {
			return err
		}
	}
	if o.sections["pgo"] {
		if o.pgoOut == "" {
			return fmt.Errorf("-sections pgo needs -pgo-out")
		}
		if err := pgoProfile(ctx, o, m, o.pgoOut); err != nil {
			return err
		}
	}
	if o.sections["convert"] {
		if err := convert(w, o); err != nil {
			return err
		}
	}
	if o.sections["replay"] {
		if err := replay(ctx, w, o, a, bins); err != nil {
			return err
		}
	}
	if o.sections["keyorder"] {
		if err := keyOrder(ctx, w, o, a, bins); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\nLoad average (1, 5, 15 min) at the start: %s; at the end: %s.\n", o.loadAtStart, loadavg())
	if o.out != "" {
		if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(o.out, []byte(md.String()), 0o644); err != nil {
			return err
		}
	}
	if m != nil && m.failed > 0 {
		return fmt.Errorf("%d contender run(s) of the throughput matrix failed (logged above, n/a in the tables)", m.failed)
	}
	return nil
}

// matrix is the throughput benchmark: cells by contenders by rounds.
type matrix struct {
	cells []cell
	cs    []contender
	runs  []map[string][]measured // [cell][contender key][round]; a failed run has NaN figures
	tmp   string
	// failed counts the failed runs: they show as n/a in the tables, and
	// make the whole run exit non-zero once the tables are written.
	failed int
}

func newMatrix(ctx context.Context, a *admin, o options, cs []contender) (*matrix, error) {
	m := &matrix{cs: cs, tmp: o.workDir}
	tag := strconv.FormatInt(time.Now().Unix()%1_000_000, 10)
	for _, p := range o.partitions {
		for _, s := range o.sizes {
			for _, codec := range o.codecs {
				n := o.records100
				if s > 512 {
					n = o.recordsLarge
				}
				c := cell{partitions: int32(p), size: s, codec: codec, records: n,
					topic: fmt.Sprintf("bench-%s-p%d-%d-%s", tag, p, s, codec)}
				start := time.Now()
				if err := a.createTopic(ctx, c.topic, c.partitions); err != nil {
					return nil, err
				}
				if slices.ContainsFunc(cs, func(ct contender) bool { return isK2K(ct.key) }) {
					if err := a.createTopic(ctx, c.topic+outSuffix, c.partitions); err != nil {
						return nil, err
					}
				}
				if _, err := fill(ctx, a, c); err != nil {
					return nil, err
				}
				logf("filled %s: %d records in %v", c.topic, n, time.Since(start).Round(time.Millisecond))
				m.cells = append(m.cells, c)
				m.runs = append(m.runs, map[string][]measured{})
			}
		}
	}
	return m, nil
}

func (m *matrix) dropTopics(a *admin) {
	names := make([]string, 0, 2*len(m.cells))
	for _, c := range m.cells {
		names = append(names, c.topic)
		if slices.ContainsFunc(m.cs, func(ct contender) bool { return isK2K(ct.key) }) {
			names = append(names, c.topic+outSuffix)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.deleteTopics(ctx, names...); err != nil {
		logf("deleting the topics: %v", err)
	}
}

// run measures every contender on every cell, o.rounds times. Within a
// round a cell's contenders run back to back in a random order, so what the
// machine does meanwhile falls on all of them alike.
func (m *matrix) run(ctx context.Context, a *admin, o options) {
	rng := rand.New(rand.NewPCG(o.seed, 1))
	for r := range o.rounds {
		for ci, c := range m.cells {
			if o.warm {
				if d, err := a.warm(ctx, c); err != nil {
					logf("round %d, %s: %v", r+1, c, err)
				} else {
					logf("round %d, %s: read once to warm the page cache in %v", r+1, c, d.Round(time.Millisecond))
				}
			}
			order := rng.Perm(len(m.cs))
			for _, k := range order {
				ct := m.cs[k]
				res, err := m.runOne(ctx, o, c, ct, fmt.Sprintf("r%d-%s", r, ct.key), false, nil)
				if err != nil {
					logf("round %d, %s, %s: %v", r+1, c, ct.key, err)
					res = measured{rate: math.NaN(), cpuPerM: math.NaN(), peakRSS: math.NaN()}
					m.failed++
				} else {
					logf("round %d, %s, %-9s %8.0f rec/s %6.3f cpu-s/Mrec %5.0f MB peak RSS %6.4f faults/rec (window %v, process CPU %v)",
						r+1, c, ct.key, res.rate, res.cpuPerM, res.peakRSS/1e6, res.faultsPerRecord, res.window.Round(time.Millisecond), res.total.Round(time.Millisecond))
				}
				m.runs[ci][ct.key] = append(m.runs[ci][ct.key], res)
			}
		}
	}
}

// runOne starts one contender on one cell with a fresh group and measures
// it. during, when set, runs beside the measurement with the process's HTTP
// address, and the process is stopped only once it has returned.
func (m *matrix) runOne(ctx context.Context, o options, c cell, ct contender, tag string, debug bool, during func(addr string)) (measured, error) {
	dir := filepath.Join(m.tmp, "runs", c.topic+"-"+tag)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return measured{}, err
	}
	addr, err := freeAddr()
	if err != nil {
		return measured{}, err
	}
	group := "g-" + c.topic + "-" + tag
	bin, args, err := ct.args(dir, c, group, addr, debug)
	if err != nil {
		return measured{}, err
	}
	p, err := startProc(dir, ct.key, bin, args, addr, ct.env...)
	if err != nil {
		return measured{}, err
	}
	var hold chan struct{}
	if during != nil {
		hold = make(chan struct{})
		go func() { defer close(hold); during(addr) }()
	}
	return p.measure(ctx, int64(c.records), ct.scrape, o.runTimeout, hold)
}

func ints(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			log.Fatalf("not a number: %q", f)
		}
		out = append(out, n)
	}
	return out
}

// machine describes the CPU, the memory and the kernel.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			if kb, err := strconv.ParseFloat(f[1], 64); err == nil {
				mem = fmt.Sprintf(", %.0f GiB", kb/(1<<20))
			}
		}
	}
	kernel := ""
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = ", Linux " + strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("%d × %s%s%s", runtime.NumCPU(), model, mem, kernel)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], ", ")
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}
