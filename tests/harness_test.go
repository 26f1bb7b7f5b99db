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
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
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
type brokerEnv struct {
	Brokers     string // PLAINTEXT host:port
	SASLBrokers string // SASL_SSL host:port
	CA          string // PEM of the CA that signed the broker's certificate
	UntrustedCA string // PEM of an unrelated CA
	User        string // SCRAM user
	Password    string // SCRAM password
	RunDir      string // the broker's run dir
	ServerLog   string
	vars        map[string]string
}

var (
	envOnce sync.Once
	envVal  *brokerEnv
	envErr  error
)

// needBroker returns the broker's environment, or skips the test (fails it
// with CI=true) when no reachable broker is configured.
func needBroker(t *testing.T) *brokerEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	envOnce.Do(func() { envVal, envErr = loadBrokerEnv() })
	if envErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but the end-to-end tests have no broker: %v (resources/test.sh starts one and exports KAFKA_ENV_FILE)", envErr)
		}
		t.Skipf("end-to-end tests need a broker: run `make test` (starts one) or `bash resources/kafka/broker.sh start` (%v)", envErr)
	}
	return envVal
}

func loadBrokerEnv() (*brokerEnv, error) {
	vars := map[string]string{}
	path := os.Getenv("KAFKA_ENV_FILE")
	switch {
	case path != "":
		if err := parseEnvFile(path, vars); err != nil {
			return nil, err
		}
	case os.Getenv("KAFKA_BROKERS") != "":
		for _, kv := range os.Environ() {
			if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "KAFKA_") {
				vars[k] = v
			}
		}
	default:
		// The env file of `make broker-start`: broker.sh's default run dir,
		// which is this checkout's own.
		out, err := exec.Command("bash", filepath.Join(repoRoot, "resources", "kafka", "broker.sh"), "run-dir").Output()
		if err != nil {
			return nil, fmt.Errorf("KAFKA_ENV_FILE and KAFKA_BROKERS are unset, and broker.sh run-dir failed: %w", err)
		}
		path = filepath.Join(strings.TrimSpace(string(out)), "env")
		if err := parseEnvFile(path, vars); err != nil {
			return nil, fmt.Errorf("KAFKA_ENV_FILE and KAFKA_BROKERS are unset and the default env file (of make broker-start) is unusable: %w", err)
		}
	}
	e := &brokerEnv{
		Brokers:     vars["KAFKA_BROKERS"],
		SASLBrokers: vars["KAFKA_SASL_SSL_BROKERS"],
		CA:          vars["KAFKA_TLS_CA"],
		UntrustedCA: vars["KAFKA_TLS_UNTRUSTED_CA"],
		User:        vars["KAFKA_SCRAM_USER"],
		Password:    vars["KAFKA_SCRAM_PASSWORD"],
		RunDir:      vars["KAFKA_RUN_DIR"],
		ServerLog:   vars["KAFKA_SERVER_LOG"],
		vars:        vars,
	}
	if e.Brokers == "" {
		return nil, fmt.Errorf("KAFKA_BROKERS is not set (env file %q)", path)
	}
	conn, err := net.DialTimeout("tcp", strings.Split(e.Brokers, ",")[0], 3*time.Second)
	if err != nil {
		return nil, fmt.Errorf("broker %s from %q is not reachable: %w", e.Brokers, path, err)
	}
	conn.Close()
	return e, nil
}

// parseEnvFile reads KEY=value lines, values bare or single-quoted the way
// broker.sh writes them (a quote inside is written as quote, backslash,
// quote, quote).
func parseEnvFile(path string, into map[string]string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		into[k] = shellUnquote(v)
	}
	return nil
}

func shellUnquote(v string) string {
	var out strings.Builder
	for len(v) > 0 {
		switch {
		case v[0] == '\'':
			end := strings.IndexByte(v[1:], '\'')
			if end < 0 {
				out.WriteString(v[1:])
				return out.String()
			}
			out.WriteString(v[1 : end+1])
			v = v[end+2:]
		case v[0] == '\\' && len(v) > 1:
			out.WriteByte(v[1])
			v = v[2:]
		default:
			out.WriteByte(v[0])
			v = v[1:]
		}
	}
	return out.String()
}

// ---------------------------------------------------------------------------
// The binary.

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// binary builds ./cmd/watermark-connect once per test run.
func binary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if p := os.Getenv("WMC_E2E_BINARY"); p != "" {
			binPath = p
			return
		}
		binDir, binErr = os.MkdirTemp("", "wmc-e2e-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "watermark-connect")
		args := []string{"build", "-o", binPath}
		if os.Getenv("WMC_E2E_RACE") == "1" {
			args = append(args, "-race")
		}
		args = append(args, "./cmd/watermark-connect")
		cmd := exec.Command("go", args...)
		cmd.Dir = repoRoot
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
			return
		}
		fmt.Printf("e2e: built %s in %v\n", binPath, time.Since(start).Round(time.Millisecond))
	})
	if binErr != nil {
		t.Fatalf("cannot build the binary: %v", binErr)
	}
	return binPath
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

// metricSample is one series of a scrape.
type metricSample struct {
	labels map[string]string
	value  float64
}

// metricSet is one scrape of a process's /metrics, by metric name.
type metricSet map[string][]metricSample

// scrapeMetrics reads the Prometheus text format at http://addr/metrics.
func scrapeMetrics(ctx context.Context, addr string) (metricSet, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	out := metricSet{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, rest := line, ""
		labels := map[string]string{}
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			if j < i {
				return nil, fmt.Errorf("unparsable metrics line %q", line)
			}
			name, rest = line[:i], strings.TrimSpace(line[j+1:])
			for _, kv := range splitLabels(line[i+1 : j]) {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					return nil, fmt.Errorf("unparsable label %q in %q", kv, line)
				}
				uv, err := strconv.Unquote(v)
				if err != nil {
					return nil, fmt.Errorf("unparsable label value %q in %q: %w", v, line, err)
				}
				labels[k] = uv
			}
		} else if f := strings.Fields(line); len(f) >= 2 {
			name, rest = f[0], f[1]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return nil, fmt.Errorf("metrics line without a value: %q", line)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: %w", line, err)
		}
		out[name] = append(out[name], metricSample{labels: labels, value: v})
	}
	return out, sc.Err()
}

// splitLabels splits `a="x",b="y,z"` at the commas outside quotes.
func splitLabels(s string) []string {
	var out []string
	start, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && quoted:
			i++
		case s[i] == '"':
			quoted = !quoted
		case s[i] == ',' && !quoted:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// byPartition returns the values of metric name for topic, by partition (a
// counter never incremented has no series: it reads 0).
func (m metricSet) byPartition(name, topic string) map[int32]int64 {
	out := map[int32]int64{}
	for _, s := range m[name] {
		if s.labels["topic"] != topic {
			continue
		}
		p, err := strconv.ParseInt(s.labels["partition"], 10, 32)
		if err != nil {
			continue
		}
		out[int32(p)] += int64(s.value)
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
