package plugin

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"

	"github.com/watermark-connect/watermark-connect/internal/produce"
)

const (
	redpandaOutBegin = "<!-- redpanda-output-fields:begin -->"
	redpandaOutEnd   = "<!-- redpanda-output-fields:end -->"
)

// readmeRedpandaOutputTable parses the README's table of the redpanda
// output's fields, as readmeRedpandaTable the input's.
func readmeRedpandaOutputTable(t *testing.T) map[string]redpandaRow {
	t.Helper()
	return readmeFieldTable(t, redpandaOutBegin, redpandaOutEnd)
}

// everyRedpandaOutputField is a config as it would be written for Redpanda
// Connect's redpanda output (v4.106), renamed to kafka_watermark, setting
// every field accepted here (the rejected ones are variants), away from its
// default wherever that shows the field took effect.
func everyRedpandaOutputField(t *testing.T) string {
	certPEM, _, _, _ := testCert(t)
	return `
seed_brokers: [ "127.0.0.1:1, 127.0.0.1:2" ]
client_id: my-client
tls:
  enabled: true
  skip_cert_verify: true
  root_cas: |
` + yamlBlock(certPEM, "    ") + `
sasl:
  - mechanism: none
  - mechanism: PLAIN
    username: plain-user
    password: plain-password
  - mechanism: SCRAM-SHA-256
    username: scram-user
    password: scram-password
  - mechanism: SCRAM-SHA-512
    username: scram-user
    password: scram-password
  - mechanism: OAUTHBEARER
    token: bearer-token
    extensions: { traceability: yes-please }
metadata_max_age: 30s
request_timeout_overhead: 5s
conn_idle_timeout: 30s
tcp: { connect_timeout: 5s }
topic: '${! @kafka_topic }-copy'
key: '${! @kafka_key }'
partitioner: round_robin
metadata:
  include_prefixes: [ trace_ ]
  include_patterns: [ '^tenant$' ]
timestamp_ms: '${! @kafka_timestamp_ms }'
max_in_flight: 16
batching: { count: 100, period: 1s }
inject_tracing_map: 'meta = @.merge(this)'
idempotent_write: true
acks: all
compression: zstd
allow_auto_topic_creation: false
timeout: 7s
max_message_bytes: 2MiB
broker_write_max_bytes: 50MiB
max_buffered_records: 500
max_buffered_bytes: 64MiB
max_in_flight_requests: 1
record_retries: 3
record_delivery_timeout: 2m
`
}

// outputCase is what the test checks for one row of the README's output
// table, as redpandaCase for the input's.
type outputCase struct {
	outcome  string
	mentions string
	variant  string // fields added to outputVariantBase; "": the every-field config
	check    func(t *testing.T, c *outputConfig)
	want     string // rejected rows: lint's and start's message
}

const outputVariantBase = "seed_brokers: [ \"127.0.0.1:1\" ]\ntopic: out\n"

