package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// statusKafka is a kfake cluster that requires SCRAM-SHA-512, with an admin
// client that commits as the input would.
func statusKafka(t *testing.T, user, password string) (string, *kadm.Client) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "orders"),
		kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", user, password))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	addr := c.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha512Mechanism()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rs []*kgo.Record
	for p := range int32(2) {
		for i := range 50 {
			rs = append(rs, &kgo.Record{Topic: "orders", Partition: p, Value: fmt.Appendf(nil, "%d", i)})
		}
	}
	require.NoError(t, cl.ProduceSync(ctx, rs...).FirstErr())
	return addr, kadm.NewClient(cl)
}

// commitStatus commits offset with the input's metadata for it, the stall
// provenance if stall is not nil, and the loss report if loss is not nil.
func commitStatus(t *testing.T, adm *kadm.Client, group string, partition int32, offset int64, stall *commitmeta.Stall, loss *commitmeta.Loss) {
	t.Helper()
	var fields []string
	if stall != nil {
		fields = append(fields, stall.Fields())
	}
	if loss != nil {
		fields = append(fields, loss.Fields())
	}
	extra := strings.Join(fields, " ")
	meta, _ := commitmeta.Encode(commitmeta.Meta{Base: offset, Epoch: 0, Delivered: []commitmeta.Range{{From: offset + 5, To: offset + 8}}}, extra, 4000)
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "orders", Partition: partition, At: offset, LeaderEpoch: -1, Metadata: meta})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := adm.CommitOffsets(ctx, group, offs)
	require.NoError(t, err)
	require.NoError(t, resp.Error())
}

