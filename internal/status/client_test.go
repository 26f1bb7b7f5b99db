package status

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/watermark-connect/watermark-connect/internal/kafkaconn"
	"github.com/watermark-connect/watermark-connect/internal/testcert"
)

// status used to build its client by hand: kgo's TLS dialer, its own copy
// of the SASL mapping, and neither the tcp block nor the input's handling of
// refused dials. It now connects with kafkaconn's options, as the input
// does: against a cluster that requires TLS and SCRAM-SHA-512, a config with
// TLS, SASL and a tcp block reads the group's commits.
func TestRunWithTLSSASLAndTCP(t *testing.T) {
	const user, password = "svc", "tls-hunter2-beef"
	cert := testcert.New(t)
	c := newClusterWith(t, []kgo.Opt{
		kgo.DialTLSConfig(&tls.Config{RootCAs: cert.Pool(t)}),
		kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha512Mechanism()),
	}, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{cert.TLS}}),
		kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", user, password), kfake.SeedTopics(1, "orders"))
	c.produce(t, "orders", 0, 10)
	c.commit(t, "g", "orders", 0, 10, meta(t, 10, nil, nil))

	caFile := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(caFile, []byte(cert.CertPEM), 0o600))
	config := func(tlsEnabled bool) string {
		return writeConfig(t, fmt.Sprintf(`
input:
  kafka_watermark:
    seed_brokers: [ %q ]
    topics: [ orders ]
    consumer_group: g
    tls:
      enabled: %t
      root_cas_file: %q
    sasl:
      - mechanism: SCRAM-SHA-512
        username: %s
        password: "${KAFKA_PASSWORD}"
    tcp:
      connect_timeout: 3s
      keep_alive: { idle: -1s }
output:
  drop: {}
`, c.addr, tlsEnabled, caFile, user))
	}
	lookup := func(name string) (string, bool) {
		if name == "KAFKA_PASSWORD" {
			return password, true
		}
		return "", false
	}

	tg, err := LoadConfig(config(true), lookup, nil)
	require.NoError(t, err)
	require.NotNil(t, tg.Conn.Dialer, "the tcp block is read")
	assert.Equal(t, 3*time.Second, tg.Conn.Dialer.Timeout)
	assert.Negative(t, tg.Conn.Dialer.KeepAlive, "keep_alive.idle: -1s turns probes off")

	code, stdout, stderr := run(t, Options{ConfigPath: config(true), Lookup: lookup})
	assert.Equal(t, ExitHealthy, code, "stderr: %s", stderr)
	assert.Contains(t, stdout, "orders")
	assert.NotContains(t, stdout+stderr, password)

	// Without TLS the cluster hangs up: TLS was what got through.
	code, _, stderr = run(t, Options{ConfigPath: config(false), Lookup: lookup})
	assert.Equal(t, ExitUnknown, code)
	assert.Contains(t, stderr, "with SASL SCRAM-SHA-512: ")
	assert.Contains(t, stderr, "is TLS missing?")
	assert.NotContains(t, stderr, password)
}

// The tcp block is checked as the input checks it: a block the input
// refuses at start is a config error for status too.
func TestLoadConfigBadTCPBlock(t *testing.T) {
	_, err := LoadConfig(writeConfig(t, `
input:
  kafka_watermark:
    seed_brokers: [ k:9092 ]
    topics: [ t ]
    consumer_group: g
    tcp: { tcp_user_timeout: 30s, keep_alive: { idle: 10s } }
`), lookupTest, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "tcp: keep_alive.idle (10s) must be greater than tcp_user_timeout (30s)")
}

// SASL entries are checked as the input checks them, before any dial: a
// mechanism that needs a user name or a token and has none is an error, not
// an authentication the broker refuses.
func TestNewClientChecksSASLAsTheInput(t *testing.T) {
	for _, tc := range []struct {
		s    kafkaconn.SASL
		want string
	}{
		{kafkaconn.SASL{Mechanism: "PLAIN", Password: "p"}, "sasl[0].username: PLAIN needs a user name"},
		{kafkaconn.SASL{Mechanism: "SCRAM-SHA-256"}, "sasl[0].username: SCRAM-SHA-256 needs a user name"},
		{kafkaconn.SASL{Mechanism: "OAUTHBEARER"}, "sasl[0].token: OAUTHBEARER needs a token"},
	} {
		tg := Target{Conn: kafkaconn.Config{SeedBrokers: []string{closedAddr(t)}, SASL: []kafkaconn.SASL{tc.s}}, Group: "g"}
		_, err := NewClient(testContext(t), tg)
		assert.EqualError(t, err, tc.want, tc.s.Mechanism)
	}
}
