package tests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/deadletter"
	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// How the README test treats one of the README's shell commands.
type readmeKind int

const (
	// runToEnd runs the command to its end: it must exit 0.
	runToEnd readmeKind = iota
	// runServe starts a pipeline that runs until stopped, waits until
	// ready says it did its job, then interrupts it: it must exit 0.
	runServe
	// covered is not run here; why says what runs it.
	covered
)

// readmeCommand is one command of a ```sh block of README.md, as written
// there (a line, or lines joined at a trailing backslash, without its
// comment), and how this test runs it.
type readmeCommand struct {
	cmd     string
	kind    readmeKind
	timeout time.Duration                    // runToEnd: the longest it may take
	out     []string                         // runToEnd: what its output must contain
	env     []string                         // added to the environment
	ready   func(t *testing.T, r *readmeRun) // runServe
	why     string                           // covered
}

// readmeRun is what the commands share: the test broker, a sink, and the
// topics the example configs consume.
type readmeRun struct {
	k      *kafka
	broker string
	sink   *countingSink
	// ends is the log end of every partition of a topic, after the test
	// produced to it; produced is how many records it produced there (a
	// broker kept from an earlier run holds more, already committed).
	ends     map[string]map[int32]int64
	produced map[string]int64
}

// TestReadmeCommands runs every command of the README's shell blocks as a
// user would, in the checkout, in the README's order, against the test
// broker. Every command of the README is in the list below and every entry
// of the list is in the README, so neither can change alone. Two
// placeholders are replaced as the README says: localhost:9092 and
// localhost:19092 by the test broker and http://localhost:8080/ingest by a
// sink of this test; the
// configs read KAFKA_BROKERS, which is set to the test broker.
func TestReadmeCommands(t *testing.T) {
	env := needBroker(t)
	raw, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	inReadme := readmeShellCommands(string(raw))
	keepUsersBinary(t)

	r := &readmeRun{k: newKafka(t, env), broker: env.Brokers, sink: newCountingSink(t),
		ends: map[string]map[int32]int64{}, produced: map[string]int64{}}
	for _, topic := range []string{"orders", "payments"} {
		r.ensureTopic(t, topic, 4)
		before := r.k.endOffsets(topic)
		r.k.produce(topic, 4, 250, before)
		r.ends[topic] = r.k.endOffsets(topic)
		r.produced[topic] = sum(r.ends[topic]) - sum(before)
	}

	// A dead letter for the README's dead-letter commands to read and send
	// back: config/dead-letter.yaml's topic, orders-dlq.
	r.ensureTopic(t, "orders-dlq", 1)
	letter := deadletter.Letter(&kgo.Record{Topic: "orders", Partition: 0, Offset: 7, Key: []byte("7"), Value: []byte(value(0, 7)), Timestamp: time.Now()},
		"orders-dlq", deadletter.Failure{Attempts: 3, Error: "http 400", FirstFailed: time.Now(), Member: "readme@test"})
	letter.Partition = 0
	require.NoError(t, r.k.cl.ProduceSync(testCtx(t, 30*time.Second), letter).FirstErr())

	cmds := readmeCommands()
	listed := map[string]bool{}
	for _, c := range cmds {
		listed[c.cmd] = true
	}
	for _, c := range inReadme {
		assert.True(t, listed[c], "README.md runs %q, which TestReadmeCommands does not know: add it to readmeCommands", c)
	}
	seen := map[string]bool{}
	for _, c := range inReadme {
		seen[c] = true
	}
	for _, c := range cmds {
		assert.True(t, seen[c.cmd], "readmeCommands lists %q, which README.md no longer has", c.cmd)
	}
	if t.Failed() {
		return
	}

	payments := filepath.Join(t.TempDir(), "payments.jsonl")
	common := []string{"KAFKA_BROKERS=" + r.broker, "ORDERS_URL=" + r.sink.url(), "PAYMENTS_FILE=" + payments}
	for _, c := range cmds {
		t.Run(c.cmd, func(t *testing.T) {
			if c.kind == covered {
				t.Logf("not run here: %s", c.why)
				return
			}
			line := strings.NewReplacer("localhost:9092", r.broker, "localhost:19092", r.broker, "http://localhost:8080/ingest", r.sink.url()).Replace(c.cmd)
			environ := append(append(os.Environ(), common...), c.env...)
			switch c.kind {
			case runToEnd:
				out, code := runShell(t, line, environ, c.timeout)
				require.Equalf(t, 0, code, "exit status of %s\n%s", line, tail(out, 40))
				for _, s := range c.out {
					assert.Containsf(t, out, s, "output of %s", line)
				}
			case runServe:
				p := startShell(t, line, environ)
				// The input has connected (Benthos handles SIGINT by then):
				// a pipeline whose group is at the log end already is ready
				// at once, and a SIGINT before it installed its handler
				// killed it.
				require.Eventuallyf(t, func() bool { return strings.Contains(p.out.String(), "kafka_watermark: consuming") },
					time.Minute, 50*time.Millisecond, "%s to connect\n%s", line, tail(p.out.String(), 40))
				c.ready(t, r)
				code := p.interrupt(t, 30*time.Second)
				require.Equalf(t, 0, code, "exit status of %s after SIGINT\n%s", line, tail(p.out.String(), 40))
			}
		})
	}
}