func outputCases() map[string]outputCase {
	same := func(check func(t *testing.T, c *outputConfig)) outputCase {
		return outputCase{outcome: "same", check: check}
	}
	rejected := func(variant, want string) outputCase {
		return outputCase{outcome: "rejected", variant: variant, want: want}
	}
	prod := func(check func(t *testing.T, p produce.Config)) outputCase {
		return same(func(t *testing.T, c *outputConfig) { check(t, c.produce) })
	}
	mech := func(i int, want string) outputCase {
		return same(func(t *testing.T, c *outputConfig) { require.Equal(t, want, c.conn.SASL[i].Mechanism) })
	}
	evaluates := func(field func(*outputConfig) *service.InterpolatedString, meta map[string]string, want string) func(t *testing.T, c *outputConfig) {
		return func(t *testing.T, c *outputConfig) {
			msg := service.NewMessage(nil)
			for k, v := range meta {
				msg.MetaSetMut(k, v)
			}
			require.Equal(t, want, field(c).String(msg))
		}
	}
	return map[string]outputCase{
		"`seed_brokers`": same(func(t *testing.T, c *outputConfig) {
			require.Equal(t, []string{"127.0.0.1:1", "127.0.0.1:2"}, c.conn.SeedBrokers)
		}),
		"`seed_brokers` omitted": rejected("", "seed_brokers: at least one broker address is required (this output never falls back to a global redpanda block)"),
		"`client_id`": {outcome: "own default", mentions: "`watermark-connect`", check: func(t *testing.T, c *outputConfig) {
			require.Equal(t, "my-client", c.conn.ClientID)
		}},
		"`tls.*`": same(func(t *testing.T, c *outputConfig) {
			require.NotNil(t, c.conn.TLS)
			require.True(t, c.conn.TLS.InsecureSkipVerify)
			require.NotNil(t, c.conn.TLS.RootCAs)
			require.Equal(t, tls.RenegotiateNever, c.conn.TLS.Renegotiation)
		}),
		"`sasl[].mechanism: none`":          mech(0, saslNone),
		"`sasl[].mechanism: PLAIN`":         mech(1, saslPlain),
		"`sasl[].mechanism: SCRAM-SHA-256`": mech(2, saslScram256),
		"`sasl[].mechanism: SCRAM-SHA-512`": mech(3, saslScram512),
		"`sasl[].mechanism: OAUTHBEARER`":   mech(4, saslOAuthBearer),
		"`sasl[].mechanism: AWS_MSK_IAM`": rejected("sasl: [ { mechanism: AWS_MSK_IAM } ]\n",
			"sasl[0].mechanism: AWS_MSK_IAM is not built into this output: use PLAIN"),
		"`sasl[].mechanism: REDPANDA_CLOUD_SERVICE_ACCOUNT`": rejected("sasl: [ { mechanism: REDPANDA_CLOUD_SERVICE_ACCOUNT } ]\n",
			"sasl[0].mechanism: REDPANDA_CLOUD_SERVICE_ACCOUNT is not built into this output: use PLAIN"),
		"`sasl[].username`": same(func(t *testing.T, c *outputConfig) { require.Equal(t, "plain-user", c.conn.SASL[1].Username) }),
		"`sasl[].password`": same(func(t *testing.T, c *outputConfig) { require.Equal(t, "scram-password", c.conn.SASL[3].Password) }),
		"`sasl[].token`":    same(func(t *testing.T, c *outputConfig) { require.Equal(t, "bearer-token", c.conn.SASL[4].Token) }),
		"`sasl[].extensions`": same(func(t *testing.T, c *outputConfig) {
			require.Equal(t, "yes-please", c.conn.SASL[4].Extensions["traceability"])
		}),
		"`sasl[].aws.*`": rejected("sasl: [ { mechanism: PLAIN, username: u, aws: { region: eu-west-1 } } ]\n",
			"sasl[0].aws: AWS_MSK_IAM is not built into this output"),
		"`metadata_max_age`":         same(func(t *testing.T, c *outputConfig) { require.Equal(t, 30*time.Second, c.conn.MetadataMaxAge) }),
		"`request_timeout_overhead`": same(func(t *testing.T, c *outputConfig) { require.Equal(t, 5*time.Second, c.conn.RequestTimeoutOverhead) }),
		"`conn_idle_timeout`":        same(func(t *testing.T, c *outputConfig) { require.Equal(t, 30*time.Second, c.conn.ConnIdleTimeout) }),
		"`tcp.*`":                    same(func(t *testing.T, c *outputConfig) { require.Equal(t, 5*time.Second, c.conn.Dialer.Timeout) }),
		"`topic`": same(evaluates(func(c *outputConfig) *service.InterpolatedString { return c.topic },
			map[string]string{"kafka_topic": "orders"}, "orders-copy")),
		"`key`": same(evaluates(func(c *outputConfig) *service.InterpolatedString { return c.key },
			map[string]string{"kafka_key": "k1"}, "k1")),
		"`partition`": {outcome: "same", variant: "partitioner: manual\npartition: '${! @p }'\n",
			check: evaluates(func(c *outputConfig) *service.InterpolatedString { return c.partition }, map[string]string{"p": "3"}, "3")},
		"`partitioner`": prod(func(t *testing.T, p produce.Config) { require.Equal(t, produce.PartitionerRoundRobin, p.Partitioner) }),
		"`metadata.include_prefixes`": same(func(t *testing.T, c *outputConfig) {
			require.True(t, c.metadata.Match("trace_id"))
			require.False(t, c.metadata.Match("other"))
		}),
		"`metadata.include_patterns`": same(func(t *testing.T, c *outputConfig) { require.True(t, c.metadata.Match("tenant")) }),
		"`timestamp_ms`": same(func(t *testing.T, c *outputConfig) {
			require.False(t, c.timestampSeconds)
			require.Equal(t, "12", c.timestamp.String(message("", "kafka_timestamp_ms", "12")))
		}),
		"`timestamp`": {outcome: "same", variant: "timestamp: '${! 1700000000 }'\n", check: func(t *testing.T, c *outputConfig) {
			require.True(t, c.timestampSeconds)
			ts, err := c.recordTime(service.NewMessage(nil))
			require.NoError(t, err)
			require.Equal(t, int64(1700000000), ts.Unix())
		}},
		"`max_in_flight`": same(func(t *testing.T, c *outputConfig) { require.Equal(t, 16, c.maxInFlight) }),
		"`batching`": same(func(t *testing.T, c *outputConfig) {
			require.Equal(t, 100, c.batching.Count)
			require.Equal(t, "1s", c.batching.Period)
		}),
		"`inject_tracing_map`":        same(func(*testing.T, *outputConfig) {}), // the wrapper: TestOutputRedpandaFields
		"`idempotent_write`":          prod(func(t *testing.T, p produce.Config) { require.False(t, p.NotIdempotent) }),
		"`acks: all`":                 same(func(t *testing.T, c *outputConfig) { require.Equal(t, acksAll, c.acks) }),
		"`acks: leader`":              rejected("acks: leader\n", `acks ("leader") is rejected: this output acknowledges a batch only once every in-sync replica has every record of it`),
		"`acks: none`":                rejected("acks: none\n", `acks ("none") is rejected`),
		"`compression`":               prod(func(t *testing.T, p produce.Config) { require.Equal(t, produce.CompressionZstd, p.Compression) }),
		"`allow_auto_topic_creation`": prod(func(t *testing.T, p produce.Config) { require.False(t, p.AllowAutoTopicCreation) }),
		"`timeout`":                   prod(func(t *testing.T, p produce.Config) { require.Equal(t, 7*time.Second, p.Timeout) }),
		"`max_message_bytes`":         prod(func(t *testing.T, p produce.Config) { require.Equal(t, int32(2<<20), p.MaxMessageBytes) }),
		"`broker_write_max_bytes`":    prod(func(t *testing.T, p produce.Config) { require.Equal(t, int32(50<<20), p.BrokerWriteMaxBytes) }),
		"`max_buffered_records`":      prod(func(t *testing.T, p produce.Config) { require.Equal(t, 500, p.MaxBufferedRecords) }),
		"`max_buffered_bytes`":        prod(func(t *testing.T, p produce.Config) { require.Equal(t, 64<<20, p.MaxBufferedBytes) }),
		"`max_in_flight_requests`":    prod(func(t *testing.T, p produce.Config) { require.Equal(t, 1, p.MaxInFlightRequests) }),
		"`record_retries`":            prod(func(t *testing.T, p produce.Config) { require.Equal(t, 3, p.RecordRetries) }),
		"`record_delivery_timeout`":   prod(func(t *testing.T, p produce.Config) { require.Equal(t, 2*time.Minute, p.RecordDeliveryTimeout) }),
	}
}

