package plugin

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/engine"
	"github.com/watermark-connect/watermark-connect/internal/testcert"
)

const (
	redpandaBegin = "<!-- redpanda-fields:begin -->"
	redpandaEnd   = "<!-- redpanda-fields:end -->"
)

// redpandaRow is one row of the README's upgrade table.
type redpandaRow struct{ outcome, here string }

// readmeRedpandaTable parses the README's table of the redpanda input's
// fields: the first cell, verbatim, names the row.
func readmeRedpandaTable(t *testing.T) map[string]redpandaRow {
	t.Helper()
	return readmeFieldTable(t, redpandaBegin, redpandaEnd)
}

// readmeFieldTable parses the README's table between the markers begin and
// end: rows of three cells, the first naming the row, none twice.
func readmeFieldTable(t *testing.T, begin, end string) map[string]redpandaRow {
	t.Helper()
	raw, err := os.ReadFile(readmePath)
	require.NoError(t, err)
	section, ok := between(string(raw), begin, end)
	require.True(t, ok, "README.md lacks the markers %s and %s", begin, end)
	rows := map[string]redpandaRow{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		require.Len(t, cells, 3, "README row %q", line)
		key := strings.TrimSpace(cells[0])
		_, dup := rows[key]
		require.False(t, dup, "README row %q twice", key)
		rows[key] = redpandaRow{outcome: strings.TrimSpace(cells[1]), here: strings.TrimSpace(cells[2])}
	}
	return rows
}

// lintFields lints a whole config with these kafka_watermark fields the way
// `watermark-connect lint` does, and returns the lint messages.
func lintFields(t *testing.T, env *service.Environment, fields string) []string {
	t.Helper()
	conf := "input:\n  kafka_watermark:\n    " + strings.ReplaceAll(strings.TrimSpace(fields), "\n", "\n    ") + "\noutput:\n  drop: {}\n"
	lints, err := env.FullConfigSchema("", "").NewStreamConfigLinter().LintYAML([]byte(conf))
	require.NoError(t, err)
	var out []string
	for _, l := range lints {
		out = append(out, l.Error())
	}
	return out
}

// parseFields parses kafka_watermark fields without linting, as the input's
// constructor sees them, and validates them.
func parseFields(t *testing.T, fields string) (*service.ParsedConfig, *config, error) {
	t.Helper()
	pc, err := ConfigSpec().ParseYAML(fields, nil)
	require.NoError(t, err, "fields:\n%s", fields)
	c, err := parseConfig(pc)
	return pc, c, err
}

// testCert writes a self-signed certificate and key and returns them as PEM
// and as file paths.
func testCert(t *testing.T) (certPEM, keyPEM, certFile, keyFile string) {
	t.Helper()
	c := testcert.New(t)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, []byte(c.CertPEM), 0o600))
	require.NoError(t, os.WriteFile(keyFile, []byte(c.KeyPEM), 0o600))
	return c.CertPEM, c.KeyPEM, certFile, keyFile
}

// yamlBlock indents a multi-line string as a YAML literal block's body.
func yamlBlock(s, indent string) string {
	return indent + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n"+indent)
}

// everyRedpandaField is a config as it would be written for Redpanda
// Connect's redpanda input (v4.106), renamed to kafka_watermark, setting
// every field that is accepted here (the rejected ones are variants). Values
// differ from the defaults wherever that shows the field took effect.
func everyRedpandaField(t *testing.T) string {
	certPEM, keyPEM, certFile, keyFile := testCert(t)
	return `
seed_brokers: [ "127.0.0.1:1, 127.0.0.1:2" ]
client_id: my-client
tls:
  enabled: true
  skip_cert_verify: true
  enable_renegotiation: true
  root_cas: |
` + yamlBlock(certPEM, "    ") + `
  root_cas_file: ""
  client_certs:
    - cert: |
` + yamlBlock(certPEM, "        ") + `
      key: |
` + yamlBlock(keyPEM, "        ") + `
    - cert_file: ` + certFile + `
      key_file: ` + keyFile + `
      password: ""
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
tcp:
  connect_timeout: 5s
  keep_alive:
    idle: 20s
    interval: 10s
    count: 5
  tcp_user_timeout: 10s
topics: [ "orders, payments", "re.*" ]
regexp_topics: true
regexp_topics_exclude: [ "^payments$" ]
rack_id: rack-1
instance_id: instance-1
rebalance_timeout: 50s
session_timeout: 30s
heartbeat_interval: 2s
start_from_oldest: true
start_offset: latest
fetch_max_bytes: 10MB
fetch_max_wait: 1s
fetch_min_bytes: 1KB
fetch_max_partition_bytes: 2MiB
transaction_isolation_level: read_committed
consumer_group: orders-group
commit_period: 2s
topic_lag_refresh_period: 10s
max_yield_batch_bytes: 32KB
unordered_processing:
  enabled: true
  checkpoint_limit: 256
  batching: { count: 0, byte_size: 0, period: "", check: "" }
auto_replay_nacks: true
timely_nacks_maximum_wait: 30s
extract_tracing_map: root = @
`
}

