// Command share is the kafka_share benchmark (docs/BENCHMARKS.md, part 9),
// on a real broker (Kafka 4.2+):
//
//   - scaling: one topic of one partition, read by 1, 2 and 4 processes,
//     each one share group member (members: 1), and by one process of 2
//     and 4 members (-members), into an HTTP sink that
//     takes -sink-delay (5ms) per batch; beside them, kafka_watermark in
//     one process on the same topic, max_in_flight 64 (and
//     max_pending_batches 64, so that 64 batches can be out). Records/s
//     from the moment every process had delivered a record (a member
//     joins a running share group at its next heartbeat) to the sink's
//     last record; the target is 3x at 4 processes.
//   - CPU per record: one process of kafka_share (members: 4) and one of
//     kafka_watermark on a topic of 8 partitions into drop; the process's
//     CPU time (user + system, from start to exit) over the records.
//
// Each round runs every contender of a table once, in a random order.
//
//	bash resources/kafka/broker.sh start   # or bash bench/share.sh, which starts its own
//	KAFKA_ENV_FILE=$(bash resources/kafka/broker.sh run-dir)/env go run ./bench/share -out /tmp/share.md
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

type options struct {
	records    int
	batch      int
	sinkDelay  time.Duration
	procs      []int
	members    []int
	cpuRecords int
	cpuParts   int
	rounds     int
	timeout    time.Duration
	out        string
	seed       uint64
}

func main() {
	var o options
	var procs, members string
	flag.IntVar(&o.records, "records", 240_000, "records of the scaling topic (1 partition); 240,000 make the window of 4 members about 8 s")
	flag.IntVar(&o.batch, "batch", 100, "batch_max_records of every contender")
	flag.DurationVar(&o.sinkDelay, "sink-delay", 5*time.Millisecond, "how long the sink takes per batch")
	flag.StringVar(&procs, "processes", "1,2,4", "kafka_share process counts of the scaling table")
	flag.StringVar(&members, "members", "2,4", "kafka_share members counts of one process, beside the process counts (each process there has members: 1)")
	flag.IntVar(&o.cpuRecords, "cpu-records", 400_000, "records of the CPU topic")
	flag.IntVar(&o.cpuParts, "cpu-partitions", 8, "partitions of the CPU topic")
	flag.IntVar(&o.rounds, "rounds", 1, "rounds of each table")
	flag.DurationVar(&o.timeout, "run-timeout", 3*time.Minute, "longest one run may take")
	flag.StringVar(&o.out, "out", "", "also write the markdown to this file")
	flag.Uint64Var(&o.seed, "seed", uint64(time.Now().UnixNano()), "seed of the contenders' order")
	flag.Parse()
	o.procs, o.members = counts("processes", procs), counts("members", members)
	if err := run(o); err != nil {
		log.Fatal(err)
	}
}

// counts parses a flag's comma-separated counts, each at least 1.
func counts(name, s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f == "" {
			continue
		}
		var n int
		if _, err := fmt.Sscan(f, &n); err != nil || n < 1 {
			log.Fatalf("-%s: %q is not a count of at least 1", name, f)
		}
		out = append(out, n)
	}
	return out
}

