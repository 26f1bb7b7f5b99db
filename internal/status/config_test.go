package status

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermark-connect/watermark-connect/internal/kafkaconn"
	"github.com/watermark-connect/watermark-connect/plugin"
)

// writeConfig writes a config file for the test and returns its path.
func writeConfig(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "pipeline.yaml")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// The field names status reads are the input's: a name the spec does not
// know would be a lint error. (kafkaconn's TestParseEveryField holds the
// connection's names, which kafkaconn reads, to the spec.)
func TestConfigFieldsExist(t *testing.T) {
	yaml := strings.Join([]string{
		fieldSeedBrokers + ": [ x ]",
		fieldTopics + ": [ t ]",
		fieldRegexpTopics + ": false",
		fieldConsumerGroup + ": g",
	}, "\n    ")
	lints, err := service.GlobalEnvironment().NewComponentConfigLinter().LintYAML("input", []byte(plugin.InputName+":\n    "+yaml+"\n"))
	require.NoError(t, err)
	assert.Empty(t, lints)
}

func TestLoadConfig(t *testing.T) {
	path := writeConfig(t, `
input:
  label: orders_in
  kafka_watermark:
    seed_brokers: [ "${HOST}:9092", "kafka-1:9092, kafka-2:9092" ]
    topics: [ "${TOPIC:orders}" ]
    consumer_group: orders-to-http
    tls:
      enabled: true
      skip_cert_verify: true
    sasl:
      - mechanism: SCRAM-SHA-512
        username: svc
        password: "${PASSWORD}"
      - mechanism: OAUTHBEARER
        token: literal-token
pipeline:
  processors:
    - mapping: 'root = content().uppercase()'
output:
  drop: {}
`)
	tg, err := LoadConfig(path, lookupTest, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"kafka-0:9092", "kafka-1:9092", "kafka-2:9092"}, tg.Conn.SeedBrokers, "seed_brokers entries split on commas")
	assert.Equal(t, []string{"orders"}, tg.Topics)
	assert.False(t, tg.RegexpTopics)
	assert.Equal(t, "orders-to-http", tg.Group)
	assert.Equal(t, "watermark-connect", tg.Conn.ClientID, "the input's default client_id")
	if assert.NotNil(t, tg.Conn.TLS) {
		assert.True(t, tg.Conn.TLS.InsecureSkipVerify)
	}
	assert.Equal(t, []kafkaconn.SASL{
		{Mechanism: "SCRAM-SHA-512", Username: "svc", Password: testEnv["PASSWORD"]},
		{Mechanism: "OAUTHBEARER", Token: "literal-token"},
	}, tg.Conn.SASL)
	assert.Equal(t, " with TLS and SASL SCRAM-SHA-512 and SASL OAUTHBEARER", tg.security())
	assert.ElementsMatch(t, []string{testEnv["PASSWORD"], "", "", "literal-token"}, tg.Secrets())
}

// The input is found wherever a component may sit, as Benthos walks the
// config.
func TestLoadConfigNestedInput(t *testing.T) {
	path := writeConfig(t, `
input:
  broker:
    inputs:
      - generate:
          mapping: 'root = "x"'
      - kafka_watermark:
          seed_brokers: [ k:9092 ]
          topics: [ "a.*" ]
          regexp_topics: true
          consumer_group: nested
          client_id: status-test
output:
  drop: {}
`)
	tg, err := LoadConfig(path, lookupTest, nil)
	require.NoError(t, err)
	require.NotNil(t, tg.Conn.Dialer, "the tcp block's defaults")
	tg.Conn.Dialer = nil
	assert.Equal(t, Target{
		Conn: kafkaconn.Config{
			SeedBrokers: []string{"k:9092"}, ClientID: "status-test",
			// The input's defaults.
			SessionTimeout: time.Minute, MetadataMaxAge: 5 * time.Minute,
			RequestTimeoutOverhead: 10 * time.Second, ConnIdleTimeout: 20 * time.Second,
		},
		Topics: []string{"a.*"}, RegexpTopics: true, Group: "nested",
	}, tg)
}

func TestLoadConfigErrors(t *testing.T) {
	const input = `
input:
  kafka_watermark:
    seed_brokers: [ k:9092 ]
    topics: [ t ]
%s
    sasl:
      - mechanism: %s
        username: u
        password: "${PASSWORD}"
`
	conf := func(fields, mechanism string) string {
		return strings.Replace(strings.Replace(input, "%s", fields, 1), "%s", mechanism, 1)
	}
	for _, tc := range []struct {
		name, yaml string
		want       []string // parts of the message
		is         any      // an error type errors.As must find, or nil
	}{
		{"no input", "input:\n  generate:\n    mapping: 'root = 1'\noutput:\n  drop: {}\n",
			[]string{"pipeline.yaml: no kafka_watermark input in the config"}, nil},
		{"two inputs", `
input:
  broker:
    inputs:
      - kafka_watermark: { seed_brokers: [ a ], topics: [ t ], consumer_group: g1 }
      - kafka_watermark: { seed_brokers: [ b ], topics: [ t ], consumer_group: g2 }
`, []string{"2 kafka_watermark inputs (input.broker.inputs.0 (line 5), input.broker.inputs.1 (line 6)): one is read"}, nil},
		{"an unset variable", conf("    consumer_group: ${GROUP_NAME}", "PLAIN"),
			[]string{"pipeline.yaml: required environment variables were not set: GROUP_NAME"}, new(*MissingEnvError)},
		{"a misspelt field", conf("    consumer_grup: g", "PLAIN"),
			[]string{"pipeline.yaml: input (line 3)", "field consumer_grup not recognised", "consumer_group"}, nil},
		{"a bad mechanism", conf("    consumer_group: g", "SCRAM-SHA-1"),
			[]string{"pipeline.yaml: input (line 3)", "SCRAM-SHA-1"}, nil},
		{"not YAML", "input: [ {", []string{"pipeline.yaml"}, nil},
	} {
		_, err := LoadConfig(writeConfig(t, tc.yaml), lookupTest, nil)
		if !assert.Error(t, err, tc.name) {
			continue
		}
		for _, w := range tc.want {
			assert.Contains(t, err.Error(), w, tc.name)
		}
		if tc.is != nil {
			assert.True(t, errors.As(err, tc.is), "%s: error %v, want a %T", tc.name, err, tc.is)
		}
		assert.NotContains(t, err.Error(), testEnv["PASSWORD"], "%s: the error holds the password", tc.name)
	}

	_, err := LoadConfig(filepath.Join(t.TempDir(), "missing.yaml"), lookupTest, nil)
	assert.ErrorIs(t, err, os.ErrNotExist)
}
