package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/watermark-connect/watermark-connect/internal/deadletter"
)

// TestDeadLetterCommand runs `watermark-connect dead-letter` from the binary
// on a config whose password comes from the environment, against a broker
// that requires SCRAM: the commands connect as the input and status do, and
// print no secret.
func TestDeadLetterCommand(t *testing.T) {
	t.Parallel()
	const user, password = "svc", "dlq-hunter2-c0ffee"
	binary(t)
	addr, adm := statusKafka(t, user, password)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, 1, 1, nil, "orders.dlq")
	require.NoError(t, err)
	require.NoError(t, resp.Err)
	origin := &kgo.Record{Topic: "orders", Partition: 1, Offset: 42, Timestamp: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Value: []byte("x")}
	l := deadletter.Letter(origin, "orders.dlq", deadletter.Failure{Attempts: 3, Error: "http: status=503", FirstFailed: origin.Timestamp.Add(time.Minute), Member: "wm@pod-1"})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha512Mechanism()))
	require.NoError(t, err)
	defer cl.Close()
	require.NoError(t, cl.ProduceSync(ctx, l).FirstErr())

	cfg := writeFile(t, t.TempDir(), "pipeline.yaml", `
input:
  kafka_watermark:
    seed_brokers: [ "`+addr+`" ]
    topics: [ orders ]
    consumer_group: g
    sasl:
      - mechanism: SCRAM-SHA-512
        username: `+user+`
        password: "${WMC_DLQ_PASSWORD}"
output:
  drop: {}
`)
	env := []string{"WMC_DLQ_PASSWORD=" + password}
	out, code := runBinary(t, env, "dead-letter", "inspect", "-c", cfg, "--dead-letter-topic", "orders.dlq")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, `orders  1          1      42      2026-03-01T12:00:00.000Z  2026-03-01T12:01:00.000Z  42`)
	assert.Contains(t, out, "dead-letter topic orders.dlq: 1 record in 1 partition: 1 from 1 origin partition, 0 unparsable")

	out, code = runBinary(t, env, "dead-letter", "redrive", "-c", cfg, "--dead-letter-topic", "orders.dlq")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "orders: 1 record from orders.dlq partition 0 offset 0")

	out, code = runBinary(t, env, "dead-letter", "inspect", "-c", cfg)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "no dead_letter.topic: give the topic with --dead-letter-topic")

	out, code = runBinary(t, []string{"WMC_DLQ_PASSWORD=not-" + password}, "dead-letter", "redrive", "-c", cfg, "--dead-letter-topic", "orders.dlq", "--timeout", "10s")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "dead-letter redrive: cannot reach seed brokers "+addr+" with SASL SCRAM-SHA-512")
	assert.NotContains(t, out, password, "the output holds the password")
}
