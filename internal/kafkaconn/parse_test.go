package kafkaconn_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/watermark-connect/watermark-connect/internal/kafkaconn"
)

// Parse reads every connection field by the name the input's spec gives
// it: each is set away from its default here, so that a name that drifted
// from the spec's would read as the default, or fail.
func TestParseEveryField(t *testing.T) {
	_, c, err := parseFields(t, `
consumer_group: g
seed_brokers: [ "a:1, b:2", c:3 ]
client_id: status-test
tls: { enabled: true, skip_cert_verify: true }
sasl:
  - { mechanism: none }
  - { mechanism: SCRAM-SHA-512, username: svc, password: pw }
  - { mechanism: OAUTHBEARER, token: tok, extensions: { trace: yes-please } }
  - { mechanism: PLAIN, username: u, aws: { region: eu-west-1 } }
tcp: { connect_timeout: 3s, keep_alive: { idle: 20s } }
session_timeout: 2m
metadata_max_age: 1m
request_timeout_overhead: 7s
conn_idle_timeout: 40s
`)
	require.NoError(t, err)
	require.Equal(t, []string{"a:1", "b:2", "c:3"}, c.SeedBrokers, "comma-separated entries are split")
	require.Equal(t, "status-test", c.ClientID)
	require.NotNil(t, c.TLS)
	require.True(t, c.TLS.InsecureSkipVerify)
	require.Equal(t, []kafkaconn.SASL{
		{Mechanism: kafkaconn.MechanismNone},
		{Mechanism: kafkaconn.MechanismScram512, Username: "svc", Password: "pw"},
		{Mechanism: kafkaconn.MechanismOAuthBearer, Token: "tok", Extensions: map[string]string{"trace": "yes-please"}},
		{Mechanism: kafkaconn.MechanismPlain, Username: "u", AWS: true},
	}, c.SASL)
	require.NotNil(t, c.Dialer)
	require.Equal(t, 3*time.Second, c.Dialer.Timeout)
	require.Equal(t, 20*time.Second, c.Dialer.KeepAliveConfig.Idle)
	require.Equal(t, 2*time.Minute, c.SessionTimeout)
	require.Equal(t, time.Minute, c.MetadataMaxAge)
	require.Equal(t, 7*time.Second, c.RequestTimeoutOverhead)
	require.Equal(t, 40*time.Second, c.ConnIdleTimeout)

	// Left out, each field is the spec's default; TLS and SASL are off.
	_, c, err = parseFields(t, "consumer_group: g\n")
	require.NoError(t, err)
	require.Equal(t, kafkaconn.Config{
		SeedBrokers:            []string{"127.0.0.1:1"},
		ClientID:               "watermark-connect",
		Dialer:                 c.Dialer, // TestTCPDialerTimeout's
		SessionTimeout:         time.Minute,
		MetadataMaxAge:         5 * time.Minute,
		RequestTimeoutOverhead: 10 * time.Second,
		ConnIdleTimeout:        20 * time.Second,
	}, c)
	require.NotNil(t, c.Dialer)
}

func TestValidateSASL(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    kafkaconn.SASL
		want string // "" valid
	}{
		{"none", kafkaconn.SASL{Mechanism: kafkaconn.MechanismNone}, ""},
		{"plain", kafkaconn.SASL{Mechanism: kafkaconn.MechanismPlain, Username: "u"}, ""},
		{"plain, no user", kafkaconn.SASL{Mechanism: kafkaconn.MechanismPlain, Password: "p"}, "sasl[1].username: PLAIN needs a user name"},
		{"scram-256, no user", kafkaconn.SASL{Mechanism: kafkaconn.MechanismScram256}, "sasl[1].username: SCRAM-SHA-256 needs a user name"},
		{"scram-512, no user", kafkaconn.SASL{Mechanism: kafkaconn.MechanismScram512}, "sasl[1].username: SCRAM-SHA-512 needs a user name"},
		{"oauth", kafkaconn.SASL{Mechanism: kafkaconn.MechanismOAuthBearer, Token: "t"}, ""},
		{"oauth, no token", kafkaconn.SASL{Mechanism: kafkaconn.MechanismOAuthBearer}, "sasl[1].token: OAUTHBEARER needs a token"},
		{"unknown", kafkaconn.SASL{Mechanism: "GSSAPI"}, `sasl[1].mechanism ("GSSAPI") must be one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER, none`},
	} {
		// Behind a valid entry, so that the index is the entry's.
		errs := kafkaconn.ValidateSASL([]kafkaconn.SASL{{Mechanism: kafkaconn.MechanismNone}, tc.s})
		if tc.want == "" {
			require.Empty(t, errs, tc.name)
			continue
		}
		require.Len(t, errs, 1, tc.name)
		require.EqualError(t, errs[0], tc.want, tc.name)
	}
	var unknown *kafkaconn.UnknownMechanismError
	errs := kafkaconn.ValidateSASL([]kafkaconn.SASL{{Mechanism: "AWS_MSK_IAM"}})
	require.Len(t, errs, 1)
	require.True(t, errors.As(errs[0], &unknown))
	require.Equal(t, kafkaconn.UnknownMechanismError{Index: 0, Mechanism: "AWS_MSK_IAM"}, *unknown)
}

