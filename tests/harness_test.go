package tests

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// repoRoot is the module root: go test runs a package's tests in its folder.
var repoRoot = func() string {
	wd, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	return filepath.Dir(wd)
}()

// ---------------------------------------------------------------------------
// The broker's environment.

// brokerEnv is what resources/kafka/broker.sh start wrote to its env file.
type brokerEnv = testkit.BrokerEnv

var (
	envOnce sync.Once
	envVal  *brokerEnv
	envErr  error
)

// needBroker returns the broker's environment, or skips the test (fails it
// with CI=true) when no reachable broker is configured: $KAFKA_ENV_FILE,
// else KAFKA_BROKERS and friends, else the env file of `make broker-start`
// (testkit.LookupBrokerEnv).
func needBroker(t *testing.T) *brokerEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	envOnce.Do(func() {
		envVal, envErr = testkit.LookupBrokerEnv(filepath.Join(repoRoot, "resources", "kafka", "broker.sh"))
		if envErr == nil {
			envErr = envVal.Dial(3 * time.Second)
		}
	})
	if envErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but the end-to-end tests have no broker: %v (resources/test.sh starts one and exports KAFKA_ENV_FILE)", envErr)
		}
		t.Skipf("end-to-end tests need a broker: run `make test` (starts one) or `bash resources/kafka/broker.sh start` (%v)", envErr)
	}
	return envVal
}

// ---------------------------------------------------------------------------
// The binary.

// bin is ./cmd/watermark-connect, built once per test run: with -race when
// WMC_E2E_RACE=1 (resources/test.sh sets it).
var bin = &testkit.Binary{Build: testkit.Build{Dir: repoRoot, Race: os.Getenv("WMC_E2E_RACE") == "1"}}

func TestMain(m *testing.M) {
	code := m.Run()
	bin.Remove()
	os.Exit(code)
}

var binOnce sync.Once

// binary returns the binary under test: $WMC_E2E_BINARY, or bin.
func binary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("WMC_E2E_BINARY"); p != "" {
		return p
	}
	start := time.Now()
	path, err := bin.Path()
	if err != nil {
		t.Fatalf("cannot build the binary: %v", err)
	}
	binOnce.Do(func() { fmt.Printf("e2e: built %s in %v\n", path, time.Since(start).Round(time.Millisecond)) })
	return path
}

// ---------------------------------------------------------------------------
// Processes.

// logLine is one line of a process's stdout or stderr, with when it arrived.
type logLine struct {
	at   time.Time
	text string
}

// proc is one running watermark-connect.
type proc struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd
	dir  string

	mu    sync.Mutex
	lines []logLine

	done    chan struct{}
	waitErr error
	readers sync.WaitGroup
}

// startProc runs `watermark-connect -c <config>` with the given YAML. The
// process is killed at the end of the test if it still runs, and its log is
// shown when the test failed.
func startProc(t *testing.T, name, yaml string, env ...string) *proc {
	t.Helper()
	return startCmd(t, name, yaml, env, "-c")
}

func startCmd(t *testing.T, name, yaml string, env []string, args ...string) *proc {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	args = append(args, cfg)
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = dir
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, name: name, cmd: cmd, dir: dir, done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	for _, r := range []io.Reader{stdout, stderr} {
		p.readers.Add(1)
		go p.read(r)
	}
	go func() {
		p.readers.Wait() // Wait closes the pipes: read them to the end first
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if p.running() {
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			p.dumpLog(80)
		}
		p.keepLog()
	})
	t.Logf("started %s (pid %d)", name, cmd.Process.Pid)
	return p
}

func (p *proc) read(r io.Reader) {
	defer p.readers.Done()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		p.mu.Lock()
		p.lines = append(p.lines, logLine{at: time.Now(), text: sc.Text()})
		p.mu.Unlock()
	}
}

func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// logLines returns a copy of every line so far.
func (p *proc) logLines() []logLine {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]logLine(nil), p.lines...)
}

