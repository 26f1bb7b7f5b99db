package tests

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
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

// TestBrokerRestart: the broker restarts (same data dir) while the binary
// consumes; the input reconnects, records produced after the restart arrive
// too, nothing is lost and commits never go backwards.
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

	k := newKafka(t, env)
	const parts, perPart = 4, 10000
	topic, group := "wm-brestart-"+suffix(), "wm-brestart-g-"+suffix()
	k.createTopic(topic, parts)
	k.produce(topic, parts, perPart, nil)
	end1 := k.endOffsets(topic)

	s := newSink(t, topic, parts, 0, 10*time.Millisecond)
	s.setRate(8000)
	w := k.watchCommits(group, topic, s, 100*time.Millisecond)
	conf := pipeline{brokers: env.Brokers, topic: topic, group: group, sinkURL: s.url(),
		input: "commit_period: 500ms\nbatch_max_records: 100\nsession_timeout: 10s\nheartbeat_interval: 1s\n"}
	p := startProc(t, "main", conf.yaml())
	s.waitTotal(t, parts*perPart/4, 2*time.Minute)

	before := s.total.Load()
	runBrokerScript(t, env, "restart")
	t.Logf("broker restarted with %d of %d records acknowledged", before, parts*perPart)
	if before >= parts*perPart {
		t.Errorf("the stream ended before the broker restarted: not mid-stream")
	}

	// New records after the restart must arrive as well.
	k.produce(topic, parts, perPart, end1)
	end2 := k.endOffsets(topic)
	s.setRate(0)
	k.waitCommitted(group, topic, end2, 3*time.Minute)
	s.waitIdle(t, 10*time.Second)
	p.stop(60 * time.Second)
	w.check(t)
	dups := s.snapshot().coverage(t, end2)
	t.Logf("%s", s.stats())
	figure(t, "test=broker_restart records=%d broker_restart_duplicates=%d", sum(end2), dups)
}
