package plugin

import (
	"fmt"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"
)

// The rules across components, on whole configs as `run` parses them.
func TestCheckExactlyOnce(t *testing.T) {
	env := service.NewEnvironment()
	require.NoError(t, Register(env))
	const input = `
input:
  kafka_watermark:
    seed_brokers: [ "127.0.0.1:1" ]
    topics: [ orders ]
    consumer_group: enrich
    exactly_once: %s
`
	bound := func(group string) string {
		return "kafka_watermark: { seed_brokers: [ \"127.0.0.1:1\" ], topic: out, exactly_once: { consumer_group: " + group + " } }"
	}
	// The same shape run hands CheckExactlyOnceConfig: the main config,
	// its top-level fields read as they are written.
	spec := service.NewConfigSpec().Fields(
		service.NewAnyField("input").Optional(), service.NewAnyField("output").Optional(),
		service.NewAnyListField("input_resources").Optional(), service.NewAnyListField("output_resources").Optional())
	check := func(conf string) error {
		t.Helper()
		b := env.NewStreamBuilder()
		require.NoError(t, b.SetYAML(conf), "a config Benthos takes")
		pc, err := spec.ParseYAML(conf, nil)
		require.NoError(t, err)
		return CheckExactlyOnceConfig(pc)
	}
	for _, tc := range []struct {
		name, conf, want string
	}{
		{"bound to the input's group", fmt.Sprintf(input, "true") + "output:\n  " + bound("enrich") + "\n", ""},
		{"no exactly-once input", fmt.Sprintf(input, "false") + "output:\n  " + bound("enrich") + "\n",
			`bound to consumer_group "enrich" (exactly_once.consumer_group), but no kafka_watermark input of this config consumes that group with exactly_once: true`},
		{"another group", fmt.Sprintf(input, "true") + "output:\n  " + bound("other") + "\n", `bound to consumer_group "other"`},
		{"two bound outputs", fmt.Sprintf(input, "true") + "output:\n  switch:\n    cases:\n      - output: { " + bound("enrich") + " }\n      - output: { " + bound("enrich") + " }\n",
			`2 kafka_watermark outputs are bound to consumer_group "enrich"`},
		{"fan_out broker", fmt.Sprintf(input, "true") + "output:\n  broker:\n    outputs:\n      - " + bound("enrich") + "\n      - drop: {}\n",
			`is in a broker with pattern fan_out beside 1 other output(s)`},
		{"round_robin broker", fmt.Sprintf(input, "true") + "output:\n  broker:\n    pattern: round_robin\n    outputs:\n      - " + bound("enrich") + "\n      - drop: {}\n", ""},
		{"switch with drop", fmt.Sprintf(input, "true") + "output:\n  switch:\n    cases:\n      - check: this.ok\n        output: { " + bound("enrich") + " }\n      - output: { drop: {} }\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := check(tc.conf)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}
