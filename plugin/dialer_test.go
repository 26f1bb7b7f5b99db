package plugin

import (
	"encoding/json"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/redpanda-data/benthos/v4/public/utils/netutil"
	"github.com/stretchr/testify/require"

	"github.com/watermark-connect/watermark-connect/internal/kafkaconn"
)

// Benthos fills the tcp block in with its defaults when a config leaves it
// out, so the input always dials over the block's dialer, never over kgo's
// own: a connect_timeout of 0s must still be kgo's 10s, or a dial of a host
// that drops SYNs waits for the OS (minutes on Linux). Keep-alive is as
// netutil decorates the dialer.
func TestTCPDialerTimeout(t *testing.T) {
	const minimal = "topics: [ orders ]\nconsumer_group: g\n"
	defaultKeepAlive := net.KeepAliveConfig{Enable: true, Idle: 15 * time.Second, Interval: 15 * time.Second, Count: 9}
	for _, tc := range []struct {
		name, fields string
		timeout      time.Duration
		keepAlive    net.KeepAliveConfig
	}{
		{"no tcp block", minimal, kafkaconn.DefaultDialTimeout, defaultKeepAlive},
		{"empty tcp block", minimal + "tcp: {}\n", kafkaconn.DefaultDialTimeout, defaultKeepAlive},
		{"connect_timeout 0s", minimal + "tcp: { connect_timeout: 0s }\n", kafkaconn.DefaultDialTimeout, defaultKeepAlive},
		{"connect_timeout 3s", minimal + "tcp: { connect_timeout: 3s }\n", 3 * time.Second, defaultKeepAlive},
		{"connect_timeout 30s", minimal + "tcp: { connect_timeout: 30s }\n", 30 * time.Second, defaultKeepAlive},
		{"keep_alive set", minimal + "tcp: { connect_timeout: 3s, keep_alive: { idle: 20s, interval: 5s, count: 4 } }\n",
			3 * time.Second, net.KeepAliveConfig{Enable: true, Idle: 20 * time.Second, Interval: 5 * time.Second, Count: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pc, c, err := parseFields(t, variantBase+tc.fields)
			require.NoError(t, err)
			require.True(t, pc.Contains(fieldTCP), "Benthos fills the tcp block in")
			require.NotNil(t, c.dialer)
			require.Equal(t, tc.timeout, c.dialer.Timeout)
			require.Equal(t, tc.keepAlive, c.dialer.KeepAliveConfig)
			require.Zero(t, c.dialer.KeepAlive)
			require.Nil(t, c.dialer.ControlContext, "no tcp_user_timeout, no control function")
		})
	}

	// A negative connect_timeout would fail every dial at once (a net.Dialer
	// reads it as a deadline already past): a config error, at start.
	_, _, err := parseFields(t, variantBase+minimal+"tcp: { connect_timeout: -1s }\n")
	require.Error(t, err)
	require.Contains(t, err.Error(), "tcp: connect_timeout (-1s) must not be negative: 0s is kgo's 10s")
}

// A negative keep_alive.idle turns keep-alive probes off, as the field says.
// netutil only clears KeepAliveConfig.Enable, which a net.Dialer whose
// KeepAlive is 0 reads as probes at Go's defaults: the socket is checked.
func TestTCPKeepAliveOff(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() })
		}
	}()
	soKeepAlive := func(t *testing.T, d *net.Dialer) int {
		t.Helper()
		conn, err := d.DialContext(t.Context(), "tcp", l.Addr().String())
		require.NoError(t, err)
		defer conn.Close()
		rc, err := conn.(*net.TCPConn).SyscallConn()
		require.NoError(t, err)
		v, serr := -1, error(nil)
		require.NoError(t, rc.Control(func(fd uintptr) {
			v, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_KEEPALIVE)
		}))
		require.NoError(t, serr)
		return v
	}
	const minimal = "topics: [ orders ]\nconsumer_group: g\n"

	_, c, err := parseFields(t, variantBase+minimal+"tcp: { keep_alive: { idle: -1s } }\n")
	require.NoError(t, err)
	require.False(t, c.dialer.KeepAliveConfig.Enable)
	require.Negative(t, c.dialer.KeepAlive)
	require.Zero(t, soKeepAlive(t, c.dialer), "keep_alive.idle: -1s leaves SO_KEEPALIVE off")

	_, c, err = parseFields(t, variantBase+minimal)
	require.NoError(t, err)
	require.NotZero(t, soKeepAlive(t, c.dialer), "by default SO_KEEPALIVE is on")

	// Keep-alive off with tcp_user_timeout set stays netutil's config error.
	_, _, err = parseFields(t, variantBase+minimal+"tcp: { tcp_user_timeout: 5s, keep_alive: { idle: -1s } }\n")
	require.Error(t, err)
	require.Contains(t, err.Error(), "tcp: keep_alive.idle (-1s) must be greater than tcp_user_timeout (5s)")
}

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
	require.Equal(t, tcpSpecJSON(t, netutil.DialerConfigSpec()), tcpSpecJSON(t, tcpFieldSpec()))

	// Parsed from either spec, netutil reads the same DialerConfig.
	ours := service.NewConfigSpec().Field(tcpFieldSpec())
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
