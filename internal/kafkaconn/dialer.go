package kafkaconn

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/redpanda-data/benthos/v4/public/utils/netutil"
	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultDialTimeout is kgo's default dial timeout (kgo config.go:626), and
// the connect timeout of a tcp block that says 0s: kgo applies its timeout
// only to its own dialer, which dialOpt replaces.
const DefaultDialTimeout = 10 * time.Second

// parseDialer builds the dialer of the tcp block as Benthos's netutil
// decorates it, with two departures:
//
//   - a connect_timeout of 0s, the default, is kgo's own dial timeout
//     (DefaultDialTimeout), not none: kgo applies its timeout only to the
//     dialer it makes itself, and dialOpt always gives it this one. Without a
//     bound a dial of a host that drops SYNs waits for the OS (minutes on
//     Linux).
//   - a negative keep_alive.idle turns keep-alive probes off, as netutil
//     describes it: netutil only clears KeepAliveConfig.Enable, which a
//     net.Dialer with KeepAlive 0 reads as "probes at Go's defaults".
//
// Benthos fills the block in with its defaults when a config leaves it out,
// so it is always there; nil is returned only for a parsed config without it.
// Unlike the redpanda input, which logs a bad tcp block and dials without it,
// a bad block is a config error.
func parseDialer(pc *service.ParsedConfig) (*net.Dialer, error) {
	if !pc.Contains(FieldTCP) {
		return nil, nil
	}
	dc, err := netutil.DialerConfigFromParsed(pc.Namespace(FieldTCP))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", FieldTCP, err)
	}
	switch {
	case dc.Timeout < 0:
		return nil, fmt.Errorf("%s: %s (%s) must not be negative: 0s is kgo's %s", FieldTCP, FieldTCPConnectTimeout, dc.Timeout, DefaultDialTimeout)
	case dc.Timeout == 0:
		dc.Timeout = DefaultDialTimeout
	}
	d := &net.Dialer{}
	if err := netutil.DecorateDialer(d, dc); err != nil {
		return nil, fmt.Errorf("%s: %w", FieldTCP, err)
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
		d = &net.Dialer{Timeout: DefaultDialTimeout}
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