// keepUsersBinary puts bin/watermark-connect back as it was when the test
// ends: the README's commands build it (make demo, and the custom build's
// v0.1.0-custom), which overwrote the user's own build (issue 30). A binary
// the user had is moved aside and back; one the test made is removed.
func keepUsersBinary(t *testing.T) {
	t.Helper()
	path := filepath.Join(repoRoot, "bin", "watermark-connect")
	saved := filepath.Join(repoRoot, "bin", fmt.Sprintf(".watermark-connect.kept-by-test-%d", os.Getpid()))
	had := os.Rename(path, saved) == nil
	t.Cleanup(func() {
		if had {
			if err := os.Rename(saved, path); err != nil {
				t.Errorf("putting the user's %s back from %s: %v", path, saved, err)
			}
			return
		}
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			t.Errorf("removing the %s the README's commands built: %v", path, err)
		}
	})
}

// readmeCommands is every command of the README's shell blocks, in the
// README's order, with how it is run.
func readmeCommands() []readmeCommand {
	// committed waits for the group's commits to reach the topic's log end
	// as it is now: the README's sample command adds records to orders.
	committed := func(group, topic string) func(t *testing.T, r *readmeRun) {
		return func(t *testing.T, r *readmeRun) {
			r.k.waitCommitted(group, topic, r.k.endOffsets(topic), 2*time.Minute)
		}
	}
	const (
		lintAll   = "KAFKA_USER=me KAFKA_PASSWORD=secret bin/watermark-connect lint config/*.yaml config/streams/*.yaml"
		runHTTP   = "KAFKA_BROKERS=localhost:9092 ORDERS_URL=http://localhost:8080/ingest bin/watermark-connect run config/http-sink.yaml"
		statusCfg = "bin/watermark-connect status -c config/http-sink.yaml"
	)
	return []readmeCommand{
		// The first two commands.
		{cmd: "make demo", kind: runToEnd, timeout: 5 * time.Minute,
			out: []string{"== building bin/watermark-connect", "healed"}},
		{cmd: "make test", kind: covered, why: "what CI runs (.ci/run): this test is one of its steps"},
		// Quick start: the demo.
		{cmd: "bin/watermark-connect demo --stall-replay-after 0", kind: runToEnd, timeout: 2 * time.Minute,
			out: []string{"stall_replay_after: 0s"}},
		{cmd: "bin/watermark-connect demo --dead-letter-after 3", kind: runToEnd, timeout: 2 * time.Minute,
			out: []string{"dead-letter topic watermark-demo-dlq, read back from the broker", "dead_letter_attempts=3"}},
		{cmd: "bin/watermark-connect demo --share", kind: runToEnd, timeout: 2 * time.Minute,
			out: []string{"who got what:", "(poison): attempt 1 ", "every record accepted or dead-lettered"}},
		{cmd: "bin/watermark-connect demo --help", kind: runToEnd, timeout: time.Minute,
			out: []string{"--stall-replay-after"}},
		// Building the binary.
		{cmd: "make build", kind: runToEnd, timeout: 5 * time.Minute},
		{cmd: "bin/watermark-connect --version", kind: runToEnd, timeout: time.Minute, out: []string{"Version: v0.1."}},
		{cmd: `go build -ldflags "-X main.version=v0.1.0-custom" -o bin/watermark-connect ./cmd/watermark-connect`,
			kind: runToEnd, timeout: 5 * time.Minute},
		{cmd: "go mod edit -replace github.com/watermark-connect/watermark-connect=../watermark-connect", kind: covered,
			why: "TestReadmeCustomBuild runs it, and the next, as written, in a module of its own"},
		{cmd: "go mod tidy", kind: covered, why: "TestReadmeCustomBuild runs it in a module of its own"},
		// Running a pipeline: from the demo to a real broker.
		{cmd: "make broker-start", kind: covered,
			why: "this test runs against the suite's broker, which resources/test.sh starts with the same broker.sh start (a second one would want its ports)"},
		{cmd: "bin/watermark-connect sample --seed-brokers localhost:19092 --topic orders --records 1000", kind: runToEnd,
			timeout: time.Minute, out: []string{"topic orders", "produced 1000 of 1000 record(s) to orders"}},
		{cmd: "KAFKA_BROKERS=localhost:19092 bin/watermark-connect run config/minimal.yaml", kind: runServe,
			ready: committed("orders-to-stdout", "orders")},
		{cmd: "bin/watermark-connect status --seed-brokers localhost:19092 --consumer-group orders-to-stdout --topics orders",
			kind: runToEnd, timeout: time.Minute, out: []string{"group orders-to-stdout", "orders"}},
		{cmd: "make broker-stop", kind: covered,
			why: "resources/test.sh stops the suite's broker with broker.sh stop and removes its run dir when the run passes"},
		// Running a pipeline: the example configs.
		{cmd: lintAll, kind: runToEnd, timeout: time.Minute},
		{cmd: "bin/watermark-connect run config/minimal.yaml", kind: runServe,
			ready: committed("orders-to-stdout", "orders")},
		{cmd: runHTTP, kind: runServe, ready: func(t *testing.T, r *readmeRun) {
			committed("orders-to-http", "orders")(t, r)
			assert.GreaterOrEqual(t, r.sink.Records(), r.produced["orders"], "records the sink took")
		}},
		{cmd: "bin/watermark-connect -c config/streams-main.yaml streams config/streams/*.yaml", kind: runServe,
			ready: func(t *testing.T, r *readmeRun) {
				committed("orders-stream", "orders")(t, r)
				committed("payments-stream", "payments")(t, r)
			}},
		// Dead letters: the one the test wrote to orders-dlq (and any an
		// earlier run on the same broker left).
		{cmd: "bin/watermark-connect dead-letter inspect -c config/dead-letter.yaml", kind: runToEnd, timeout: time.Minute,
			out: []string{"TOPIC", "orders", "http 400", "dead-letter topic orders-dlq"}},
		{cmd: "bin/watermark-connect dead-letter redrive -c config/dead-letter.yaml --from-offset 0 --to-offset 99", kind: runToEnd,
			timeout: time.Minute, out: []string{"orders: ", "from orders-dlq", "redrove"}},
		// Memory and the garbage collector.
		{cmd: "bin/watermark-connect run --memory-limit 1536MiB config/minimal.yaml", kind: runServe,
			ready: committed("orders-to-stdout", "orders")},
		// Status.
		{cmd: statusCfg, kind: runToEnd, timeout: time.Minute, out: []string{"orders-to-http", "COMMITTED"}},
		{cmd: statusCfg + " --format json", kind: runToEnd, timeout: time.Minute, out: []string{`"group": "orders-to-http"`}},
		{cmd: "bin/watermark-connect status --seed-brokers localhost:9092 --consumer-group orders-to-http --topics orders",
			kind: runToEnd, timeout: time.Minute, out: []string{"group orders-to-http"}},
		// Testing.
		{cmd: "make unit", kind: covered, why: "make test runs the same tests with -race, and without -short"},
		{cmd: "make lint", kind: covered, why: "make test runs it (resources/test.sh)"},
		{cmd: "make chaos", kind: covered, why: "make test's last step runs it (resources/test.sh)"},
		{cmd: "make bench", kind: covered, why: "30 to 35 minutes; not run by CI, as the README says"},
		{cmd: "make fuzz", kind: runToEnd, timeout: 5 * time.Minute, env: []string{"FUZZTIME=10s"}},
		{cmd: "go test ./plugin -run '^$' -bench Throughput -benchtime 5x -v", kind: runToEnd, timeout: 5 * time.Minute,
			out: []string{"BenchmarkThroughput"}},
		{cmd: "KAFKA_RUN_DIR=/tmp/other KAFKA_PORT=29092 KAFKA_CONTROLLER_PORT=29093 KAFKA_SASL_SSL_PORT=29094 make test",
			kind: covered, why: "make test with a run dir and ports of its own: what CI runs, elsewhere"},
	}
}

