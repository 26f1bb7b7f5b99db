package main

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// memberConf is what every member's pipeline shares.
type memberConf struct {
	seeds    func(name string) string // the member's seed brokers (its proxies in the cluster)
	topic    string
	group    string
	sinkURL  string
	protocol string
	// deadLetter is the dead-letter topic of a run that draws poison
	// ("": none, the members run without dead_letter).
	deadLetter string
	// ordering is the input's ordering; "none" leaves the field out, so
	// that a run without key order renders the config it always did.
	ordering string
	// The exactly-once mode (eos.go): the output topic, the prefix of
	// each member's transactional id (its name appended), and one message
	// in errorOneIn failing in a processor.
	eos        bool
	outTopic   string
	txnPrefix  string
	errorOneIn int
	control    bool // --eos-control: the same pipeline without exactly_once
}

// yaml is the member's config: read_committed, commit metadata on, short
// commit period, small batches and max_pending_batches so that a slow sink
// pauses partitions, stalls that heal in place quickly; with a dead-letter
// topic, dead_letter with max_attempts deadLetterAttempts; ordering key
// with its default max_held_records.
func (c memberConf) yaml(name, instance, metricsAddr string) string {
	if c.eos {
		return c.eosYAML(name, metricsAddr)
	}
	extra := "" // the input's optional fields
	if c.deadLetter != "" {
		extra = fmt.Sprintf("\n    dead_letter:\n      topic: %q\n      max_attempts: %d", c.deadLetter, deadLetterAttempts)
	}
	if c.ordering != "" && c.ordering != "none" {
		extra += fmt.Sprintf("\n    ordering: %s", c.ordering)
	}
	return fmt.Sprintf(`http:
  enabled: true
  address: %s
metrics:
  prometheus: {}
logger:
  level: INFO
  format: logfmt
  add_timestamp: true
shutdown_timeout: 30s
input:
  kafka_watermark:
    seed_brokers: [ %q ]
    topics: [ %q ]
    consumer_group: %q
    client_id: %q
    group_protocol: %s
    transaction_isolation_level: read_committed
    commit_metadata: true
    commit_period: 500ms
    batch_max_records: 50
    max_pending_batches: 4
    session_timeout: 6s
    heartbeat_interval: 1s
    stall_replay_after: 3s
    nack_retry:
      max_retries: 1
      initial_backoff: 200ms
      max_backoff: 1s%s
pipeline:
  threads: 2
  processors:
    - mapping: |
        root = {"t": @kafka_topic, "p": @kafka_partition, "o": @kafka_offset, "v": content().string()}
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
    timeout: %s
    max_in_flight: 16
`, metricsAddr, c.seeds(name), c.topic, c.group, "chaos-"+name, c.protocol, extra, c.sinkURL, instance, clientTimeout)
}

// member is one incarnation of one group member: a watermark-connect
// process.
type member struct {
	name        string // m1, m2, ...
	instance    string // m1.3: the third process of m1
	cmd         *exec.Cmd
	done        chan struct{}
	waitErr     error
	metricsAddr string
	logPath     string
	startedAt   time.Time
	told        atomic.Bool // the harness signalled it: its exit is expected
}

