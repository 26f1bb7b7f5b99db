package dlcmd

import (
	"fmt"
	"testing"

	_ "github.com/redpanda-data/benthos/v4/public/components/pure" // the lint's Bloblang functions, as in the binary
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermark-connect/watermark-connect/internal/status"
)

func TestDeadLetterTopic(t *testing.T) {
	in := func(topic any) status.Input {
		return status.Input{Where: "c.yaml: input (line 2)", Fields: map[string]any{fieldDeadLetter: map[string]any{fieldDeadLetterTopic: topic}}}
	}
	for _, tc := range []struct {
		name       string
		flag       string
		in         status.Input
		fromConfig bool
		want       string
		err        string
	}{
		{"flag only", "dlq", status.Input{}, false, "dlq", ""},
		{"flag overrides the config", "dlq", in("other"), true, "dlq", ""},
		{"static in the config", "", in("orders.dlq"), true, "orders.dlq", ""},
		{"interpolated in the config", "", in(`${! meta("kafka_topic") }.dlq`), true, "",
			`c.yaml: input (line 2): dead_letter.topic ("${! meta(\"kafka_topic\") }.dlq") is interpolated per message, so it names no one topic: give the topic with --dead-letter-topic`},
		{"none in the config", "", status.Input{Where: "c.yaml: input (line 2)"}, true, "",
			"c.yaml: input (line 2): no dead_letter.topic: give the topic with --dead-letter-topic"},
		{"not a string", "", in(7), true, "", "no dead_letter.topic"},
		{"neither", "", status.Input{}, false, "", "--dead-letter-topic is required (or -c with a kafka_watermark input whose dead_letter.topic is static)"},
	} {
		got, err := deadLetterTopic(tc.flag, tc.in, tc.fromConfig)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, got, "%s: deadLetterTopic = got, want", tc.name)
	}
}

func TestConfigTopic(t *testing.T) {
	c := seed(t)
	conf := func(extra string) string {
		return fmt.Sprintf("input:\n  kafka_watermark:\n    seed_brokers: [ %s ]\n    topics: [ orders ]\n    consumer_group: g\n%s", c.addr, extra)
	}

	// A config without dead_letter gives the connection; the topic is the
	// flag's, and without the flag the error says where to put it.
	code, stdout, stderr := runCLI(t, "inspect", "-c", writeConfig(t, conf("")), "--dead-letter-topic", "orders.dlq", "--format", "json")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stdout, `"dead_letter_topic": "orders.dlq"`)
	code, _, stderr = runCLI(t, "inspect", "-c", writeConfig(t, conf("")))
	assert.Equal(t, ExitFailed, code)
	assert.Contains(t, stderr, "config.yaml: input (line 2): no dead_letter.topic: give the topic with --dead-letter-topic")

	code, stdout, stderr = runCLI(t, "inspect", "-c", writeConfig(t, conf("    dead_letter:\n      topic: orders.dlq\n")), "--format", "json")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stdout, `"dead_letter_topic": "orders.dlq"`)
	code, _, stderr = runCLI(t, "inspect", "-c", writeConfig(t, conf("    dead_letter:\n      topic: '${! @kafka_topic }.dlq'\n")))
	assert.Equal(t, ExitFailed, code)
	assert.Contains(t, stderr, "is interpolated per message, so it names no one topic: give the topic with --dead-letter-topic")
}
