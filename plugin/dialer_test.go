package plugin

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/redpanda-data/benthos/v4/public/utils/netutil"
	"github.com/stretchr/testify/require"
)

// tcpSpecJSON is the tcp field of a spec holding only it, as FormatJSON
// spells it, without descriptions.
func tcpSpecJSON(t *testing.T, f *service.ConfigField) any {
	t.Helper()
	env := service.NewEmptyEnvironment()
	require.NoError(t, env.RegisterInput("tcp_only", service.NewConfigSpec().Field(f),
		func(*service.ParsedConfig, *service.Resources) (service.Input, error) {
			return nil, errors.New("not built")
		}))
	var raw []byte
	env.WalkInputs(func(_ string, v *service.ConfigView) {
		var err error
		raw, err = v.FormatJSON()
		require.NoError(t, err)
	})
	var spec struct {
		Config struct {
			Children []any `json:"children"`
		} `json:"config"`
	}
	require.NoError(t, json.Unmarshal(raw, &spec))
	require.Len(t, spec.Config.Children, 1)
	var strip func(v any) any
	strip = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			delete(v, "description")
			for k, e := range v {
				v[k] = strip(e)
			}
		case []any:
			for i, e := range v {
				v[i] = strip(e)
			}
		}
		return v
	}
	return strip(spec.Config.Children[0])
}

// The tcp block is declared here only for its descriptions: its names,
// types, kinds, defaults, nesting, optional and advanced flags are
// netutil.DialerConfigSpec's, so that netutil.DialerConfigFromParsed parses
// it, and a redpanda input's tcp block means the same here.
func TestTCPSpecMatchesNetutil(t *testing.T) {
	require.Equal(t, tcpSpecJSON(t, netutil.DialerConfigSpec()), tcpSpecJSON(t, tcpFieldSpec("input")))

	// Parsed from either spec, netutil reads the same DialerConfig.
	ours := service.NewConfigSpec().Field(tcpFieldSpec("input"))
	theirs := service.NewConfigSpec().Field(netutil.DialerConfigSpec())
	for _, yaml := range []string{
		"",
		"tcp: {}\n",
		"tcp: { connect_timeout: 3s }\n",
		"tcp: { keep_alive: { idle: -1s } }\n",
		"tcp: { connect_timeout: 5s, keep_alive: { idle: 20s, interval: 10s, count: 5 }, tcp_user_timeout: 10s }\n",
	} {
		parse := func(spec *service.ConfigSpec) netutil.DialerConfig {
			pc, err := spec.ParseYAML(yaml, nil)
			require.NoError(t, err, "%q", yaml)
			require.True(t, pc.Contains(fieldTCP), "%q", yaml)
			dc, err := netutil.DialerConfigFromParsed(pc.Namespace(fieldTCP))
			require.NoError(t, err, "%q", yaml)
			return dc
		}
		require.Equal(t, parse(theirs), parse(ours), "%q", yaml)
	}
}