// readmeShellCommands returns the commands of every ```sh block of readme:
// each line, joined with the next at a trailing backslash, without a
// trailing "# comment", blank and comment-only lines left out.
func readmeShellCommands(readme string) []string {
	var cmds []string
	in := false
	pending := ""
	for _, line := range strings.Split(readme, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case !in && trimmed == "```sh":
			in = true
			continue
		case in && trimmed == "```":
			in = false
			continue
		case !in:
			continue
		}
		if i := commentStart(line); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if strings.HasSuffix(line, `\`) {
			pending += strings.TrimSpace(strings.TrimSuffix(line, `\`)) + " "
			continue
		}
		line = strings.TrimSpace(pending + line)
		pending = ""
		if line != "" {
			cmds = append(cmds, line)
		}
	}
	return cmds
}

// commentStart returns the index of a " #" that starts a shell comment
// outside quotes, or of a "#" at the start of the line, or -1.
func commentStart(line string) int {
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return i
		}
	}
	return -1
}

// TestReadmeShellCommandsParsing pins the extraction rules above.
func TestReadmeShellCommandsParsing(t *testing.T) {
	got := readmeShellCommands("text\n```sh\nmake demo    # a comment\n# only a comment\n\n" +
		"go test ./plugin -run '^$' -bench 'A#B' # c\nKAFKA_PORT=1 \\\n  make test\n```\n```go\nnot a command\n```\n" +
		"```sh\nbin/x --flag\n```\n")
	assert.Equal(t, []string{"make demo", "go test ./plugin -run '^$' -bench 'A#B'", "KAFKA_PORT=1 make test", "bin/x --flag"}, got)
}

