package tests

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// brokerScript is resources/kafka/broker.sh, or $WMC_BROKER_SH.
func brokerScript() string {
	if s := os.Getenv("WMC_BROKER_SH"); s != "" {
		return s
	}
	return filepath.Join(repoRoot, "resources", "kafka", "broker.sh")
}

// runBrokerScript runs `broker.sh <cmd>` for the broker the tests use: its
// run dir and ports come from the env file.
func runBrokerScript(t *testing.T, env *brokerEnv, cmd string) {
	t.Helper()
	c := exec.Command("bash", brokerScript(), cmd)
	c.Env = os.Environ()
	if env.RunDir != "" {
		c.Env = append(c.Env, "KAFKA_RUN_DIR="+env.RunDir)
	}
	for name, addr := range map[string]string{"KAFKA_PORT": env.Brokers, "KAFKA_SASL_SSL_PORT": env.SASLBrokers} {
		if _, port, err := net.SplitHostPort(addr); err == nil {
			c.Env = append(c.Env, name+"="+port)
		}
	}
	start := time.Now()
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("broker.sh %s: %v\n%s", cmd, err, out)
	}
	t.Logf("broker.sh %s took %v", cmd, time.Since(start).Round(time.Millisecond))
}

// lostLine is what plugin/rebalance.go logs for each partition kgo declares
// lost (its group session ended without a revoke).
var lostLine = []string{"kafka_watermark: lost ", "dropped without a commit"}

// TestBrokerRestart: the broker restarts (same data dir) while the binary
// consumes, with the default session_timeout and heartbeat_interval, once
// per group protocol. The outage (a few seconds) is far shorter than the
// session, so the member must keep its partitions: none is lost, nothing is
// replayed from the last commit (duplicates under 1% of the records), nothing
// is missing, commits never go backwards, and records produced after the
// restart arrive too.
func TestBrokerRestart(t *testing.T) {
	env := needBroker(t)
	script, err := os.ReadFile(brokerScript())
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^\s*restart\)`).Match(script) {
		msg := brokerScript() + " has no `restart` subcommand (restart keeping the data dir)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if env.RunDir == "" {
		t.Fatal("the broker env has no KAFKA_RUN_DIR: cannot restart the broker")
	}
	for _, proto := range []string{"classic", "consumer"} {
		t.Run(proto, func(t *testing.T) { testBrokerRestart(t, env, proto) })
	}
}

func testBrokerRestart(t *testing.T, env *brokerEnv, proto string) {
	k := newKafka(t, env)
	const parts, perPart = 4, 10000
	topic, group := "wm-brestart-"+proto+"-"+suffix(), "wm-brestart-g-"+proto+"-"+suffix()
	k.createTopic(topic, parts)
	k.produce(topic, parts, perPart, nil)
	end1 := k.endOffsets(topic)

	s := newSink(t, topic, parts, 0, 10*time.Millisecond)
	s.setRate(8000)
	w1 := k.watchCommits(group, topic, s, 100*time.Millisecond)
	// No session_timeout or heartbeat_interval: the defaults are under test.
	conf := pipeline{brokers: env.Brokers, topic: topic, group: group, sinkURL: s.url(), protocol: proto,
		input: "commit_period: 500ms\nbatch_max_records: 100\n"}
	p := startProc(t, "main", conf.yaml())
	s.waitTotal(t, parts*perPart/4, 2*time.Minute)
	var gt string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got, err := k.groupType(group)
		if assert.NoError(c, err, "list groups") {
			assert.NotEmpty(c, got, "group type")
		}
		gt = got
	}, 30*time.Second, 50*time.Millisecond, "group %s to be listed", group)
	if gt != proto {
		t.Fatalf("group %s has type %q, want %q (group_protocol: %s)", group, gt, proto, proto)
	}

	// Right after a restart, while the coordinator loads __consumer_offsets,
	// an OffsetFetch can answer an older commit than one already read
	// (shared/notes/kafka-broker.md), which a watcher would report as a
	// commit going backwards. So one watcher audits up to the restart and a
	// second one from a few seconds after it; the second one's first reading
	// of each partition must not be below the first one's last.
	w1.check(t)
	w1.mu.Lock()
	beforeRestart := map[int32]int64{}
	for part, off := range w1.last {
		beforeRestart[part] = off
	}
	w1.mu.Unlock()

	before := s.total()
	runBrokerScript(t, env, "restart")
	back := time.Now()
	t.Logf("broker restarted with %d of %d records acknowledged, commits %s", before, parts*perPart, fmtOffsets(beforeRestart))
	if before >= parts*perPart {
		t.Errorf("the stream ended before the broker restarted: not mid-stream")
	}

	// New records after the restart must arrive as well.
	k.produce(topic, parts, perPart, end1)
	end2 := k.endOffsets(topic)
	time.Sleep(time.Until(back.Add(5 * time.Second)))
	w2 := k.watchCommits(group, topic, s, 100*time.Millisecond)
	s.setRate(0)
	k.waitCommitted(group, topic, end2, 3*time.Minute)
	s.waitIdle(t, 10*time.Second)
	p.stop(60 * time.Second)
	w2.check(t)
	w2.mu.Lock()
	for part, off := range beforeRestart {
		if h := w2.history[part]; len(h) > 0 && h[0] < off {
			t.Errorf("partition %d: commit went backwards across the broker restart, from %d to %d", part, off, h[0])
		}
	}
	w2.mu.Unlock()

	lost := p.grep(lostLine...)
	for i, l := range lost {
		if i == 5 {
			break
		}
		t.Logf("%s", l.text)
	}
	if len(lost) > 0 {
		t.Errorf("%d partition(s) lost across a broker restart shorter than the session (first: %s)", len(lost), lost[0].text)
	}
	records := sum(end2)
	dups := s.snapshot().coverage(t, end2)
	t.Logf("%s", s.stats())
	figure(t, "test=broker_restart protocol=%s records=%d broker_restart_duplicates=%d partitions_lost=%d", proto, records, dups, len(lost))
	if dups*100 >= sum(end1) {
		t.Errorf("%d duplicates: at least 1%% of the %d records in the topic at the restart", dups, sum(end1))
	}
}
