package plugin

import (
	"strings"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"
)

const validYAML = `
seed_brokers: [ "localhost:9092" ]
topics: [ orders ]
consumer_group: g
`

func TestValidConfigDefaults(t *testing.T) {
	pc, err := ConfigSpec().ParseYAML("seed_brokers: [ \"a:1,b:2\", c:3 ]\ntopics: [ orders ]\nconsumer_group: g\n", nil)
	require.NoError(t, err)
	c, err := parseConfig(pc)
	require.NoError(t, err)
	require.Equal(t, []string{"a:1", "b:2", "c:3"}, c.seedBrokers, "comma-separated entries are split")
	require.Equal(t, 1024, c.maxPending)
	require.Equal(t, startEarliest, c.startOffset)
	require.Equal(t, protocolClassic, c.groupProtocol)
	require.Equal(t, int64(1<<20), c.batchMaxBytes)
	require.Equal(t, "watermark-connect", c.clientID)
}

// Byte sizes mean what they mean in Redpanda Connect (go-humanize): SI units
// are powers of 1000, IEC units powers of 1024.
func TestByteSizesAsRedpandaConnectReadsThem(t *testing.T) {
	for in, want := range map[string]int64{"1048576": 1 << 20, "1MiB": 1 << 20, "1MB": 1_000_000, "1M": 1_000_000, "1mb": 1_000_000, "32KB": 32_000, "2 GiB": 2 << 30} {
		got, err := parseBytes("batch_max_bytes", in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, "parseBytes(%q)", in)
	}
}