func run(o options) error {
	ctx := context.Background()
	env, err := testkit.LookupBrokerEnv("")
	if err != nil {
		return fmt.Errorf("no broker (%w): set KAFKA_ENV_FILE or KAFKA_BROKERS, or run bash bench/share.sh", err)
	}
	if err := env.Dial(3 * time.Second); err != nil {
		return err
	}
	root, err := testkit.ModuleRoot()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "wm-bench-share-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	logf("building the binary")
	bin, err := testkit.Build{Dir: root, Out: filepath.Join(work, "watermark-connect")}.Run(ctx)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(env.Brokers, ",")...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100_000))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	tag := fmt.Sprint(time.Now().Unix() % 1_000_000)
	scaleTopic, cpuTopic := "bench-share-"+tag+"-p1", fmt.Sprintf("bench-share-%s-p%d", tag, o.cpuParts)
	for _, t := range []struct {
		name  string
		parts int32
		n     int
	}{{scaleTopic, 1, o.records}, {cpuTopic, int32(o.cpuParts), o.cpuRecords}} {
		if err := fill(ctx, adm, cl, t.name, t.parts, t.n); err != nil {
			return err
		}
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = adm.DeleteTopics(dctx, scaleTopic, cpuTopic)
	}()

	var md strings.Builder
	w := io.MultiWriter(os.Stdout, &md)
	fmt.Fprintf(w, "bench/share at %s; %d × CPU (%s); Go %s, Apache Kafka %s (one broker, KRaft, 127.0.0.1); %s; seed %d; load at start %s.\n\n",
		describe(root), runtime.NumCPU(), runtime.GOARCH, strings.TrimPrefix(runtime.Version(), "go"), env.Version,
		time.Now().UTC().Format("2006-01-02 15:04 MST"), o.seed, loadavg())
	b := bench{o: o, bin: bin, brokers: env.Brokers, work: work, rng: rand.New(rand.NewPCG(o.seed, 9))}
	if err := b.scaling(ctx, w, scaleTopic); err != nil {
		return err
	}
	if err := b.cpu(ctx, w, cpuTopic); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nLoad average (1, 5, 15 min) at the end: %s.\n", loadavg())
	if o.out != "" {
		if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(o.out, []byte(md.String()), 0o644)
	}
	return nil
}

// fill creates topic with parts partitions and produces n records of 100
// bytes to it.
func fill(ctx context.Context, adm *kadm.Client, cl *kgo.Client, topic string, parts int32, n int) error {
	start := time.Now()
	r, err := adm.CreateTopic(ctx, parts, 1, nil, topic)
	if err == nil {
		err = r.Err
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", topic, err)
	}
	val := []byte(strings.Repeat("x", 100))
	const chunk = 10_000
	for i := 0; i < n; i += chunk {
		recs := make([]*kgo.Record, 0, chunk)
		for j := i; j < min(n, i+chunk); j++ {
			recs = append(recs, &kgo.Record{Topic: topic, Value: val})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return fmt.Errorf("produce to %s: %w", topic, err)
		}
	}
	logf("filled %s: %d records in %v", topic, n, time.Since(start).Round(time.Millisecond))
	return nil
}

type bench struct {
	o       options
	bin     string
	brokers string
	work    string
	rng     *rand.Rand
	runs    int
}

// contender is one line of a table: procs processes of one config.
type contender struct {
	name  string
	procs int
	input func(group string) string // the input block, YAML at column 2
}

func (b *bench) shareInput(topic string, members int) func(string) string {
	return func(group string) string {
		return fmt.Sprintf("  kafka_share:\n    seed_brokers: [ %q ]\n    topics: [ %q ]\n    share_group: %q\n    start_offset: earliest\n    members: %d\n    batch_max_records: %d\n",
			b.brokers, topic, group, members, b.o.batch)
	}
}

func (b *bench) watermarkInput(topic string) func(string) string {
	return func(group string) string {
		return fmt.Sprintf("  kafka_watermark:\n    seed_brokers: [ %q ]\n    topics: [ %q ]\n    consumer_group: %q\n    start_offset: earliest\n    batch_max_records: %d\n    max_pending_batches: 64\n",
			b.brokers, topic, group, b.o.batch)
	}
}