const variantBase = "seed_brokers: [ \"127.0.0.1:1\" ]\n"

// redpandaCase is what the test checks for one row of the README table.
type redpandaCase struct {
	outcome string
	// mentions: what the row's "here" cell must name (the equivalent or
	// our default).
	mentions string
	// accepted rows: check, on the every-field config or on variant
	// (added to variantBase) when set.
	variant string
	check   func(t *testing.T, pc *service.ParsedConfig, c *config)
	// rejected rows: the variant (added to variantBase) and the message
	// that lint and validate both give.
	want string
}

func redpandaCases() map[string]redpandaCase {
	same := func(check func(t *testing.T, pc *service.ParsedConfig, c *config)) redpandaCase {
		return redpandaCase{outcome: "same", check: check}
	}
	rejected := func(variant, want string) redpandaCase {
		return redpandaCase{outcome: "rejected", variant: variant, want: want}
	}
	const minimal = "topics: [ orders ]\nconsumer_group: g\n"
	mech := func(i int, want string) redpandaCase {
		return same(func(t *testing.T, _ *service.ParsedConfig, c *config) { require.Equal(t, want, c.sasl[i].Mechanism) })
	}
	return map[string]redpandaCase{
		"`seed_brokers`": same(func(t *testing.T, _ *service.ParsedConfig, c *config) {
			require.Equal(t, []string{"127.0.0.1:1", "127.0.0.1:2"}, c.seedBrokers)
		}),
		"`client_id`": {outcome: "own default", mentions: "`watermark-connect`", check: func(t *testing.T, _ *service.ParsedConfig, c *config) {
			require.Equal(t, "my-client", c.clientID)
		}},
		"`tls.*`": same(func(t *testing.T, _ *service.ParsedConfig, c *config) {
			require.NotNil(t, c.tls)
			require.True(t, c.tls.InsecureSkipVerify)
			require.Equal(t, tls.RenegotiateFreelyAsClient, c.tls.Renegotiation)
			require.NotNil(t, c.tls.RootCAs)
			require.Len(t, c.tls.Certificates, 2)
		}),
		"`sasl[].mechanism: none`":          mech(0, saslNone),
		"`sasl[].mechanism: PLAIN`":         mech(1, saslPlain),
		"`sasl[].mechanism: SCRAM-SHA-256`": mech(2, saslScram256),
		"`sasl[].mechanism: SCRAM-SHA-512`": mech(3, saslScram512),
		"`sasl[].mechanism: OAUTHBEARER`":   mech(4, saslOAuthBearer),
		"`sasl[].mechanism: AWS_MSK_IAM`": rejected(minimal+"sasl: [ { mechanism: AWS_MSK_IAM } ]\n",
			"sasl[0].mechanism: AWS_MSK_IAM is not built into this input: use PLAIN"),
		"`sasl[].mechanism: REDPANDA_CLOUD_SERVICE_ACCOUNT`": rejected(minimal+"sasl: [ { mechanism: REDPANDA_CLOUD_SERVICE_ACCOUNT } ]\n",
			"sasl[0].mechanism: REDPANDA_CLOUD_SERVICE_ACCOUNT is not built into this input: use PLAIN"),
		"`sasl[].username`": same(func(t *testing.T, _ *service.ParsedConfig, c *config) {
			require.Equal(t, "plain-user", c.sasl[1].Username)
		}),
		"`sasl[].password`": same(func(t *testing.T, _ *service.ParsedConfig, c *config) {
			require.Equal(t, "scram-password", c.sasl[3].Password)
		}),
		"`sasl[].token`": same(func(t *testing.T, _ *service.ParsedConfig, c *config) {
			require.Equal(t, "bearer-token", c.sasl[4].Token)
		}),
		"`sasl[].extensions`": same(func(t *testing.T, _ *service.ParsedConfig, c *config) {
			require.Equal(t, map[string]string{"traceability": "yes-please"}, c.sasl[4].Extensions)
		}),
		"`sasl[].aws.*`": rejected(minimal+"sasl: [ { mechanism: PLAIN, username: u, aws: { region: eu-west-1 } } ]\n",
			"sasl[0].aws: AWS_MSK_IAM is not built into this input"),
		"`metadata_max_age`": {outcome: "own default", mentions: "`5m`", check: func(t *testing.T, _ *service.ParsedConfig, c *config) {
			require.Equal(t, 30*time.Second, c.metadataMaxAge)
		}},
		"`request_timeout_overhead`": same(func(t *testing.T, _ *service.ParsedConfig, c *config) {
			require.Equal(t, 5*time.Second, c.requestTimeoutOverhead)
		}),
		"`conn_idle_timeout`": same(func(t *testing.T, _ *service.ParsedConfig, c *config) {
			require.Equal(t, 30*time.Second, c.connIdleTimeout)
		}),
		"`tcp.connect_timeout`": same(func(t *testing.T, _ *service.ParsedConfig, c *config) {
			require.NotNil(t, c.dialer)
			require.Equal(t, 5*time.Second, c.dialer.Timeout)
		}),
		"`tcp.keep_alive.idle`": same(func(t *testing.T, _ *service.ParsedConfig, c *config) {
			require.True(t, c.dialer.KeepAliveConfig.Enable)
			require.Equal(t, 20*time.Second, c.dialer.KeepAliveConfig.Idle)
		}),
		"`tcp.keep_alive.interval`": same(func(t *testing.T, _ *service.ParsedConfig, c *config) {
			require.Equal(t, 10*time.Second, c.dialer.KeepAliveConfig.Interval)
		}),
		"`tcp.keep_alive.count`": same(func(t *testing.T, _ *service.ParsedConfig, c *config) {
			require.Equal(t, 5, c.dialer.KeepAliveConfig.Count)
		}),
		"`tcp.tcp_user_timeout`": same(func(t *testing.T, pc *service.ParsedConfig, c *config) {
			d, err := pc.FieldDuration(fieldTCP, "tcp_user_timeout")
			require.NoError(t, err)
			require.Equal(t, 10*time.Second, d)
			require.NotNil(t, c.dialer.ControlContext, "the socket option is set by the dialer's control function")
		}),
		"`topics`": same(func(t *testing.T, _ *service.ParsedConfig, c *config) {
			require.Equal(t, []string{"orders", "payments", "re.*"}, c.topics)
		}),
		"`topics: foo:0-10`": rejected("topics: [ \"foo:0-10\" ]\nconsumer_group: g\n",
			"names explicit partitions; this input is a group consumer: use consumer_group and let the group assign partitions"),
		"`regexp_topics`": same(func(t *testing.T, _ *service.ParsedConfig, c *config) { require.True(t, c.regexpTopics) }),
		"`regexp_topics_include`": {outcome: "same", variant: "regexp_topics_include: [ \"logs_.*, metrics_.*\" ]\nregexp_topics_exclude: [ _internal$ ]\nconsumer_group: g\n",
			check: func(t *testing.T, _ *service.ParsedConfig, c *config) {
				require.Equal(t, []string{"logs_.*", "metrics_.*"}, c.topics)
				require.True(t, c.regexpTopics, "regexp_topics_include turns regular expression mode on")
			}},
		"`regexp_topics_exclude`": same(func(t *testing.T, _ *service.ParsedConfig, c *config) {
			require.Equal(t, []string{"^payments$"}, c.regexpExclude)
		}),
		"`rack_id`":     same(func(t *testing.T, _ *service.ParsedConfig, c *config) { require.Equal(t, "rack-1", c.rackID) }),
		"`instance_id`": same(func(t *testing.T, _ *service.ParsedConfig, c *config) { require.Equal(t, "instance-1", c.instanceID) }),
		"`rebalance_timeout`": same(func(t *testing.T, _ *service.ParsedConfig, c *config) {
			require.Equal(t, 50*time.Second, c.rebalanceTimeout)
		}),
		"`session_timeout`": same(func(t *testing.T, _ *service.ParsedConfig, c *config) {
			require.Equal(t, 30*time.Second, c.sessionTimeout)
		}),
		"`heartbeat_interval`": same(func(t *testing.T, _ *service.ParsedConfig, c *config) { require.Equal(t, 2*time.Second, c.heartbeat) }),
		"`start_from_oldest`": same(func(t *testing.T, _ *service.ParsedConfig, c *config) {
			require.True(t, c.redpanda.startFromOldest)
			require.Equal(t, startLatest, c.startOffset, "start_offset decides")
		}),
		"`start_from_oldest: false` with `start_offset: earliest`": rejected(minimal+"start_from_oldest: false\n",
			"start_from_oldest: false contradicts start_offset: earliest, as in the redpanda input: use start_offset: latest"),
		"`start_offset`": same(func(t *testing.T, _ *service.ParsedConfig, c *config) { require.Equal(t, startLatest, c.startOffset) }),
		"`fetch_max_bytes`": {outcome: "own default", mentions: "`16MiB`", check: func(t *testing.T, _ *service.ParsedConfig, c *config) {
			require.Equal(t, int64(10_000_000), c.fetchMaxBytes)
		}},
		"`fetch_max_wait`":  same(func(t *testing.T, _ *service.ParsedConfig, c *config) { require.Equal(t, time.Second, c.fetchMaxWait) }),
		"`fetch_min_bytes`": same(func(t *testing.T, _ *service.ParsedConfig, c *config) { require.Equal(t, int64(1000), c.fetchMinBytes) }),
		"`fetch_max_partition_bytes`": same(func(t *testing.T, _ *service.ParsedConfig, c *config) {
			require.Equal(t, int64(2<<20), c.fetchMaxPartitionBytes)
		}),
		"`transaction_isolation_level`": same(func(t *testing.T, _ *service.ParsedConfig, c *config) {
			require.True(t, c.readCommitted)
		}),
		"`consumer_group`": same(func(t *testing.T, _ *service.ParsedConfig, c *config) { require.Equal(t, "orders-group", c.group) }),
		"`consumer_group: \"\"` or omitted": rejected("topics: [ orders ]\nconsumer_group: \"\"\n",
			"consumer_group: a group name is required: this input is a group consumer"),
		"`commit_period`": {outcome: "own default", mentions: "`1s`", check: func(t *testing.T, _ *service.ParsedConfig, c *config) {
			require.Equal(t, 2*time.Second, c.commitPeriod)
		}},
		"`partition_buffer_bytes`": rejected(minimal+"partition_buffer_bytes: 1MB\n",
			"partition_buffer_bytes: the per-partition bound here is max_pending_batches batches handed out, plus fewer than 8 batches fetched and not handed out yet and one fetch (fetch_max_partition_bytes), each batch at most batch_max_bytes"),
		"`topic_lag_refresh_period`": same(func(t *testing.T, _ *service.ParsedConfig, c *config) {
			require.Equal(t, 10*time.Second, c.topicLagRefresh)
		}),
		"`max_yield_batch_bytes`": {outcome: "mapped", mentions: "`batch_max_bytes`", check: func(t *testing.T, _ *service.ParsedConfig, c *config) {
			require.Equal(t, int64(32_000), c.batchMaxBytes)
		}},
		"`unordered_processing.enabled`": {outcome: "mapped", mentions: "contiguous delivered watermark", check: func(t *testing.T, pc *service.ParsedConfig, _ *config) {
			on, err := pc.FieldBool(fieldUnordered, fieldUnorderedEnabled)
			require.NoError(t, err)
			require.True(t, on)
		}},
		"`unordered_processing.checkpoint_limit`": {outcome: "mapped", mentions: "`max_pending_batches`", check: func(t *testing.T, _ *service.ParsedConfig, c *config) {
			require.Equal(t, 256, c.maxPending)
		}},
		"`unordered_processing.batching`": rejected(minimal+"unordered_processing: { batching: { count: 10 } }\n",
			"unordered_processing.batching: batches here are cut by batch_max_records and batch_max_bytes"),
		"`auto_replay_nacks: true`": {outcome: "mapped", mentions: "`nack_retry.max_retries: -1`", check: func(t *testing.T, _ *service.ParsedConfig, c *config) {
			require.Equal(t, -1, c.nackRetries)
		}},
		"`auto_replay_nacks: false`": rejected(minimal+"auto_replay_nacks: false\n",
			"auto_replay_nacks: false commits past failed data in the redpanda input; this input never does: remove it; to move past failures you do not want to retry forever, set dead_letter.topic: they are written there after dead_letter.max_attempts deliveries (config/dead-letter.yaml)"),
		"`timely_nacks_maximum_wait`": same(func(t *testing.T, pc *service.ParsedConfig, _ *config) {
			d, err := pc.FieldDuration(fieldTimelyNacks)
			require.NoError(t, err)
			require.Equal(t, 30*time.Second, d)
		}),
		"`extract_tracing_map`": same(func(t *testing.T, pc *service.ParsedConfig, _ *config) {
			m, err := pc.FieldString(fieldExtractTracing)
			require.NoError(t, err)
			require.Equal(t, "root = @", m)
		}),
	}
}