func TestInvalidConfigs(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"no brokers", "seed_brokers: []\ntopics: [a]\nconsumer_group: g\n", "seed_brokers: at least one broker"},
		{"no topics", "seed_brokers: [x:1]\ntopics: []\nconsumer_group: g\n", "topics: at least one topic"},
		{"no group", "seed_brokers: [x:1]\ntopics: [a]\nconsumer_group: \"\"\n", "consumer_group: a group name is required"},
		{"pending zero", validYAML + "max_pending_batches: 0\n", "max_pending_batches (0) must be at least 1"},
		{"batch records zero", validYAML + "batch_max_records: 0\n", "batch_max_records (0) must be at least 1"},
		{"bad start", validYAML + "start_offset: newest\n", `start_offset ("newest") must be one of earliest, latest, committed`},
		{"bad protocol", validYAML + "group_protocol: eager\n", `group_protocol ("eager") must be one of classic, consumer`},
		{"zero commit period", validYAML + "commit_period: 0s\n", "commit_period (0s) must be positive"},
		{"negative drain", validYAML + "drain_timeout: -1s\n", "drain_timeout (-1s) must be positive"},
		{"drain above rebalance", validYAML + "drain_timeout: 45s\n", "drain_timeout (45s) must be below rebalance_timeout (45s)"},
		{"heartbeat above session", validYAML + "heartbeat_interval: 2m\n", "heartbeat_interval (2m0s) must be below session_timeout (1m0s)"},
		{"bad sasl", validYAML + "sasl: [ { mechanism: KERBEROS } ]\n", `sasl[0].mechanism ("KERBEROS") must be one of PLAIN`},
		{"sasl no user", validYAML + "sasl: [ { mechanism: SCRAM-SHA-512 } ]\n", "sasl[0].username: SCRAM-SHA-512 needs a user name"},
		{"oauth no token", validYAML + "sasl: [ { mechanism: OAUTHBEARER } ]\n", "sasl[0].token: OAUTHBEARER needs a token"},
		{"bad size", validYAML + "batch_max_bytes: lots\n", `batch_max_bytes ("lots") is not a byte size`},
		{"bad unit", validYAML + "fetch_max_bytes: 5XB\n", `fetch_max_bytes ("5XB") is not a byte size such as 1048576, 512KiB or 1MB: unhandled size name: xb`},
		// Regression: the hand-written parser overflowed and read this as 1GiB.
		{"overflowing size", validYAML + "batch_max_bytes: 17179869185GiB\n", `batch_max_bytes ("17179869185GiB") is not a byte size`},
		{"size too big", validYAML + "fetch_max_partition_bytes: 4GiB\n", "fetch_max_partition_bytes (4294967296) must be between 1 and 2147483647 bytes"},
		{"bad regexp", validYAML + "regexp_topics: true\ntopics: [ \"(\" ]\n", `topics: "(" is not a valid regular expression`},
		{"negative retries", validYAML + "nack_retry: { max_retries: -2 }\n", "nack_retry.max_retries (-2) must be -1 (unlimited) or at least 0"},
		{"negative replay wait", validYAML + "stall_replay_after: -1s\n", "stall_replay_after (-1s) must be 0s (never replay in place) or positive"},
		{"metadata too small", validYAML + "commit_metadata_max_bytes: 10\n", "commit_metadata_max_bytes (10) must be between 64 and 1048576 bytes"},
		{"no attempts", validYAML + "dead_letter: { topic: dlq, max_attempts: 0 }\n", `dead_letter.max_attempts (0) must be at least 1 when dead_letter.topic is set ("dlq")`},
		{"dead letters without metadata", validYAML + "commit_metadata: false\ndead_letter: { topic: dlq }\n", `dead_letter.topic ("dlq") needs commit_metadata: true`},
		{"dead letters consumed", validYAML + "dead_letter: { topic: orders }\n", `dead_letter.topic ("orders") is a topic this input consumes`},
		{"dead letters consumed by a pattern", "seed_brokers: [x:1]\nconsumer_group: g\nregexp_topics_include: [ \"ord.*\" ]\ndead_letter: { topic: orders-dlq }\n", `dead_letter.topic ("orders-dlq") is a topic this input consumes`},
		{"negative dead-letter report", validYAML + "dead_letter: { report_for: -1s }\n", "dead_letter.report_for (-1s) must be 0s"},
		{"no held records", validYAML + "ordering: key\nmax_held_records: 0\n", "max_held_records (0) must be at least 1"},
		{"unknown ordering", validYAML + "ordering: offset\n", `ordering ("offset") must be one of none, key`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pc, err := ConfigSpec().ParseYAML(tc.yaml, nil)
			if err == nil {
				_, err = parseConfig(pc)
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

// Benthos lints configs before it runs them: what the lint rule can see is
// rejected there, with the field named.
func TestLintRejectsInvalidConfigs(t *testing.T) {
	env := service.NewEnvironment()
	require.NoError(t, Register(env))
	for _, tc := range []struct{ yaml, want string }{
		{validYAML + "max_pending_batches: 0\n", "max_pending_batches"},
		{validYAML + "start_offset: newest\n", "newest"},
		{"seed_brokers: [x:1]\ntopics: [a]\nconsumer_group: \"\"\n", "consumer_group"},
		{validYAML + "nack_retry: { max_retries: -2 }\n", "nack_retry.max_retries"},
		{validYAML + "tcp: { connect_timeout: -1s }\n", "tcp: connect_timeout (-1s) must not be negative"},
		{validYAML + "dead_letter: { topic: dlq, max_attempts: 0 }\n", `dead_letter.max_attempts (0) must be at least 1 when dead_letter.topic is set ("dlq")`},
		{validYAML + "commit_metadata: false\ndead_letter: { topic: dlq }\n", `dead_letter.topic ("dlq") needs commit_metadata: true`},
		{validYAML + "dead_letter: { topic: orders }\n", `dead_letter.topic ("orders") is a topic this input consumes`},
		{"seed_brokers: [x:1]\nconsumer_group: g\ntopics: [ \"a,orders\" ]\ndead_letter: { topic: orders }\n", `dead_letter.topic ("orders") is a topic this input consumes`},
		{"seed_brokers: [x:1]\nconsumer_group: g\nregexp_topics_include: [ \"ord.*\" ]\ndead_letter: { topic: orders-dlq }\n", `dead_letter.topic ("orders-dlq") is a topic this input consumes`},
		{validYAML + "dead_letter: { report_for: -1s }\n", "dead_letter.report_for (-1s) must be 0s"},
		{validYAML + "max_held_records: 0\n", "max_held_records (0) must be at least 1"},
		{validYAML + "ordering: offset\n", "offset"},
	} {
		indented := "  " + strings.ReplaceAll(strings.TrimSpace(tc.yaml), "\n", "\n  ")
		err := env.NewStreamBuilder().AddInputYAML("kafka_watermark:\n" + indented)
		require.Error(t, err, tc.yaml)
		require.Contains(t, err.Error(), tc.want)
	}
	require.NoError(t, env.NewStreamBuilder().AddInputYAML("kafka_watermark:\n  "+strings.ReplaceAll(strings.TrimSpace(validYAML), "\n", "\n  ")))
	for _, ok := range []string{
		"dead_letter: { topic: orders-dlq }\n",
		"dead_letter: { topic: '${! meta(\"kafka_topic\") }-dlq' }\n",
		"dead_letter: { max_attempts: 0 }\n", // no topic: off, whatever the rest says
	} {
		yaml := "kafka_watermark:\n  " + strings.ReplaceAll(strings.TrimSpace(validYAML+ok), "\n", "\n  ")
		require.NoError(t, env.NewStreamBuilder().AddInputYAML(yaml), ok)
	}
	// An excluded pattern does not consume the dead-letter topic.
	require.NoError(t, env.NewStreamBuilder().AddInputYAML("kafka_watermark:\n  seed_brokers: [x:1]\n  consumer_group: g\n  regexp_topics_include: [ \"ord.*\" ]\n  regexp_topics_exclude: [ \".*-dlq\" ]\n  dead_letter: { topic: orders-dlq }"))
}
