package plugin

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/redpanda-data/benthos/v4/public/utils/netutil"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The tcp block's fields: the names netutil.DialerConfigFromParsed reads.
const (
	fieldTCPConnectTimeout = "connect_timeout"
	fieldTCPKeepAlive      = "keep_alive"
	fieldTCPKeepAliveIdle  = "idle"
	fieldTCPKeepAliveIntvl = "interval"
	fieldTCPKeepAliveCount = "count"
	fieldTCPUserTimeout    = "tcp_user_timeout"
)

// tcpFieldSpec is the tcp block: netutil.DialerConfigSpec's fields (names,
// types, defaults, nesting: TestTCPSpecMatchesNetutil holds it to them), so that
// netutil.DialerConfigFromParsed parses it, but described as this input
// dials. netutil's own descriptions are wrong here: its connect_timeout "Zero
// disables", where 0s is kgo's 10s here (parseDialer).
func tcpFieldSpec() *service.ConfigField {
	return service.NewObjectField(fieldTCP,
		service.NewDurationField(fieldTCPConnectTimeout).
			Description("How long a dial of a broker may take, the TLS handshake included when TLS is on. "+
				"0s, the default, is kgo's 10s: a dial without a bound could wait minutes on an unreachable host. "+
				"A negative value is a config error.").
			Default("0s"),
		service.NewObjectField(fieldTCPKeepAlive,
			service.NewDurationField(fieldTCPKeepAliveIdle).
				Description("How long a connection is idle before the first keep-alive probe. "+
					"0s is 15s. A negative value turns keep-alive probes off.").
				Default("15s"),
			service.NewDurationField(fieldTCPKeepAliveIntvl).
				Description("The time between keep-alive probes. 0s is 15s.").
				Default("15s"),
			service.NewIntField(fieldTCPKeepAliveCount).
				Description("How many keep-alive probes may go unanswered before the connection is dropped. 0 is 9.").
				Default(9),
		).Description("TCP keep-alive probes of broker connections.").
			Optional(),
		service.NewDurationField(fieldTCPUserTimeout).
			Description("How long sent data may stay unacknowledged before the connection is dropped (TCP_USER_TIMEOUT): "+
				"Linux only (kernel 2.6.37+), ignored elsewhere. 0s, the default, leaves it unset. "+
				"When set, `keep_alive.idle` must be greater (RFC 5482): otherwise a config error, "+
				"where the redpanda input logs it and dials without the block.").
			Default("0s"),
	).
		Description("TCP socket settings of broker connections: the redpanda input's fields, except that a `connect_timeout` of 0s is a 10s timeout here, not none. " +
			"The block always applies: a config that leaves it, or some of its fields, out dials with their defaults. " +
			"With TLS on, the TLS handshake runs over this dialer (the server name is each broker's host unless the TLS settings name one).").
		Optional().
		Advanced()
}

// parseDialer builds the dialer of the tcp block as Benthos's netutil
// decorates it, with two departures:
//
//   - a connect_timeout of 0s, the default, is kgo's own dial timeout
//     (kgoDialTimeout), not none: kgo applies its timeout only to the dialer
//     it makes itself, and dialOpt always gives it this one. Without a bound
//     a dial of a host that drops SYNs waits for the OS (minutes on Linux).
//   - a negative keep_alive.idle turns keep-alive probes off, as netutil
//     describes it: netutil only clears KeepAliveConfig.Enable, which a
//     net.Dialer with KeepAlive 0 reads as "probes at Go's defaults".
//
// Benthos fills the block in with its defaults when a config leaves it out,
// so it is always there; nil is returned only for a parsed config without it.
// Unlike the redpanda input, which logs a bad tcp block and dials without it,
// a bad block is a config error.
func parseDialer(pc *service.ParsedConfig) (*net.Dialer, error) {
	if !pc.Contains(fieldTCP) {
		return nil, nil
	}
	dc, err := netutil.DialerConfigFromParsed(pc.Namespace(fieldTCP))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fieldTCP, err)
	}
	switch {
	case dc.Timeout < 0:
		return nil, fmt.Errorf("%s: %s (%s) must not be negative: 0s is kgo's %s", fieldTCP, fieldTCPConnectTimeout, dc.Timeout, kgoDialTimeout)
	case dc.Timeout == 0:
		dc.Timeout = kgoDialTimeout
	}
	d := &net.Dialer{}
	if err := netutil.DecorateDialer(d, dc); err != nil {
		return nil, fmt.Errorf("%s: %w", fieldTCP, err)
	}
	if dc.KeepAliveConfig.Idle < 0 {
		d.KeepAlive = -1
	}
	return d, nil
}

// dialOpt returns the kgo option that dials brokers: over the tcp block's
// dialer, or without one (a parsed config always has one) over a net.Dialer
// with kgo's dial timeout, as kgo's own (kgo client.go:524-526), with refused
// connections reported as retriable (retriableRefusals: a broker restart
// must not end a classic member's session).
//
// kgo refuses a Dialer together with DialTLSConfig, so with TLS set the TLS
// handshake is dialled here, over that dialer, as DialTLSConfig would: the
// config is cloned per dial, and its ServerName, when empty, is the host of
// the broker being dialled.
func dialOpt(d *net.Dialer, tlsConf *tls.Config) kgo.Opt {
	if d == nil {
		d = &net.Dialer{Timeout: kgoDialTimeout}
	}
	dial := d.DialContext
	if tlsConf != nil {
		dial = tlsDial(d, tlsConf)
	}
	return kgo.Dialer(retriableRefusals(dial))
}

// tlsDial dials TLS over d as kgo's DialTLSConfig does over its own dialer.
func tlsDial(d *net.Dialer, tlsConf *tls.Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c := tlsConf.Clone()
		if c.ServerName == "" {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, fmt.Errorf("unable to split host:port for dialing: %w", err)
			}
			c.ServerName = host
		}
		return (&tls.Dialer{NetDialer: d, Config: c}).DialContext(ctx, network, addr)
	}
}