// scaling runs the scaling table: records/s into the slow sink.
func (b *bench) scaling(ctx context.Context, w io.Writer, topic string) error {
	cs := []contender{}
	for _, n := range b.o.procs {
		cs = append(cs, contender{name: fmt.Sprintf("kafka_share, %d process(es) of members: 1", n), procs: n, input: b.shareInput(topic, 1)})
	}
	for _, n := range b.o.members {
		cs = append(cs, contender{name: fmt.Sprintf("kafka_share, 1 process of members: %d", n), procs: 1, input: b.shareInput(topic, n)})
	}
	cs = append(cs, contender{name: "kafka_watermark, 1 process, max_in_flight 64", procs: 1, input: b.watermarkInput(topic)})
	rates := make([][]float64, len(cs))
	dups := make([]int64, len(cs))
	for r := range b.o.rounds {
		for _, i := range b.rng.Perm(len(cs)) {
			rate, dup, err := b.scaleRun(ctx, topic, cs[i])
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", r+1, cs[i].name, err)
			}
			logf("round %d, %s: %.0f records/s, %d duplicates", r+1, cs[i].name, rate, dup)
			rates[i] = append(rates[i], rate)
			dups[i] += dup
		}
	}
	fmt.Fprintf(w, "Scaling: %d records on 1 partition, an HTTP sink taking %v per batch, batch_max_records %d, %d round(s); records/s from the moment every process had delivered a record to the last record (median, range).\n\n",
		b.o.records, b.o.sinkDelay, b.o.batch, b.o.rounds)
	fmt.Fprintln(w, "| contender | records/s | vs 1 process | duplicates |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: |")
	base := median(rates[0])
	for i, c := range cs {
		fmt.Fprintf(w, "| %s | %s | %.2fx | %d |\n", c.name, spread(rates[i], "%.0f"), median(rates[i])/base, dups[i])
	}
	return nil
}

// scaleRun runs c's processes on a fresh group until the sink has every
// record once, and returns the records/s and the duplicates.
func (b *bench) scaleRun(ctx context.Context, topic string, c contender) (float64, int64, error) {
	sink, err := testkit.NewSink(testkit.SinkOptions{Partitions: 1, MinDelay: b.o.sinkDelay, MaxDelay: b.o.sinkDelay})
	if err != nil {
		return 0, 0, err
	}
	defer sink.Close()
	b.runs++
	group := fmt.Sprintf("g-%s-%d", topic, b.runs)
	output := func(name string) string {
		return fmt.Sprintf(`pipeline:
  processors:
    - mapping: 'root = {"p": @kafka_partition, "o": @kafka_offset}'
    - archive:
        format: json_array
output:
  http_client:
    url: %q
    verb: POST
    headers:
      Content-Type: application/json
      X-Instance: %q
    retries: 0
    timeout: 30s
    max_in_flight: 64
`, sink.URL(), name)
	}
	var ps []*exec.Cmd
	defer func() {
		for _, p := range ps {
			stop(p)
		}
	}()
	for i := range c.procs {
		name := fmt.Sprintf("%s-%d", group, i)
		p, err := b.start(name, c.input(group), output(name), "")
		if err != nil {
			return 0, 0, err
		}
		ps = append(ps, p)
	}
	deadline := time.Now().Add(b.o.timeout)
	for sink.Snapshot().Distinct() < int64(b.o.records) {
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("%d of %d records after %v", sink.Snapshot().Distinct(), b.o.records, b.o.timeout)
		}
		time.Sleep(50 * time.Millisecond) // a driver's poll of its own sink
	}
	return window(sink.Snapshot(), c.procs)
}

// window is the records/s of a run from the moment every process had
// delivered a record (members join a running share group at their next
// heartbeat) to the last record, and the duplicates.
func window(l *testkit.Ledger, procs int) (float64, int64, error) {
	firstBy := map[uint16]int64{}
	last := int64(0)
	for _, e := range l.Parts[0] {
		if e.Count == 0 {
			continue
		}
		if f, ok := firstBy[e.Inst]; !ok || e.FirstAck < f {
			firstBy[e.Inst] = e.FirstAck
		}
		last = max(last, e.FirstAck)
	}
	if len(firstBy) < procs {
		return 0, 0, fmt.Errorf("only %d of %d processes delivered records: a member joined after the others had read the topic", len(firstBy), procs)
	}
	t0 := int64(0)
	for _, f := range firstBy {
		t0 = max(t0, f)
	}
	n := 0
	for _, e := range l.Parts[0] {
		if e.Count > 0 && e.FirstAck >= t0 {
			n++
		}
	}
	if last <= t0 || n < 2 {
		return 0, 0, fmt.Errorf("no window with every process delivering (%d records after the last process's first)", n)
	}
	return float64(n-1) / time.Duration(last-t0).Seconds(), l.Records - l.Distinct(), nil
}