func (p *proc) logText() string {
	var b strings.Builder
	for _, l := range p.logLines() {
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	return b.String()
}

// grep returns the lines containing every one of subs.
func (p *proc) grep(subs ...string) []logLine {
	var out []logLine
next:
	for _, l := range p.logLines() {
		for _, s := range subs {
			if !strings.Contains(l.text, s) {
				continue next
			}
		}
		out = append(out, l)
	}
	return out
}

func (p *proc) dumpLog(last int) {
	lines := p.logLines()
	if len(lines) > last {
		p.t.Logf("--- %s: last %d of %d log lines:", p.name, last, len(lines))
		lines = lines[len(lines)-last:]
	} else {
		p.t.Logf("--- %s: log (%d lines):", p.name, len(lines))
	}
	for _, l := range lines {
		p.t.Logf("%s | %s", p.name, l.text)
	}
}

func (p *proc) keepLog() {
	dir := os.Getenv("WMC_E2E_KEEP_LOGS")
	if dir == "" {
		return
	}
	_ = os.MkdirAll(dir, 0o755)
	name := strings.NewReplacer("/", "_", " ", "_").Replace(p.t.Name() + "-" + p.name + ".log")
	_ = os.WriteFile(filepath.Join(dir, name), []byte(p.logText()), 0o644)
}

// stop sends SIGTERM and waits for a clean exit (status 0) within timeout.
func (p *proc) stop(timeout time.Duration) {
	p.t.Helper()
	if !p.running() {
		p.t.Fatalf("%s exited before it was stopped: %v", p.name, p.waitErr)
	}
	start := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		p.t.Fatalf("%s did not exit within %v of SIGTERM", p.name, timeout)
	}
	if p.waitErr != nil {
		p.t.Fatalf("%s exited with %v after SIGTERM", p.name, p.waitErr)
	}
	p.t.Logf("stopped %s (SIGTERM, clean exit after %v)", p.name, time.Since(start).Round(time.Millisecond))
	p.assertClean()
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() {
	p.t.Helper()
	_ = p.cmd.Process.Kill()
	<-p.done
	var ee *exec.ExitError
	if !errors.As(p.waitErr, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		p.t.Fatalf("%s: expected death by SIGKILL, got %v", p.name, p.waitErr)
	}
	p.t.Logf("killed %s (SIGKILL)", p.name)
	p.assertClean()
}

// assertClean fails the test on log lines that no run may produce.
func (p *proc) assertClean() {
	p.t.Helper()
	for _, bad := range []string{"internal error", "panic:", "DATA RACE", "fatal error:"} {
		if ls := p.grep(bad); len(ls) > 0 {
			p.t.Errorf("%s logged %q %d time(s), first: %s", p.name, bad, len(ls), ls[0].text)
		}
	}
}

// ---------------------------------------------------------------------------
// Small helpers.

// suffix returns a random name suffix, so reruns against the same broker
// never meet old topics or groups.
func suffix() string {
	return fmt.Sprintf("%d-%06x", time.Now().Unix()%100000, rand.IntN(1<<24))
}

// figure prints an "E2E-FIGURE " line (resources/test.sh collects them at
// the end of the suite), and logs it.
func figure(t *testing.T, format string, args ...any) {
	t.Helper()
	line := "E2E-FIGURE " + fmt.Sprintf(format, args...)
	fmt.Println(line)
	t.Log(line)
}

func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// indent prefixes every line of s, for YAML blocks.
func indent(s string, n int) string {
	pad := strings.Repeat(" ", n)
	var b bytes.Buffer
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if l != "" {
			b.WriteString(pad)
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// ---------------------------------------------------------------------------
// A process's metrics.

// metricsAddr returns a 127.0.0.1 address for a binary's HTTP server, on a
// port below the ephemeral range (resources/kafka/README.md says why) that
// nothing listens on right now.
func metricsAddr(t *testing.T) string {
	t.Helper()
	for range 100 {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(12000)))
		if err != nil {
			continue
		}
		addr := l.Addr().String()
		l.Close()
		return addr
	}
	t.Fatal("no free port for the metrics endpoint in 20000-31999")
	return ""
}

// withMetrics turns on, in a pipeline's YAML, Benthos's HTTP server at addr
// with the Prometheus exporter: the metrics are at http://addr/metrics.
func withMetrics(t *testing.T, yaml, addr string) string {
	t.Helper()
	return replaceYAML(t, yaml, "http:\n  enabled: false\n",
		fmt.Sprintf("http:\n  enabled: true\n  address: %s\nmetrics:\n  prometheus: {}\n", addr))
}

// replaceYAML replaces the one occurrence of old in a config; it fails the
// test when there is none, so a changed template cannot silently drop a
// setting.
func replaceYAML(t *testing.T, yaml, old, new string) string {
	t.Helper()
	if strings.Count(yaml, old) != 1 {
		t.Fatalf("the config does not hold %q exactly once:\n%s", old, yaml)
	}
	return strings.Replace(yaml, old, new, 1)
}

// metricSet is one scrape of a process's /metrics.
type metricSet struct{ testkit.Metrics }

// scrapeMetrics reads the Prometheus text format at http://addr/metrics.
func scrapeMetrics(ctx context.Context, addr string) (metricSet, error) {
	m, err := testkit.ScrapeMetrics(ctx, addr)
	return metricSet{m}, err
}

// byPartition returns the values of metric name for topic, by partition (a
// counter never incremented has no series: it reads 0).
func (m metricSet) byPartition(name, topic string) map[int32]int64 {
	out := map[int32]int64{}
	for p, v := range m.ByPartition(name, topic) {
		out[p] = int64(v)
	}
	return out
}

// total returns the sum of metric name over the partitions of topic.
func (m metricSet) total(name, topic string) int64 {
	return sum(m.byPartition(name, topic))
}

// mustScrape scrapes addr, failing the test when it cannot.
func mustScrape(t *testing.T, addr string) metricSet {
	t.Helper()
	m, err := scrapeMetrics(testCtx(t, 10*time.Second), addr)
	if err != nil {
		t.Fatalf("scrape http://%s/metrics: %v", addr, err)
	}
	return m
}
