package kafkaconn

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultDialTimeout is kgo's default dial timeout (kgo config.go:626), and
// the connect timeout of a tcp block that says 0s: kgo applies its timeout
// only to its own dialer, which dialOpt replaces.
const DefaultDialTimeout = 10 * time.Second

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