// TestStatusCommand runs `watermark-connect status` on a config whose
// broker and password come from the environment, as in a Kubernetes pod:
// the exit status is the answer (0 healthy, 1 stalled, 2 cannot tell, 3
// records lost while nothing is stalled), and no output ever holds the
// password, right or wrong.
func TestStatusCommand(t *testing.T) {
	t.Parallel()
	const user, password = "svc", "status-hunter2-c0ffee"
	wrong := "not-" + password
	binary(t) // built before the stall is committed, so that its age is what the test set
	addr, adm := statusKafka(t, user, password)
	commitStatus(t, adm, "healthy", 0, 40, nil, nil)
	commitStatus(t, adm, "healthy", 1, 30, nil, nil)
	commitStatus(t, adm, "stalled", 0, 40, nil, nil)
	commitStatus(t, adm, "stalled", 1, 30, &commitmeta.Stall{
		Report:   commitmeta.Report{First: 30, Last: 39, Since: time.Now().Add(-90 * time.Second), Reason: "http 503"},
		Attempts: 4,
		Member:   "watermark-connect@pod-3",
	}, nil)
	loss := &commitmeta.Loss{Report: commitmeta.Report{First: 2, Last: 11, Since: time.Date(2026, 1, 1, 11, 0, 0, 0, time.UTC), Reason: commitmeta.CauseRetention}, Count: 10}
	commitStatus(t, adm, "lost", 0, 40, nil, nil)
	commitStatus(t, adm, "lost", 1, 30, nil, loss)

	dir := t.TempDir()
	cfg := writeFile(t, dir, "pipeline.yaml", `
input:
  kafka_watermark:
    seed_brokers: [ "${WMC_STATUS_BROKER}" ]
    topics: [ orders ]
    consumer_group: "${WMC_STATUS_GROUP:healthy}"
    sasl:
      - mechanism: SCRAM-SHA-512
        username: `+user+`
        password: "${WMC_STATUS_PASSWORD}"
output:
  drop: {}
`)
	env := func(pass string, more ...string) []string {
		return append([]string{"WMC_STATUS_BROKER=" + addr, "WMC_STATUS_PASSWORD=" + pass}, more...)
	}
	noSecret := func(what, out string) {
		t.Helper()
		for _, secret := range []string{password, wrong} {
			assert.NotContains(t, out, secret, "%s: the output holds a password", what)
		}
	}

	for _, tc := range []struct {
		name string
		env  []string
		args []string
		code int
		want []string // parts of the output
	}{
		{"healthy", env(password), nil, 0,
			[]string{"TOPIC   PARTITION  COMMITTED  LOG END  LAG  DELIVERED ABOVE  STALLED", "orders  0          40         50       10   3                no",
				"group healthy: healthy, none of 2 partitions stalled"}},
		{"stalled", env(password, "WMC_STATUS_GROUP=stalled"), nil, 1,
			[]string{"orders  1          30         50       20   3                yes", "orders/1: stalled: offsets 30-39 for 1m", "4 attempts, by watermark-connect@pod-3: http 503",
				"group stalled: 1 of 2 partitions stalled"}},
		{"the group from a flag", env(password), []string{"--consumer-group", "stalled"}, 1, []string{"group stalled: 1 of 2"}},
		{"lost records, nothing stalled", env(password, "WMC_STATUS_GROUP=lost"), nil, 3,
			[]string{"STALLED  LOST", "orders  0          40         50       10   3                no       -",
				"orders  1          30         50       20   3                no       10    -", "orders/1: lost: 10 (offsets 2-11, retention, since 2026-01-01T11:00:00Z)",
				"group lost: none of 2 partitions stalled; 1 of 2 lost records before delivery"}},
		{"wrong password", env(wrong), nil, 2, []string{"status: cannot reach seed brokers " + addr + " with SASL SCRAM-SHA-512: "}},
		{"unset password", []string{"WMC_STATUS_BROKER=" + addr}, nil, 2,
			[]string{"status: ", "pipeline.yaml: required environment variables were not set: WMC_STATUS_PASSWORD"}},
		{"unknown group", env(password), []string{"--consumer-group", "nosuch"}, 2, []string{`status: unknown group "nosuch"`}},
		{"unreachable", env(password), []string{"--seed-brokers", freeAddr(t), "--timeout", "5s"}, 2, []string{"status: cannot reach seed brokers"}},
		{"a bad format", env(password), []string{"--format", "xml"}, 2, []string{`status: --format ("xml") must be text or json`}},
	} {
		out, code := runBinary(t, tc.env, append([]string{"status", "-c", cfg}, tc.args...)...)
		assert.Equal(t, tc.code, code, "%s: exit status; output:\n%s", tc.name, out)
		for _, w := range tc.want {
			assert.Contains(t, out, w, tc.name)
		}
		noSecret(tc.name, out)
	}

	// JSON: one object, with the stall's provenance.
	out, code := runBinary(t, env(password), "status", "-c", cfg, "--consumer-group", "stalled", "--format", "json")
	require.Equal(t, 1, code, out)
	noSecret("json", out)
	var doc struct {
		Group      string `json:"group"`
		Healthy    bool   `json:"healthy"`
		Partitions []struct {
			Partition      int32            `json:"partition"`
			Committed      int64            `json:"committed"`
			LogEnd         int64            `json:"log_end"`
			Lag            int64            `json:"lag"`
			DeliveredAbove int64            `json:"delivered_above"`
			Stalled        bool             `json:"stalled"`
			Stall          *json.RawMessage `json:"stall"`
		} `json:"partitions"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	assert.Equal(t, "stalled", doc.Group)
	assert.False(t, doc.Healthy)
	require.Len(t, doc.Partitions, 2)
	assert.Nil(t, doc.Partitions[0].Stall, "stall is null when not stalled")
	assert.True(t, doc.Partitions[1].Stalled)
	assert.Equal(t, []int64{30, 50, 20, 3}, []int64{doc.Partitions[1].Committed, doc.Partitions[1].LogEnd, doc.Partitions[1].Lag, doc.Partitions[1].DeliveredAbove})
	if assert.NotNil(t, doc.Partitions[1].Stall) {
		var stall map[string]any
		require.NoError(t, json.Unmarshal(*doc.Partitions[1].Stall, &stall))
		assert.Equal(t, float64(30), stall["first_offset"])
		assert.Equal(t, float64(39), stall["last_offset"])
		assert.Equal(t, float64(4), stall["attempts"])
		assert.Equal(t, "http 503", stall["reason"])
		assert.Equal(t, "watermark-connect@pod-3", stall["member"])
		assert.GreaterOrEqual(t, stall["age_s"], float64(90))
	}

	// JSON with a loss: "lost" holds it, "healthy" is about stalls only,
	// and the exit status says records were lost.
	out, code = runBinary(t, env(password), "status", "-c", cfg, "--consumer-group", "lost", "--format", "json")
	require.Equal(t, 3, code, out)
	var lostDoc struct {
		Healthy    bool `json:"healthy"`
		Partitions []struct {
			Lost *json.RawMessage `json:"lost"`
		} `json:"partitions"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &lostDoc), out)
	assert.True(t, lostDoc.Healthy)
	require.Len(t, lostDoc.Partitions, 2)
	assert.Nil(t, lostDoc.Partitions[0].Lost, "lost is null without a loss")
	if assert.NotNil(t, lostDoc.Partitions[1].Lost) {
		assert.JSONEq(t, `{"first_offset": 2, "last_offset": 11, "count": 10, "since": "2026-01-01T11:00:00.000Z", "cause": "retention"}`,
			string(*lostDoc.Partitions[1].Lost))
	}

	// The root flag -e loads an env file before the command, as for run.
	envFile := writeFile(t, dir, "secrets.env", "WMC_STATUS_PASSWORD="+password+"\n")
	out, code = runBinary(t, []string{"WMC_STATUS_BROKER=" + addr}, "-e", envFile, "status", "-c", cfg)
	assert.Equal(t, 0, code, "status with -e:\n%s", out)
	noSecret("-e", out)
}