// TestReadmeCustomBuild builds the README's custom-build recipe as a user
// would: in a module of its own (go mod init stands for the user's build),
// beside a ../watermark-connect that is this checkout (a symlink: the
// README's path for "your checkout"), the README's main.go, then every
// command of the section's shell block exactly as written, then `go build`;
// the binary must list kafka_watermark.
//
// Issue 30: the README said `go get ...@v0.1.0`, which the module proxy
// refuses (nothing is published), and this test passed only because it
// added a replace the README never showed. Nothing is added here between
// the README's commands.
func TestReadmeCustomBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Benthos binary: skipped with -short")
	}
	raw, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	section, ok := between(string(raw), "### Adding the input to your own build", "\n## ")
	require.True(t, ok, "README.md has the custom-build section")
	recipe := readmeShellCommands(section)
	require.NotEmpty(t, recipe, "the section says how to add the module")
	mainGo, ok := between(section, "```go\n", "```")
	require.True(t, ok, "the section has the program")

	root := t.TempDir()
	require.NoError(t, os.Symlink(repoRoot, filepath.Join(root, "watermark-connect")))
	dir := filepath.Join(root, "mybuild")
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(mainGo), 0o644))
	steps := append([]string{"go mod init example.com/mybuild"}, recipe...)
	for _, step := range append(steps, "go build -o mybuild .", "./mybuild list inputs") {
		out, code := runShellIn(t, dir, step, os.Environ(), 5*time.Minute)
		require.Equalf(t, 0, code, "%s\n%s", step, tail(out, 40))
		if strings.HasPrefix(step, "./mybuild") {
			assert.Contains(t, out, "kafka_watermark", "the custom build has the input")
		}
	}
}