// cpu runs the CPU table: CPU per record into drop.
func (b *bench) cpu(ctx context.Context, w io.Writer, topic string) error {
	cs := []contender{
		{name: "kafka_share, members: 4", procs: 1, input: b.shareInput(topic, 4)},
		{name: "kafka_watermark", procs: 1, input: b.watermarkInput(topic)},
	}
	per := make([][]float64, len(cs))
	for r := range b.o.rounds {
		for _, i := range b.rng.Perm(len(cs)) {
			us, err := b.cpuRun(ctx, topic, cs[i])
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", r+1, cs[i].name, err)
			}
			logf("round %d, %s: %.2f µs CPU per record", r+1, cs[i].name, us)
			per[i] = append(per[i], us)
		}
	}
	fmt.Fprintf(w, "\nCPU per record: %d records on %d partitions into drop, one process, batch_max_records %d, %d round(s); the process's user + system CPU from start to exit over the records (median, range).\n\n",
		b.o.cpuRecords, b.o.cpuParts, b.o.batch, b.o.rounds)
	fmt.Fprintln(w, "| contender | µs CPU per record | vs kafka_watermark |")
	fmt.Fprintln(w, "| --- | ---: | ---: |")
	base := median(per[1])
	for i, c := range cs {
		fmt.Fprintf(w, "| %s | %s | %.2fx |\n", c.name, spread(per[i], "%.2f"), median(per[i])/base)
	}
	return nil
}

// cpuRun runs c into drop until its input_received counts every record,
// stops it and returns its CPU time per record, in µs.
func (b *bench) cpuRun(ctx context.Context, topic string, c contender) (float64, error) {
	b.runs++
	group := fmt.Sprintf("g-%s-%d", topic, b.runs)
	addr, err := freeAddr()
	if err != nil {
		return 0, err
	}
	p, err := b.start(group, c.input(group), "output:\n  drop: {}\n", addr)
	if err != nil {
		return 0, err
	}
	deadline := time.Now().Add(b.o.timeout)
	for {
		if time.Now().After(deadline) {
			stop(p)
			return 0, fmt.Errorf("not every record received after %v", b.o.timeout)
		}
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		m, err := testkit.ScrapeMetrics(sctx, addr)
		cancel()
		if n, _ := m.Sum("input_received"); err == nil && n >= float64(b.o.cpuRecords) {
			break
		}
		time.Sleep(100 * time.Millisecond) // a driver's poll of the process's metrics
	}
	stop(p)
	st := p.ProcessState
	cpu := st.UserTime() + st.SystemTime()
	return float64(cpu.Microseconds()) / float64(b.o.cpuRecords), nil
}

// start runs the binary with a config of input and rest; addr, when set,
// serves its metrics.
func (b *bench) start(name, input, rest, addr string) (*exec.Cmd, error) {
	httpBlock := "http:\n  enabled: false\n"
	if addr != "" {
		httpBlock = fmt.Sprintf("http:\n  enabled: true\n  address: %s\nmetrics:\n  prometheus: {}\n", addr)
	}
	conf := fmt.Sprintf("%slogger:\n  level: WARN\nshutdown_timeout: 20s\ninput:\n%s%s", httpBlock, input, rest)
	path := filepath.Join(b.work, name+".yaml")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(b.work, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(b.bin, "-c", path)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return cmd, nil
}

// stop ends a process with SIGTERM (SIGKILL after 30s) and waits for it.
func stop(p *exec.Cmd) {
	if p.ProcessState != nil {
		return
	}
	_ = p.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = p.Process.Kill()
		<-done
	}
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// spread is the median, with the range when there are several rounds.
func spread(xs []float64, format string) string {
	m := fmt.Sprintf(format, median(xs))
	if len(xs) < 2 {
		return m
	}
	return fmt.Sprintf("%s ("+format+"-"+format+")", m, slices.Min(xs), slices.Max(xs))
}

func describe(root string) string {
	out, err := exec.Command("git", "-C", root, "describe", "--always", "--dirty").Output()
	if err != nil {
		return "unknown commit"
	}
	return strings.TrimSpace(string(out))
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
