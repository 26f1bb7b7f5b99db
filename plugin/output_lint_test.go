package plugin

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"
)

// lintOutputFields lints a whole config whose output is kafka_watermark with
// these fields, the way `watermark-connect lint` does. The fields start at
// line 5.
func lintOutputFields(t *testing.T, env *service.Environment, fields string) []string {
	t.Helper()
	conf := "input:\n  generate: { mapping: 'root = {}' }\noutput:\n  kafka_watermark:\n    " +
		strings.ReplaceAll(strings.TrimSpace(fields), "\n", "\n    ") + "\n"
	lints, err := env.FullConfigSchema("", "").NewStreamConfigLinter().LintYAML([]byte(conf))
	require.NoError(t, err)
	var out []string
	for _, l := range lints {
		out = append(out, l.Error())
	}
	return out
}

// Lint refuses what the output's start refuses, naming the field and the
// value: at the field's line (line 7: after the base's two) when one field
// is at fault, at the output's (line 5) when fields relate. Unknown fields
// are refused by Benthos itself, and the redpanda output's settings this
// output does not take are refused with the reason.
func TestOutputLintRefusesWhatStartRefuses(t *testing.T) {
	env := service.NewEnvironment()
	require.NoError(t, Register(env))
	const base = "seed_brokers: [ \"127.0.0.1:1\" ]\ntopic: out\n"
	require.Empty(t, lintOutputFields(t, env, base), "the least a config sets")
	require.Empty(t, lintOutputFields(t, env, base+"acks: all\npartitioner: manual\npartition: '${! @kafka_partition }'\n"))
	for _, tc := range []struct {
		fields string // added after base
		line   int
		want   string
	}{
		{"acks: leader", 7, `acks ("leader") is rejected: this output acknowledges a batch only once every in-sync replica has every record of it`},
		{"acks: none", 7, `acks ("none") is rejected`},
		{"compression: brotli", 7, `compression ("brotli") must be one of lz4, snappy, gzip, none, zstd`},
		{"partitioner: sticky", 7, `partitioner ("sticky") must be one of murmur2_hash, round_robin, least_backup, manual`},
		{"max_in_flight: 0", 7, "max_in_flight (0) must be at least 1"},
		{"timeout: 5", 7, `timeout ("5") is not a duration: write it with its unit`},
		{"record_delivery_timeout: -1s", 7, "record_delivery_timeout (-1s) must be 0s (no limit) or positive"},
		{"max_message_bytes: 100", 7, "max_message_bytes (100) must be between 512 and 1073741824 bytes"},
		{"max_message_bytes: 2GiB", 7, "max_message_bytes (2147483648) must be between 512 and 1073741824 bytes"},
		{"broker_write_max_bytes: 100", 7, "broker_write_max_bytes (100) must be between 1024 and 1073741824 bytes"},
		{"max_buffered_bytes: lots", 7, `max_buffered_bytes ("lots") is not a byte size`},
		{"max_buffered_records: 0", 7, "max_buffered_records (0) must be at least 1"},
		{"record_retries: -1", 7, "record_retries (-1) must be 0 (no limit) or more"},
		{"request_timeout_overhead: 10ms", 7, "request_timeout_overhead (10ms) must be between 100ms and 15m"},
		{"unknown_field: 1", 7, "field unknown_field not recognised"},
		{"broker_write_max_bytes: 1KiB", 5, "broker_write_max_bytes (1024 bytes) must be at least max_message_bytes (1048576 bytes)"},
		{"max_in_flight_requests: 5", 5, "max_in_flight_requests (5) must be 1 while idempotent_write is true"},
		{"partitioner: manual", 5, `partitioner ("manual") needs partition`},
		{"partition: '${! @p }'", 5, `partition ("${! @p }") is used only by partitioner: manual`},
		{"timestamp: '${! 1 }'\ntimestamp_ms: '${! 1 }'", 5, "timestamp: cannot be set together with timestamp_ms"},
		{"sasl: [ { mechanism: AWS_MSK_IAM } ]", 5, "sasl[0].mechanism: AWS_MSK_IAM is not built into this output: use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER"},
		{"sasl: [ { mechanism: PLAIN, username: u, aws: { region: eu-west-1 } } ]", 5, "sasl[0].aws: AWS_MSK_IAM is not built into this output"},
		{"sasl: [ { mechanism: PLAIN } ]", 5, "sasl[0].username: PLAIN needs a user name"},
	} {
		t.Run(tc.fields, func(t *testing.T) {
			lints := lintOutputFields(t, env, base+tc.fields)
			require.Len(t, lints, 1, "lint of %s = %q", tc.fields, lints)
			require.True(t, strings.HasPrefix(lints[0], fmt.Sprintf("(%d,1) ", tc.line)), "at line %d: %q", tc.line, lints[0])
			require.Contains(t, lints[0], tc.want)

			if strings.Contains(tc.want, "not recognised") {
				return // Benthos's own: parsing does not see unknown fields
			}
			pc, err := OutputConfigSpec().ParseYAML(base+tc.fields, nil)
			if err == nil {
				_, err = parseOutputConfig(pc)
			}
			require.ErrorContains(t, err, tc.want, "start refuses it with lint's message")
		})
	}
	// A topic and brokers are required, naming the field.
	require.Contains(t, lintOutputFields(t, env, "seed_brokers: [ \"127.0.0.1:1\" ]"), "(5,1) field topic is required")
	require.Contains(t, lintOutputFields(t, env, "seed_brokers: [ \"127.0.0.1:1\" ]\ntopic: \"\""), "(6,1) topic: a topic is required")
	require.Equal(t, []string{"(5,1) seed_brokers: at least one broker address is required (this output never falls back to a global redpanda block)"},
		lintOutputFields(t, env, "topic: out"))
	require.Equal(t, []string{`(5,1) seed_brokers: "localhost:notaport" is not a broker address: want host:port, such as localhost:9092 (port 1-65535; 9092 when left out)`},
		lintOutputFields(t, env, "seed_brokers: [ localhost:notaport ]\ntopic: out"))
}