// TestRedpandaFields is the promise "rename the input and keep your
// pipeline": a config written for Redpanda Connect's redpanda input that
// sets every one of its fields lints clean once renamed, every field has the
// outcome the README's upgrade table gives it, and each rejection names the
// field and what to use instead, at lint and at start alike.
func TestRedpandaFields(t *testing.T) {
	env := service.NewEnvironment()
	require.NoError(t, Register(env))
	table := readmeRedpandaTable(t)
	cases := redpandaCases()
	for key := range cases {
		require.Contains(t, table, key, "the README's upgrade table lacks a row the test checks")
	}
	for key := range table {
		require.Contains(t, cases, key, "the README's upgrade table has a row the test does not check")
	}

	every := everyRedpandaField(t)
	require.Empty(t, lintFields(t, env, every), "the every-field config lints clean")
	everyPC, everyConf, err := parseFields(t, every)
	require.NoError(t, err)

	for key, tc := range cases {
		t.Run(key, func(t *testing.T) {
			row := table[key]
			require.Equal(t, tc.outcome, row.outcome, "README outcome of %s", key)
			require.Contains(t, row.here, tc.mentions, "README row %s", key)
			if tc.outcome == "rejected" {
				lints := lintFields(t, env, variantBase+tc.variant)
				require.True(t, containsAny(lints, tc.want), "lint of\n%s\n= %q, want a lint containing %q", tc.variant, lints, tc.want)
				_, _, err := parseFields(t, variantBase+tc.variant)
				require.Error(t, err, "validate accepts\n%s", tc.variant)
				require.Contains(t, err.Error(), tc.want)
				return
			}
			pc, c := everyPC, everyConf
			if tc.variant != "" {
				require.Empty(t, lintFields(t, env, variantBase+tc.variant))
				var err error
				pc, c, err = parseFields(t, variantBase+tc.variant)
				require.NoError(t, err)
			}
			tc.check(t, pc, c)
		})
	}

	// The every-field config builds a kgo client: TLS and the tcp block
	// together (kgo refuses its own DialTLSConfig with a Dialer), the
	// skipped sasl entry, every option in range. The wrappers are in place.
	in := newInput(everyConf, service.MockResources())
	cl, err := kgo.NewClient(in.clientOpts(engine.New(everyConf.engine(), in.log, in.m))...)
	require.NoError(t, err)
	cl.Close()
	bi, err := newInputFromConfig(everyPC, service.MockResources())
	require.NoError(t, err)
	_, bare := bi.(*Input)
	require.False(t, bare, "timely_nacks_maximum_wait and extract_tracing_map wrap the input")
}