// Every field of the redpanda output has one outcome here, the README's:
// a config setting every accepted field lints clean and each takes effect;
// each rejected setting fails lint and start with the reason.
func TestOutputRedpandaFields(t *testing.T) {
	env := service.NewEnvironment()
	require.NoError(t, Register(env))
	table := readmeRedpandaOutputTable(t)
	cases := outputCases()
	for key := range cases {
		require.Contains(t, table, key, "the README's output table lacks a row the test checks")
	}
	for key := range table {
		require.Contains(t, cases, key, "the README's output table has a row the test does not check")
	}

	every := everyRedpandaOutputField(t)
	require.Empty(t, lintOutputFields(t, env, every), "the every-field config lints clean")
	parse := func(t *testing.T, fields string) (*service.ParsedConfig, *outputConfig, error) {
		t.Helper()
		pc, err := OutputConfigSpec().ParseYAML(fields, nil)
		require.NoError(t, err, "fields:\n%s", fields)
		c, err := parseOutputConfig(pc)
		return pc, c, err
	}
	everyPC, everyConf, err := parse(t, every)
	require.NoError(t, err)

	for key, tc := range cases {
		t.Run(key, func(t *testing.T) {
			row := table[key]
			require.Equal(t, tc.outcome, row.outcome, "README outcome of %s", key)
			require.Contains(t, row.here, tc.mentions, "README row %s", key)
			if tc.outcome == "rejected" {
				fields := outputVariantBase + tc.variant
				if tc.variant == "" {
					fields = "topic: out\n"
				}
				lints := lintOutputFields(t, env, fields)
				require.True(t, containsAny(lints, tc.want), "lint of\n%s\n= %q, want a lint containing %q", fields, lints, tc.want)
				_, _, err := parse(t, fields)
				require.ErrorContains(t, err, tc.want)
				return
			}
			c := everyConf
			if tc.variant != "" {
				require.Empty(t, lintOutputFields(t, env, outputVariantBase+tc.variant))
				var err error
				_, c, err = parse(t, outputVariantBase+tc.variant)
				require.NoError(t, err)
			}
			tc.check(t, c)
		})
	}

	// The every-field config makes a client (TLS over the tcp dialer, the
	// skipped sasl entry, every producer option in range), and
	// inject_tracing_map wraps the output.
	cl, _, err := produce.NewClient(everyConf.conn.Opts(), everyConf.produce)
	require.NoError(t, err)
	cl.Close()
	out, _, _, err := newOutputFromConfig(everyPC, service.MockResources())
	require.NoError(t, err)
	_, bare := out.(*Output)
	require.False(t, bare, "inject_tracing_map wraps the output")
	require.NoError(t, out.Close(context.Background()))
}
