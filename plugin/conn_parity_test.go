package plugin_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/watermark-connect/watermark-connect/internal/status"
	"github.com/watermark-connect/watermark-connect/internal/testcert"
	"github.com/watermark-connect/watermark-connect/plugin"
)

// `watermark-connect status` used to connect its own way: its own SASL
// mapping, kgo's TLS dialer, no tcp block, no refused-dial handling. Both
// now build their connection with internal/kafkaconn. For one config with
// TLS, SASL and a tcp block, status's client (connected to a cluster that
// requires TLS and SCRAM-SHA-512) and the input's have the same seed
// brokers, client ID, SASL mechanisms, retries and timeouts, and their
// dialers behave alike: TLS over the tcp block's dialer with the broker's
// host as the server name, keep-alive as the block says, refused dials
// retriable.
func TestStatusConnectsAsTheInput(t *testing.T) {
	const user, password = "svc", "parity-hunter2"
	cert := testcert.New(t)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{cert.TLS}}),
		kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", user, password))
	require.NoError(t, err)
	t.Cleanup(cluster.Close)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(caFile, []byte(cert.CertPEM), 0o600))

	fields := fmt.Sprintf(`
seed_brokers: [ %q ]
topics: [ orders ]
consumer_group: parity
client_id: parity-client
tls: { enabled: true, root_cas_file: %q }
sasl:
  - { mechanism: none }
  - { mechanism: SCRAM-SHA-512, username: %s, password: "${KAFKA_PASSWORD}" }
  - { mechanism: OAUTHBEARER, token: a-token }
tcp: { connect_timeout: 3s, keep_alive: { idle: -1s } }
session_timeout: 2m
heartbeat_interval: 3s
metadata_max_age: 1m
request_timeout_overhead: 7s
conn_idle_timeout: 40s
`, cluster.ListenAddrs()[0], caFile, user)

	// status, from a config file, as `status -c` reads it.
	path := filepath.Join(t.TempDir(), "pipeline.yaml")
	require.NoError(t, os.WriteFile(path, []byte("input:\n  kafka_watermark:"+strings.ReplaceAll(fields, "\n", "\n    ")+"\noutput:\n  drop: {}\n"), 0o600))
	lookup := func(name string) (string, bool) {
		if name == "KAFKA_PASSWORD" {
			return password, true
		}
		return "", false
	}
	tg, err := status.LoadConfig(path, lookup, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	statusCl, err := status.NewClient(ctx, tg)
	require.NoError(t, err, "status connects with TLS and SCRAM-SHA-512")
	t.Cleanup(statusCl.Close)

	// The input, from the same fields, as its constructor parses them. Its
	// client is only built: it dials nothing here but its own seed.
	pc, err := plugin.ConfigSpec().ParseYAML(strings.ReplaceAll(fields, "${KAFKA_PASSWORD}", password), nil)
	require.NoError(t, err)
	opts, err := plugin.InputClientOpts(pc)
	require.NoError(t, err)
	inputCl, err := kgo.NewClient(opts...)
	require.NoError(t, err)
	t.Cleanup(inputCl.Close)

	// Equal, and the config's values, not both kgo's defaults.
	for _, o := range []struct {
		name string
		opt  any
		want any
	}{
		{"seed brokers", kgo.SeedBrokers, []string{cluster.ListenAddrs()[0]}},
		{"client ID", kgo.ClientID, "parity-client"},
		{"request retries", kgo.RequestRetries, int64(29)},
		{"metadata max age", kgo.MetadataMaxAge, time.Minute},
		{"metadata min age", kgo.MetadataMinAge, 5 * time.Second},
		{"request timeout overhead", kgo.RequestTimeoutOverhead, 7 * time.Second},
		{"conn idle timeout", kgo.ConnIdleTimeout, 40 * time.Second},
	} {
		require.Equal(t, o.want, inputCl.OptValue(o.opt), "input: %s", o.name)
		require.Equal(t, o.want, statusCl.OptValue(o.opt), "status: %s", o.name)
	}
	require.Equal(t, []string{"SCRAM-SHA-512", "OAUTHBEARER"}, mechanismNames(inputCl))
	require.Equal(t, mechanismNames(inputCl), mechanismNames(statusCl))
	inputRetry := inputCl.OptValue(kgo.RetryTimeoutFn).(func(int16) time.Duration)
	statusRetry := statusCl.OptValue(kgo.RetryTimeoutFn).(func(int16) time.Duration)
	for _, key := range []int16{
		(*kmsg.HeartbeatRequest)(nil).Key(), (*kmsg.LeaveGroupRequest)(nil).Key(),
		(*kmsg.ConsumerGroupHeartbeatRequest)(nil).Key(), (*kmsg.OffsetFetchRequest)(nil).Key(),
		(*kmsg.ListOffsetsRequest)(nil).Key(), (*kmsg.MetadataRequest)(nil).Key(),
	} {
		require.Equal(t, inputRetry(key), statusRetry(key), "retry budget of request key %d", key)
	}
	require.Equal(t, 2*time.Minute, statusRetry((*kmsg.HeartbeatRequest)(nil).Key()), "session_timeout is read")

	// The dialers. A TLS listener records the server name each handshake
	// asked for.
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert.TLS}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	names := make(chan string, 2)
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			tc := conn.(*tls.Conn)
			if tc.Handshake() == nil {
				names <- tc.ConnectionState().ServerName
			}
			_ = conn.Close()
		}
	}()
	_, port, err := net.SplitHostPort(l.Addr().String())
	require.NoError(t, err)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := closed.Addr().String()
	require.NoError(t, closed.Close())

	for name, cl := range map[string]*kgo.Client{"input": inputCl, "status": statusCl} {
		dial, ok := cl.OptValue(kgo.Dialer).(func(context.Context, string, string) (net.Conn, error))
		require.True(t, ok, "%s: a dialer of ours", name)

		conn, err := dial(ctx, "tcp", net.JoinHostPort("localhost", port))
		require.NoError(t, err, "%s: TLS, trusting the config's CA, for the broker's host", name)
		tc, ok := conn.(*tls.Conn)
		require.True(t, ok, "%s: a TLS connection, %T", name, conn)
		require.Zero(t, soKeepAlive(t, tc.NetConn()), "%s: keep_alive.idle: -1s leaves SO_KEEPALIVE off", name)
		_ = conn.Close()
		require.Equal(t, "localhost", <-names, "%s: the server name is the broker's host", name)

		_, err = dial(ctx, "tcp", refused)
		require.Error(t, err)
		require.True(t, kgo.IsRetryableBrokerErr(err), "%s: a refused dial is retriable: %v", name, err)
	}
}

// mechanismNames are the names of a client's SASL mechanisms, in order.
func mechanismNames(cl *kgo.Client) []string {
	var names []string
	mechs, _ := cl.OptValue(kgo.SASL).([]sasl.Mechanism)
	for _, m := range mechs {
		names = append(names, m.Name())
	}
	return names
}

// soKeepAlive is the SO_KEEPALIVE option of a TCP connection's socket.
func soKeepAlive(t *testing.T, conn net.Conn) int {
	t.Helper()
	tcp, ok := conn.(*net.TCPConn)
	require.True(t, ok, "%T", conn)
	rc, err := tcp.SyscallConn()
	require.NoError(t, err)
	v, serr := -1, error(nil)
	require.NoError(t, rc.Control(func(fd uintptr) {
		v, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_KEEPALIVE)
	}))
	require.NoError(t, serr)
	return v
}
