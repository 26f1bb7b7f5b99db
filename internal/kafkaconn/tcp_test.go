package kafkaconn_test

import (
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"

	"github.com/watermark-connect/watermark-connect/internal/kafkaconn"
	"github.com/watermark-connect/watermark-connect/plugin"
)

// parseFields parses kafka_watermark fields with the input's spec, without
// linting, as the input's constructor and status see them, and reads the
// connection from them. A seed broker is added unless the fields name some.
func parseFields(t *testing.T, fields string) (*service.ParsedConfig, kafkaconn.Config, error) {
	t.Helper()
	if !strings.Contains(fields, "seed_brokers:") {
		fields = "seed_brokers: [ \"127.0.0.1:1\" ]\n" + fields
	}
	pc, err := plugin.ConfigSpec().ParseYAML(fields, nil)
	require.NoError(t, err, "fields:\n%s", fields)
	c, err := kafkaconn.Parse(pc)
	return pc, c, err
}

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
			pc, c, err := parseFields(t, tc.fields)
			require.NoError(t, err)
			require.True(t, pc.Contains("tcp"), "Benthos fills the tcp block in")
			require.NotNil(t, c.Dialer)
			require.Equal(t, tc.timeout, c.Dialer.Timeout)
			require.Equal(t, tc.keepAlive, c.Dialer.KeepAliveConfig)
			require.Zero(t, c.Dialer.KeepAlive)
			require.Nil(t, c.Dialer.ControlContext, "no tcp_user_timeout, no control function")
		})
	}

	// A negative connect_timeout would fail every dial at once (a net.Dialer
	// reads it as a deadline already past): a config error, at start.
	_, _, err := parseFields(t, minimal+"tcp: { connect_timeout: -1s }\n")
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

	_, c, err := parseFields(t, minimal+"tcp: { keep_alive: { idle: -1s } }\n")
	require.NoError(t, err)
	require.False(t, c.Dialer.KeepAliveConfig.Enable)
	require.Negative(t, c.Dialer.KeepAlive)
	require.Zero(t, soKeepAlive(t, c.Dialer), "keep_alive.idle: -1s leaves SO_KEEPALIVE off")

	_, c, err = parseFields(t, minimal)
	require.NoError(t, err)
	require.NotZero(t, soKeepAlive(t, c.Dialer), "by default SO_KEEPALIVE is on")

	// Keep-alive off with tcp_user_timeout set stays netutil's config error.
	_, _, err = parseFields(t, minimal+"tcp: { tcp_user_timeout: 5s, keep_alive: { idle: -1s } }\n")
	require.Error(t, err)
	require.Contains(t, err.Error(), "tcp: keep_alive.idle (-1s) must be greater than tcp_user_timeout (5s)")
}