func TestStatusCommandFlagsOnly(t *testing.T) {
	t.Parallel()
	k := newTestKafka(t, 2, "orders")
	k.produce(t, "orders", 2, 20)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 10, LeaderEpoch: -1, Metadata: "wm1 o=10 e=0"})
	_, err := k.adm.CommitOffsets(ctx, "g", offs)
	require.NoError(t, err)

	// --topics lists the partitions without a commit too; no member
	// consumes orders/1 while records wait in it: unready (4).
	out, code := runBinary(t, nil, "status", "--seed-brokers", k.addr, "--consumer-group", "g", "--topics", "orders")
	require.Equal(t, 4, code, out)
	assert.Contains(t, out, "orders  0          10         10       0    0                no")
	assert.Contains(t, out, "orders  1          -          10       -    0                no")
	assert.Contains(t, out, "orders/1: not consumed: no commit, and no member of the group is assigned it; 10 records wait (offsets 0-9)")

	out, code = runBinary(t, nil, "status", "--consumer-group", "g")
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, "seed_brokers: at least one broker address is required")

	out, code = runBinary(t, nil, "status", "--help")
	require.Equal(t, 0, code, out)
	for _, flag := range []string{"--config value, -c value", "--seed-brokers", "--consumer-group", "--topics", "--format", "--timeout"} {
		assert.Contains(t, out, flag)
	}
	words := strings.Join(strings.Fields(out), " ") // the help is wrapped and indented
	for _, want := range []string{"Exit status: 0 when no partition is stalled, none lost records and none waits unconsumed; 1 when any is stalled; 2 when it cannot tell",
		"4 when none is stalled but records wait in a partition that is not consumed", "3 when none of those, but some partition lost records",
		"For a readiness probe 1, 2 and 4 are unready; 3 is ready"} {
		assert.True(t, strings.Contains(words, want), "the help does not hold %q:\n%s", want, out)
	}
}