// Under exactly_once, lint refuses the producer fields the input's client
// decides, an empty group, and a batching policy with no period.
func TestOutputLintExactlyOnce(t *testing.T) {
	env := service.NewEnvironment()
	require.NoError(t, Register(env))
	const base = "seed_brokers: [ \"127.0.0.1:1\" ]\ntopic: out\nexactly_once: { consumer_group: enrich }\n"
	require.Empty(t, lintOutputFields(t, env, base))
	require.Empty(t, lintOutputFields(t, env, base+"batching: { count: 100, period: 100ms }\nmax_in_flight: 16\npartitioner: round_robin\n"))
	for _, tc := range []struct{ fields, want string }{
		{"compression: zstd", "compression is refused with exactly_once"},
		{"idempotent_write: false\nmax_in_flight_requests: 5", "idempotent_write, max_in_flight_requests is refused with exactly_once"},
		{"max_message_bytes: 2MiB\nbroker_write_max_bytes: 4MiB", "max_message_bytes, broker_write_max_bytes is refused with exactly_once"},
		{"batching: { count: 100 }", "batching needs a period with exactly_once"},
	} {
		t.Run(tc.fields, func(t *testing.T) {
			lints := lintOutputFields(t, env, base+tc.fields)
			require.Len(t, lints, 1, "lint of %s = %q", tc.fields, lints)
			require.Contains(t, lints[0], tc.want)
			pc, err := OutputConfigSpec().ParseYAML(base+tc.fields, nil)
			if err == nil {
				_, err = parseOutputConfig(pc)
			}
			require.ErrorContains(t, err, tc.want, "start refuses it with lint's message")
		})
	}
	lints := lintOutputFields(t, env, strings.Replace(base, "enrich", `""`, 1))
	require.Len(t, lints, 1)
	require.Contains(t, lints[0], `exactly_once.consumer_group ("") must name the consumer group`)
}
