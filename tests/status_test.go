package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// runStatus runs `watermark-connect status` to completion with extra
// environment variables, and returns its exit status, stdout and stderr.
func runStatus(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), append([]string{"status"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "status %v timed out; stderr:\n%s", args, stderr.String())
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), stdout.String(), stderr.String()
	}
	require.NoError(t, err)
	return 0, stdout.String(), stderr.String()
}

// TestStatus reads groups over the SASL_SSL listener (TLS + SCRAM-SHA-512)
// with the connection settings of a pipeline config, the password passed
// through the environment. The commits are written by the test as the input
// writes them, so that each exit status has its case: 0 healthy, 1 stalled,
// 2 when status cannot tell (an unknown group, a wrong password, an
// untrusted CA, plaintext on the TLS port). No output ever holds a password.
func TestStatus(t *testing.T) {
	env := needBroker(t)
	if env.SASLBrokers == "" || env.CA == "" || env.User == "" || env.Password == "" {
		t.Fatal("the broker env lacks KAFKA_SASL_SSL_BROKERS, KAFKA_TLS_CA, KAFKA_SCRAM_USER or KAFKA_SCRAM_PASSWORD")
	}
	k := newKafka(t, env)
	topic := "wm-status-" + suffix()
	k.createTopic(topic, 2)
	k.produce(topic, 2, 100, nil)

	healthy, stalled := "wm-status-ok-"+suffix(), "wm-status-stalled-"+suffix()
	since := time.Now().Add(-5 * time.Minute).Truncate(time.Millisecond)
	stall := commitmeta.Stall{Report: commitmeta.Report{First: 60, Last: 69, Since: since, Reason: "http 503"}, Attempts: 2, Member: "watermark-connect@e2e"}
	commit := func(group string, partition int32, offset int64, ranges []commitmeta.Range, stall *commitmeta.Stall) {
		t.Helper()
		extra := ""
		if stall != nil {
			extra = stall.Fields()
		}
		meta, cut := commitmeta.Encode(commitmeta.Meta{Base: offset, Epoch: 0, Delivered: ranges}, extra, 4000)
		require.Zero(t, cut)
		var offs kadm.Offsets
		offs.Add(kadm.Offset{Topic: topic, Partition: partition, At: offset, LeaderEpoch: -1, Metadata: meta})
		resp, err := k.adm.CommitOffsets(testCtx(t, 30*time.Second), group, offs)
		require.NoError(t, err)
		require.NoError(t, resp.Error())
	}
	commit(healthy, 0, 100, nil, nil)
	commit(healthy, 1, 60, []commitmeta.Range{{From: 70, To: 80}}, nil)
	commit(stalled, 0, 100, nil, nil)
	commit(stalled, 1, 60, []commitmeta.Range{{From: 70, To: 80}}, &stall)

	wrongPassword := "not-" + env.Password + "-x9"
	config := func(ca string) string {
		p := filepath.Join(t.TempDir(), "pipeline.yaml")
		require.NoError(t, os.WriteFile(p, []byte(fmt.Sprintf(`
input:
  kafka_watermark:
    seed_brokers: [ %q ]
    topics: [ %q ]
    consumer_group: "${WMC_E2E_STATUS_GROUP}"
    tls:
      enabled: true
      root_cas_file: %q
    sasl:
      - mechanism: SCRAM-SHA-512
        username: %q
        password: "${WMC_E2E_KAFKA_PASSWORD}"
output:
  drop: {}
`, env.SASLBrokers, topic, ca, env.User)), 0o600))
		return p
	}
	trusted := config(env.CA)
	vars := func(group, password string) []string {
		return []string{"WMC_E2E_STATUS_GROUP=" + group, "WMC_E2E_KAFKA_PASSWORD=" + password}
	}
	noSecrets := func(t *testing.T, what, out string) {
		t.Helper()
		for _, secret := range []string{env.Password, wrongPassword} {
			if strings.Contains(out, secret) {
				t.Errorf("%s contains a password (%q)", what, secret)
			}
		}
	}

	t.Run("healthy", func(t *testing.T) {
		code, stdout, stderr := runStatus(t, vars(healthy, env.Password), "-c", trusted)
		assert.Equal(t, 0, code, "stderr: %s", stderr)
		assert.Empty(t, stderr)
		assert.Contains(t, stdout, topic+"  0          100        100      0    0                no")
		assert.Contains(t, stdout, topic+"  1          60         100      40   10               no")
		assert.Contains(t, stdout, "group "+healthy+": healthy, none of 2 partitions stalled")
		noSecrets(t, "the output", stdout+stderr)
	})

	t.Run("stalled", func(t *testing.T) {
		code, stdout, stderr := runStatus(t, vars(stalled, env.Password), "-c", trusted)
		assert.Equal(t, 1, code, "stderr: %s", stderr)
		assert.Contains(t, stdout, "stalled: offsets 60-69 for 5m")
		assert.Contains(t, stdout, "2 attempts, by watermark-connect@e2e: http 503")
		noSecrets(t, "the output", stdout+stderr)

		code, stdout, stderr = runStatus(t, vars(stalled, env.Password), "-c", trusted, "--format", "json")
		require.Equal(t, 1, code, "stderr: %s", stderr)
		var doc struct {
			Group      string `json:"group"`
			Healthy    bool   `json:"healthy"`
			Partitions []struct {
				Partition int32 `json:"partition"`
				Stalled   bool  `json:"stalled"`
				Stall     *struct {
					First    int64  `json:"first_offset"`
					Last     int64  `json:"last_offset"`
					Since    string `json:"since"`
					Attempts int    `json:"attempts"`
					Reason   string `json:"reason"`
					Member   string `json:"member"`
				} `json:"stall"`
			} `json:"partitions"`
		}
		require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
		assert.Equal(t, stalled, doc.Group)
		assert.False(t, doc.Healthy)
		require.Len(t, doc.Partitions, 2)
		assert.Nil(t, doc.Partitions[0].Stall)
		if s := doc.Partitions[1].Stall; assert.NotNil(t, s) {
			assert.Equal(t, since.UTC().Format("2006-01-02T15:04:05.000Z07:00"), s.Since)
			assert.Equal(t, []int64{60, 69, 2}, []int64{s.First, s.Last, int64(s.Attempts)})
			assert.Equal(t, "http 503", s.Reason)
			assert.Equal(t, "watermark-connect@e2e", s.Member)
		}
	})

	// Each case exits 2 with its reason on stderr and nothing on stdout.
	for _, tc := range []struct {
		name   string
		env    []string
		args   []string
		stderr []string
	}{
		{"unknown_group", vars("wm-status-nosuch-"+suffix(), env.Password), []string{"-c", trusted},
			[]string{"status: unknown group \"wm-status-nosuch-"}},
		{"wrong_password", vars(healthy, wrongPassword), []string{"-c", trusted},
			[]string{"status: cannot reach seed brokers " + env.SASLBrokers + " with TLS and SASL SCRAM-SHA-512: ", "SASL_AUTHENTICATION_FAILED"}},
		{"untrusted_ca", vars(healthy, env.Password), []string{"-c", config(env.UntrustedCA)},
			[]string{"status: cannot reach seed brokers " + env.SASLBrokers + " with TLS and SASL SCRAM-SHA-512: ", "x509: certificate signed by unknown authority"}},
		{"plaintext_on_tls_port", nil, []string{"--seed-brokers", env.SASLBrokers, "--consumer-group", healthy, "--timeout", "10s"},
			[]string{"status: cannot reach seed brokers " + env.SASLBrokers + ": ", "is this a plaintext connection speaking to a tls endpoint?"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "untrusted_ca" && env.UntrustedCA == "" {
				t.Fatal("the broker env lacks KAFKA_TLS_UNTRUSTED_CA")
			}
			t.Logf("EXPECTED: status below fails on purpose (%s) and prints an error containing %q, exit 2",
				strings.ReplaceAll(tc.name, "_", " "), tc.stderr[len(tc.stderr)-1])
			start := time.Now()
			code, stdout, stderr := runStatus(t, tc.env, tc.args...)
			t.Logf("exit %d after %v: %s", code, time.Since(start).Round(time.Millisecond), strings.TrimSpace(stderr))
			assert.Equal(t, 2, code)
			assert.Empty(t, stdout)
			for _, w := range tc.stderr {
				assert.Contains(t, stderr, w)
			}
			noSecrets(t, "the output", stdout+stderr)
		})
	}

	// A member of the consumer protocol (KIP-848) that has not committed:
	// the classic DescribeGroups reads its group as dead, and status must
	// still know it (exit 0, partitions without a commit).
	t.Run("live_consumer_protocol_group_without_commits", func(t *testing.T) {
		group := "wm-status-848-" + suffix()
		p := startProc(t, "status-848", fmt.Sprintf(`
input:
  kafka_watermark:
    seed_brokers: [ %q ]
    topics: [ %q ]
    consumer_group: %q
    group_protocol: consumer
    start_offset: committed
output:
  drop: {}
`, env.Brokers, topic, group))
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			listed, err := k.adm.ListGroups(testCtx(t, 10*time.Second))
			if assert.NoError(c, err) {
				assert.Equal(c, "Stable", listed[group].State)
			}
		}, 60*time.Second, 100*time.Millisecond, "the member to join %s", group)
		code, stdout, stderr := runStatus(t, nil, "--seed-brokers", env.Brokers, "--consumer-group", group, "--topics", topic)
		assert.Equal(t, 0, code, "stderr: %s", stderr)
		assert.Contains(t, stdout, topic+"  0          -          100      -    0                no")
		p.stop(45 * time.Second)
	})

	// The whole chain: a real pipeline whose sink rejects everything stalls
	// both partitions, the input writes the provenance with its commits,
	// and status reads it, while the pipeline runs and after it stopped.
	t.Run("real_pipeline_stall", func(t *testing.T) {
		group := "wm-status-pipe-" + suffix()
		p := startProc(t, "status-pipe", fmt.Sprintf(`
input:
  kafka_watermark:
    seed_brokers: [ %q ]
    topics: [ %q ]
    consumer_group: %q
    commit_period: 200ms
    batch_max_records: 10
output:
  reject: "sink down: http 503"
`, env.Brokers, topic, group))
		var stdout string
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			var code int
			var stderr string
			code, stdout, stderr = runStatus(t, nil, "--seed-brokers", env.Brokers, "--consumer-group", group, "--topics", topic)
			assert.Equal(c, 1, code, "stdout:\n%s\nstderr: %s", stdout, stderr)
			assert.Equal(c, 2, strings.Count(stdout, "stalled: offsets 0-9 for"), stdout)
		}, 60*time.Second, 200*time.Millisecond, "status to report both partitions stalled")
		assert.Contains(t, stdout, "sink down: http 503")
		assert.Contains(t, stdout, "group "+group+": 2 of 2 partitions stalled")
		p.stop(45 * time.Second)

		code, stdout, stderr := runStatus(t, nil, "--seed-brokers", env.Brokers, "--consumer-group", group)
		assert.Equal(t, 1, code, "after the pipeline stopped; stderr: %s", stderr)
		assert.Contains(t, stdout, "group "+group+": 2 of 2 partitions stalled")
	})

	// The same groups over PLAINTEXT with flags only, no config.
	t.Run("flags_plaintext", func(t *testing.T) {
		code, stdout, stderr := runStatus(t, nil, "--seed-brokers", env.Brokers, "--consumer-group", stalled, "--topics", topic)
		assert.Equal(t, 1, code, "stderr: %s", stderr)
		assert.Contains(t, stdout, "group "+stalled+": 1 of 2 partitions stalled")
	})
}