func between(s, begin, end string) (string, bool) {
	i := strings.Index(s, begin)
	if i < 0 {
		return "", false
	}
	rest := s[i+len(begin):]
	j := strings.Index(rest, end)
	if j < 0 {
		return rest, true
	}
	return rest[:j], true
}

// ensureTopic creates topic, or leaves it as is if a broker kept from an
// earlier run has it.
func (r *readmeRun) ensureTopic(t *testing.T, topic string, partitions int32) {
	t.Helper()
	ends, err := r.k.adm.ListEndOffsets(testCtx(t, 30*time.Second), topic)
	if err == nil && ends.Error() == nil && len(ends[topic]) == int(partitions) {
		return
	}
	r.k.createTopic(topic, partitions)
}

// countingSink is an HTTP endpoint that takes every request and counts its
// lines (http_client posts one message per request, or a batch's messages
// one per line): a testkit.Sink whose Decode makes each line a record with
// no place in its ledger.
type countingSink struct{ *testkit.Sink }

func newCountingSink(t *testing.T) *countingSink {
	s, err := testkit.NewSink(testkit.SinkOptions{Decode: func(body []byte) ([]testkit.Record, error) {
		lines := bytes.Split(bytes.TrimSpace(body), []byte("\n"))
		recs := make([]testkit.Record, len(lines))
		for i := range recs {
			recs[i].P = testkit.NoPartition
		}
		return recs, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return &countingSink{s}
}

func (s *countingSink) url() string { return s.URL() }

// runShell runs line with bash in the checkout; it returns the combined
// output and the exit status (-1 when it did not end within timeout).
func runShell(t *testing.T, line string, environ []string, timeout time.Duration) (string, int) {
	t.Helper()
	return runShellIn(t, repoRoot, line, environ, timeout)
}

func runShellIn(t *testing.T, dir, line string, environ []string, timeout time.Duration) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
	cmd.Dir = dir
	cmd.Env = environ
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("%s: %v", line, time.Since(start).Round(100*time.Millisecond))
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return string(out) + fmt.Sprintf("\n(still running after %v)", timeout), -1
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v", line, err)
	}
	return string(out), 0
}

// shellProc is a command started by startShell.
type shellProc struct {
	cmd  *exec.Cmd
	out  syncBuffer
	done chan struct{}
	err  error
}

// startShell starts line with bash in the checkout, in a process group of
// its own so that a SIGINT reaches what bash runs; it is killed at the end
// of the test if it still runs.
func startShell(t *testing.T, line string, environ []string) *shellProc {
	t.Helper()
	p := &shellProc{cmd: exec.Command("bash", "-c", line), done: make(chan struct{})}
	p.cmd.Dir = repoRoot
	p.cmd.Env = environ
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, p.cmd.Start())
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
		if t.Failed() {
			t.Logf("output of %s:\n%s", line, tail(p.out.String(), 60))
		}
	})
	return p
}

// interrupt sends SIGINT and waits for the exit status (-1 if it did not
// exit within timeout).
func (p *shellProc) interrupt(t *testing.T, timeout time.Duration) int {
	t.Helper()
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT)
	select {
	case <-p.done:
	case <-time.After(timeout):
		return -1
	}
	var exit *exec.ExitError
	if errors.As(p.err, &exit) {
		return exit.ExitCode()
	}
	require.NoError(t, p.err)
	return 0
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// syncBuffer is a bytes.Buffer safe for concurrent use: a process's output
// is written by exec's copying goroutines while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