// optClient builds a client from opts, closed at the end of the test; it
// dials nothing until asked.
func optClient(t *testing.T, opts []kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// mechanismNames are the names of the SASL mechanisms of a client, in order.
func mechanismNames(cl *kgo.Client) []string {
	var names []string
	mechs, _ := cl.OptValue(kgo.SASL).([]sasl.Mechanism)
	for _, m := range mechs {
		names = append(names, m.Name())
	}
	return names
}

// Opts gives kgo the mechanisms in order, without none; a name not built
// in fails its authentication instead of being sent as another mechanism.
func TestOptsSASL(t *testing.T) {
	cl := optClient(t, kafkaconn.Config{SeedBrokers: []string{"127.0.0.1:1"}, SASL: []kafkaconn.SASL{
		{Mechanism: kafkaconn.MechanismNone},
		{Mechanism: kafkaconn.MechanismOAuthBearer, Token: "t"},
		{Mechanism: kafkaconn.MechanismPlain, Username: "u"},
		{Mechanism: kafkaconn.MechanismScram256, Username: "u"},
		{Mechanism: kafkaconn.MechanismScram512, Username: "u"},
		{Mechanism: "GSSAPI"},
	}}.Opts())
	require.Equal(t, []string{"OAUTHBEARER", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI"}, mechanismNames(cl))
	mechs := cl.OptValue(kgo.SASL).([]sasl.Mechanism)
	_, _, err := mechs[4].Authenticate(t.Context(), "127.0.0.1:1")
	require.EqualError(t, err, `SASL mechanism "GSSAPI" is not built in`)

	cl = optClient(t, kafkaconn.Config{SeedBrokers: []string{"127.0.0.1:1"}, SASL: []kafkaconn.SASL{{Mechanism: kafkaconn.MechanismNone}}}.Opts())
	require.Empty(t, mechanismNames(cl), "none alone is no SASL")
}

// The retries and timeouts of requests: the input's, from its settings; a
// zero duration leaves kgo's default, as status without a config has them.
func TestOptsTimeouts(t *testing.T) {
	set := optClient(t, kafkaconn.Config{
		SeedBrokers:            []string{"127.0.0.1:1"},
		ClientID:               "c",
		SessionTimeout:         2 * time.Minute,
		MetadataMaxAge:         3 * time.Second,
		RequestTimeoutOverhead: 7 * time.Second,
		ConnIdleTimeout:        40 * time.Second,
	}.Opts())
	require.Equal(t, "c", set.OptValue(kgo.ClientID))
	require.Equal(t, int64(29), set.OptValue(kgo.RequestRetries), "2m/5s+5: the heartbeat's time budget, not the count, ends its retries")
	retry := set.OptValue(kgo.RetryTimeoutFn).(func(int16) time.Duration)
	require.Equal(t, 2*time.Minute, retry((*kmsg.HeartbeatRequest)(nil).Key()))
	require.Equal(t, 5*time.Second, retry((*kmsg.LeaveGroupRequest)(nil).Key()))
	require.Equal(t, 30*time.Second, retry((*kmsg.OffsetFetchRequest)(nil).Key()))
	require.Equal(t, 3*time.Second, set.OptValue(kgo.MetadataMaxAge))
	require.Equal(t, 3*time.Second, set.OptValue(kgo.MetadataMinAge), "kgo refuses a max age below the min age")
	require.Equal(t, 7*time.Second, set.OptValue(kgo.RequestTimeoutOverhead))
	require.Equal(t, 40*time.Second, set.OptValue(kgo.ConnIdleTimeout))

	def := optClient(t, nil)
	zero := optClient(t, kafkaconn.Config{SeedBrokers: []string{"127.0.0.1:1"}}.Opts())
	for _, opt := range []any{kgo.RequestRetries, kgo.MetadataMaxAge, kgo.MetadataMinAge, kgo.RequestTimeoutOverhead, kgo.ConnIdleTimeout} {
		require.Equal(t, def.OptValue(opt), zero.OptValue(opt), "%T", opt)
	}
	require.Equal(t, 30*time.Second, zero.OptValue(kgo.RetryTimeoutFn).(func(int16) time.Duration)((*kmsg.OffsetFetchRequest)(nil).Key()))
}

// Without a tcp block's dialer (status without a config) the dialer is
// still ours, not kgo's: with TLS on too, a refused dial is retriable.
func TestOptsDialerWithoutTCPBlock(t *testing.T) {
	cl := optClient(t, kafkaconn.Config{SeedBrokers: []string{"127.0.0.1:1"}, TLS: &tls.Config{}}.Opts())
	dial, ok := cl.OptValue(kgo.Dialer).(func(ctx context.Context, network, host string) (net.Conn, error))
	require.True(t, ok, "the dialer is ours")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	_, err = dial(t.Context(), "tcp", addr)
	require.Error(t, err)
	require.True(t, kgo.IsRetryableBrokerErr(err), "a refusal is retriable: %v", err)
}