func containsAny(list []string, want string) bool {
	for _, s := range list {
		if strings.Contains(s, want) {
			return true
		}
	}
	return false
}

// Beyond the table: what a mapped field does when its equivalent is set too,
// the value-dependent outcomes, and the checks that only the parsed values
// show. Each config is linted and parsed; both must agree.
func TestRedpandaFieldCombinations(t *testing.T) {
	env := service.NewEnvironment()
	require.NoError(t, Register(env))
	const minimal = "topics: [ orders ]\nconsumer_group: g\n"
	for _, tc := range []struct {
		name, fields string
		lint         string // "" accepted by lint; lint runs what start runs, so only "" or parse's message
		parse        string // "" accepted by validate
	}{
		{"auto_replay_nacks true with max_retries 3", minimal + "auto_replay_nacks: true\nnack_retry: { max_retries: 3 }\n",
			"auto_replay_nacks: true is nack_retry.max_retries: -1 here, which contradicts the nack_retry.max_retries set: set only one of them (nack_retry.max_retries: 3)",
			"auto_replay_nacks: true is nack_retry.max_retries: -1 here, which contradicts the nack_retry.max_retries set: set only one of them (nack_retry.max_retries: 3)"},
		// Benthos fills defaults in before lint and parse: an explicit 0 is
		// the default 0, which the mapping replaces.
		{"auto_replay_nacks true with max_retries 0", minimal + "auto_replay_nacks: true\nnack_retry: { max_retries: 0 }\n", "", ""},
		{"auto_replay_nacks true with max_retries -1", minimal + "auto_replay_nacks: true\nnack_retry: { max_retries: -1 }\n", "", ""},
		{"max_yield_batch_bytes with batch_max_bytes", minimal + "max_yield_batch_bytes: 32KB\nbatch_max_bytes: 64KB\n",
			"max_yield_batch_bytes: this is batch_max_bytes here, which is set too", "max_yield_batch_bytes: this is batch_max_bytes here, which is set too"},
		{"max_yield_batch_bytes with the same batch_max_bytes", minimal + "max_yield_batch_bytes: 32KB\nbatch_max_bytes: 32KB\n",
			"max_yield_batch_bytes: this is batch_max_bytes here, which is set too", "max_yield_batch_bytes: this is batch_max_bytes here, which is set too"},
		{"max_yield_batch_bytes zero", minimal + "max_yield_batch_bytes: 0B\n", "max_yield_batch_bytes (0) must be between 1 and", "max_yield_batch_bytes (0) must be between 1 and"},
		{"checkpoint_limit with max_pending_batches", minimal + "unordered_processing: { checkpoint_limit: 10 }\nmax_pending_batches: 20\n",
			"unordered_processing.checkpoint_limit: this is max_pending_batches here (counted in batches, not messages), which is set too",
			"unordered_processing.checkpoint_limit: this is max_pending_batches here (counted in batches, not messages), which is set too"},
		{"unordered_processing disabled", minimal + "unordered_processing: { enabled: false }\n", "", ""},
		{"no-op batching", minimal + "unordered_processing: { batching: { count: 1 } }\n", "", ""},
		{"batching by period", minimal + "unordered_processing: { batching: { period: 1s } }\n",
			"unordered_processing.batching: batches here", "unordered_processing.batching: batches here"},
		{"start_from_oldest false with latest", minimal + "start_from_oldest: false\nstart_offset: latest\n", "", ""},
		{"start_from_oldest false with committed", minimal + "start_from_oldest: false\nstart_offset: committed\n", "", ""},
		{"include with topics", minimal + "regexp_topics_include: [ a.* ]\n",
			"regexp_topics_include: cannot be used together with topics", "regexp_topics_include: cannot be used together with topics"},
		{"include with regexp_topics", "consumer_group: g\nregexp_topics: true\nregexp_topics_include: [ a.* ]\n", "", ""},
		{"exclude without regex mode", minimal + "regexp_topics_exclude: [ a.* ]\n",
			"regexp_topics_exclude: needs regular expression mode", "regexp_topics_exclude: needs regular expression mode"},
		{"no topics at all", "consumer_group: g\n", "topics: at least one topic is required (or regexp_topics_include patterns)",
			"topics: at least one topic is required (or regexp_topics_include patterns)"},
		{"bad include pattern", "consumer_group: g\nregexp_topics_include: [ \"(\" ]\n", `regexp_topics_include: "(" is not a valid regular expression`, `regexp_topics_include: "(" is not a valid regular expression`},
		{"bad exclude pattern", minimal + "regexp_topics: true\nregexp_topics_exclude: [ \"(\" ]\n", `regexp_topics_exclude: "(" is not a valid regular expression`, `regexp_topics_exclude: "(" is not a valid regular expression`},
		{"explicit partition and offset", "topics: [ \"a, foo:0:10\" ]\nconsumer_group: g\n", `"foo:0:10" names explicit partitions`, `"foo:0:10" names explicit partitions`},
		{"fetch_min_bytes zero", minimal + "fetch_min_bytes: 0B\n", "fetch_min_bytes (0) must be between 1 and 2147483647 bytes", "fetch_min_bytes (0) must be between 1 and 2147483647 bytes"},
		{"request overhead too small", minimal + "request_timeout_overhead: 10ms\n", "request_timeout_overhead (10ms) must be between 100ms and 15m", "request_timeout_overhead (10ms) must be between 100ms and 15m"},
		{"idle timeout too large", minimal + "conn_idle_timeout: 1h\n", "conn_idle_timeout (1h0m0s) must be between 100ms and 15m", "conn_idle_timeout (1h0m0s) must be between 100ms and 15m"},
		{"tcp user timeout above keep-alive idle", minimal + "tcp: { tcp_user_timeout: 30s, keep_alive: { idle: 10s } }\n", "tcp: keep_alive.idle (10s) must be greater than tcp_user_timeout (30s)",
			"tcp: keep_alive.idle (10s) must be greater than tcp_user_timeout (30s)"},
		{"tcp user timeout without keep-alive", minimal + "tcp: { tcp_user_timeout: 30s }\n", "tcp: keep_alive.idle (15s) must be greater than tcp_user_timeout (30s)",
			"tcp: keep_alive.idle (15s) must be greater than tcp_user_timeout (30s)"},
		// Benthos lints the mapping itself, at its line.
		{"bad tracing mapping", minimal + "extract_tracing_map: root = (\n", "expected query", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lints := lintFields(t, env, variantBase+tc.fields)
			if tc.lint == "" {
				require.Empty(t, lints)
			} else {
				require.True(t, containsAny(lints, tc.lint), "lint = %q, want a lint containing %q", lints, tc.lint)
			}
			if strings.HasPrefix(tc.name, "bad tracing") {
				return // a lint error only: ParseYAML would not get that far either
			}
			_, _, err := parseFields(t, variantBase+tc.fields)
			if tc.parse == "" {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				require.Contains(t, err.Error(), tc.parse)
			}
		})
	}
}

// kgo refuses a Dialer together with DialTLSConfig: with TLS and a tcp
// block the input dials TLS itself on the tcp dialer, and the client
// options are valid. kafkaconn's TestTLSDialServerName checks the
// handshake over that dialer.
func TestTLSWithTCPBuildsAClient(t *testing.T) {
	fields := variantBase + "topics: [ orders ]\nconsumer_group: g\ntls: { enabled: true }\ntcp: { connect_timeout: 5s, keep_alive: { idle: 10s } }\n"
	_, c, err := parseFields(t, fields)
	require.NoError(t, err)
	require.NotNil(t, c.tls)
	require.NotNil(t, c.dialer)
	in := newInput(c, service.MockResources())
	cl, err := kgo.NewClient(in.clientOpts(engine.New(c.engine(), in.log, in.m))...)
	require.NoError(t, err, "kgo accepts the options")
	cl.Close()
}
