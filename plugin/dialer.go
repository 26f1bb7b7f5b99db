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

// parseDialer builds the dialer of the tcp block, as Benthos's netutil
// describes it, or nil when the block is absent. Unlike the redpanda input,
// which logs a bad tcp block and dials without it, a bad block is a config
// error.
func parseDialer(pc *service.ParsedConfig) (*net.Dialer, error) {
	if !pc.Contains(fieldTCP) {
		return nil, nil
	}
	dc, err := netutil.DialerConfigFromParsed(pc.Namespace(fieldTCP))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fieldTCP, err)
	}
	d := &net.Dialer{}
	if err := netutil.DecorateDialer(d, dc); err != nil {
		return nil, fmt.Errorf("%s: %w", fieldTCP, err)
	}
	return d, nil
}

// dialOpt returns the kgo option that dials brokers: over the tcp block's
// dialer, or without one over kgo's own (a net.Dialer with kgo's dial
// timeout, kgo client.go:524-526), with refused connections reported as
// retriable (retriableRefusals: a broker restart must not end a classic
// member's session).
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