func (m *member) running() bool {
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

// fleet is the group's members.
type fleet struct {
	binary string
	dir    string // config and log files
	conf   memberConf
	logf   func(string, ...any)

	mu          sync.Mutex
	current     map[string]*member
	incarnation map[string]int
	all         []*member
	problems    []string // unclean exits and the like
}

func newFleet(binary, dir string, conf memberConf, logf func(string, ...any)) (*fleet, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &fleet{binary: binary, dir: dir, conf: conf, logf: logf, current: map[string]*member{}, incarnation: map[string]int{}}, nil
}

// freePort returns a loopback port below the ephemeral range (and below the
// brokers' ports from 29692) that nothing listens on right now.
func (f *fleet) freePort() (string, error) {
	for range 200 {
		p := 20000 + rand.IntN(9000)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		addr := l.Addr().String()
		_ = l.Close()
		return addr, nil
	}
	return "", errors.New("no free port in 20000-28999")
}

// start runs a new incarnation of member name.
func (f *fleet) start(name string) (*member, error) {
	f.mu.Lock()
	if m := f.current[name]; m != nil && m.running() {
		f.mu.Unlock()
		return nil, fmt.Errorf("%s is already running (%s)", name, m.instance)
	}
	f.incarnation[name]++
	inst := fmt.Sprintf("%s.%d", name, f.incarnation[name])
	f.mu.Unlock()

	addr, err := f.freePort()
	if err != nil {
		return nil, err
	}
	cfg := filepath.Join(f.dir, inst+".yaml")
	if err := os.WriteFile(cfg, []byte(f.conf.yaml(name, inst, addr)), 0o600); err != nil {
		return nil, err
	}
	logPath := filepath.Join(f.dir, inst+".log")
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(f.binary, "-c", cfg)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.Dir = f.dir
	if err := cmd.Start(); err != nil {
		_ = lf.Close()
		return nil, fmt.Errorf("start %s: %w", inst, err)
	}
	m := &member{name: name, instance: inst, cmd: cmd, done: make(chan struct{}), metricsAddr: addr, logPath: logPath, startedAt: time.Now()}
	go func() {
		m.waitErr = cmd.Wait()
		_ = lf.Close()
		close(m.done)
		if !m.told.Load() {
			f.problem("%s exited on its own: %v (log %s)", inst, m.waitErr, logPath)
		}
	}()
	f.mu.Lock()
	f.current[name] = m
	f.all = append(f.all, m)
	f.mu.Unlock()
	f.logf("started %s (pid %d, metrics %s)", inst, cmd.Process.Pid, addr)
	return m, nil
}

func (f *fleet) get(name string) *member {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.current[name]
}

func (f *fleet) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	f.logf("PROBLEM: %s", msg)
	f.mu.Lock()
	f.problems = append(f.problems, msg)
	f.mu.Unlock()
}

// kill SIGKILLs the member's process and waits for it to be gone.
func (f *fleet) kill(name string) error {
	m := f.get(name)
	if m == nil || !m.running() {
		return fmt.Errorf("%s is not running", name)
	}
	m.told.Store(true)
	_ = m.cmd.Process.Kill()
	<-m.done
	var ee *exec.ExitError
	if !errors.As(m.waitErr, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		f.problem("%s: expected death by SIGKILL, got %v", m.instance, m.waitErr)
	}
	f.logf("killed %s (SIGKILL)", m.instance)
	return nil
}

// stop sends SIGTERM and waits for a clean exit; an exit status other than 0,
// or no exit within timeout (then SIGKILL), is a problem.
func (f *fleet) stop(name string, timeout time.Duration) error {
	m := f.get(name)
	if m == nil || !m.running() {
		return fmt.Errorf("%s is not running", name)
	}
	start := time.Now()
	m.told.Store(true)
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(timeout):
		_ = m.cmd.Process.Kill()
		<-m.done
		f.problem("%s did not exit within %v of SIGTERM (killed)", m.instance, timeout)
		return nil
	}
	if m.waitErr != nil {
		f.problem("%s exited with %v after SIGTERM", m.instance, m.waitErr)
	}
	f.logf("stopped %s (SIGTERM, exit after %v)", m.instance, time.Since(start).Round(time.Millisecond))
	return nil
}

// names returns the members' names in order.
func (f *fleet) names() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, 0, len(f.current))
	for n := range f.current {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// running returns the members whose process runs now.
func (f *fleet) running() []*member {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*member
	for _, m := range f.current {
		if m.running() {
			out = append(out, m)
		}
	}
	return out
}

// stopAll stops every running member gracefully.
func (f *fleet) stopAll(timeout time.Duration) {
	var wg sync.WaitGroup
	for _, m := range f.running() {
		wg.Add(1)
		go func(name string) {
			defer wg.Done()
			_ = f.stop(name, timeout)
		}(m.name)
	}
	wg.Wait()
}

// killAll kills whatever still runs (teardown after an error).
func (f *fleet) killAll() {
	for _, m := range f.running() {
		m.told.Store(true)
		_ = m.cmd.Process.Kill()
		<-m.done
	}
}

// logStats is what the members' logs say, over every incarnation.
type logStats struct {
	Bad          []string       `json:"bad_lines,omitempty"` // panics, internal errors, races
	Lost         int            `json:"lost"`
	Stalled      int            `json:"stalled"`
	Replays      int            `json:"replays_in_place"`
	Skipped      int64          `json:"skipped_records"`
	DrainTimeout int            `json:"drain_timeouts"`
	CommitFailed int            `json:"commit_failures"`
	DeadLettered int64          `json:"dead_lettered"` // records the dead-lettered lines count
	ByMember     map[string]int `json:"lines_by_member"`
	// Losses are the loss and truncation reports (losslog.go), in the
	// order of the processes and of their lines.
	Losses []lossEvent `json:"loss_reports,omitempty"`
	// Under exactly_once (eos.go): the INFO lines of aborted transactions,
	// by cause, and the ERROR lines of aborts that failed.
	TxnAborted     int            `json:"transactions_aborted,omitempty"`
	TxnAbortCauses map[string]int `json:"transaction_abort_causes,omitempty"`
	TxnAbortFailed int            `json:"transaction_abort_failures,omitempty"`
}

var (
	skippedRe      = regexp.MustCompile(`skipped (\d+) record\(s\)`)
	deadLetteredRe = regexp.MustCompile(`kafka_watermark: dead-lettered (\d+) record\(s\) of `)
)

// scanLogs reads every incarnation's log.
func (f *fleet) scanLogs() logStats {
	f.mu.Lock()
	all := append([]*member(nil), f.all...)
	f.mu.Unlock()
	st := logStats{ByMember: map[string]int{}}
	for _, m := range all {
		fh, err := os.Open(m.logPath)
		if err != nil {
			st.Bad = append(st.Bad, fmt.Sprintf("%s: cannot read its log: %v", m.instance, err))
			continue
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
		for sc.Scan() {
			line := sc.Text()
			st.ByMember[m.instance]++
			for _, bad := range []string{"internal error", "panic:", "DATA RACE", "fatal error:"} {
				if strings.Contains(line, bad) && len(st.Bad) < 50 {
					st.Bad = append(st.Bad, m.instance+": "+line)
				}
			}
			if strings.Contains(line, "exactly_once: transaction aborted (") {
				st.TxnAborted++
				if st.TxnAbortCauses == nil {
					st.TxnAbortCauses = map[string]int{}
				}
				st.TxnAbortCauses[abortCause(line)]++
			}
			if strings.Contains(line, "exactly_once: aborting the transaction failed") {
				st.TxnAbortFailed++
			}
			if ev, ok, err := parseLossLine(line); ok {
				switch {
				case err != nil:
					st.Bad = append(st.Bad, m.instance+": "+err.Error())
				case ev.Level != "" && ev.Level != "error":
					st.Bad = append(st.Bad, fmt.Sprintf("%s: a loss report at level %q, not error: %s", m.instance, ev.Level, line))
				}
				if err == nil {
					ev.Instance = m.instance
					st.Losses = append(st.Losses, ev)
				}
				continue
			}
			switch {
			case strings.Contains(line, "kafka_watermark: lost "):
				st.Lost++
			case strings.Contains(line, " stalled since "):
				st.Stalled++
			case strings.Contains(line, "kafka_watermark: replaying "):
				st.Replays++
			case strings.Contains(line, "timed out with") && strings.Contains(line, "drain of"):
				st.DrainTimeout++
			case strings.Contains(line, "commit failed"):
				st.CommitFailed++
			}
			if mm := deadLetteredRe.FindStringSubmatch(line); mm != nil {
				n, _ := strconv.ParseInt(mm[1], 10, 64)
				st.DeadLettered += n
			}
			if mm := skippedRe.FindStringSubmatch(line); mm != nil {
				n, _ := strconv.ParseInt(mm[1], 10, 64)
				st.Skipped += n
			}
		}
		_ = fh.Close()
	}
	return st
}
