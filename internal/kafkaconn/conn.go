package kafkaconn

import (
	"crypto/tls"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Config is what a client needs to connect to a cluster: the
// connection-level settings of a kafka_watermark input. A zero duration
// leaves kgo's default for its options; the input validates that each is
// positive, status may leave them out.
//
// A Config is a value, safe for concurrent reads. TLS and Dialer are
// shared, not copied, by copies of it and by the options Opts returns:
// neither may be modified once Opts has been called.
type Config struct {
	SeedBrokers []string // host:port of the brokers tried first
	ClientID    string   // the client ID the broker sees (kgo.ClientID)
	TLS         *tls.Config
	SASL        []SASL // tried in order; MechanismNone entries are skipped
	// Dialer is the tcp block's (a parsed config always has one); nil dials
	// with DefaultDialTimeout and Go's defaults.
	Dialer *net.Dialer

	// SessionTimeout is the consumer group's session timeout, from which
	// the retries of requests follow (retry.go), for a client in no group
	// too: kgo's retries of its other requests are the same.
	SessionTimeout         time.Duration
	MetadataMaxAge         time.Duration
	RequestTimeoutOverhead time.Duration
	ConnIdleTimeout        time.Duration
}

// Opts returns the kgo options that connect as c says: the seed brokers,
// the client ID, the dialer (dialOpt: the tcp block's, TLS over it, refused
// dials retriable), the SASL mechanisms, and the retries and timeouts of
// requests. It expects c.SASL to have passed ValidateSASL: an entry with
// another mechanism fails the connection's authentication.
func (c Config) Opts() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.SeedBrokers...),
		kgo.ClientID(c.ClientID),
		dialOpt(c.Dialer, c.TLS),
	}
	if c.SessionTimeout > 0 {
		// A classic member keeps heartbeating through a broker restart
		// shorter than session_timeout: see retriableRefusals (used by
		// dialOpt), requestRetries and retryTimeout.
		opts = append(opts,
			kgo.RequestRetries(requestRetries(c.SessionTimeout)),
			kgo.RetryTimeoutFn(retryTimeout(c.SessionTimeout)),
		)
	}
	if c.MetadataMaxAge > 0 {
		opts = append(opts,
			kgo.MetadataMaxAge(c.MetadataMaxAge),
			// kgo refuses a max age below its min age (5s by default).
			kgo.MetadataMinAge(min(c.MetadataMaxAge, 5*time.Second)),
		)
	}
	if c.RequestTimeoutOverhead > 0 {
		opts = append(opts, kgo.RequestTimeoutOverhead(c.RequestTimeoutOverhead))
	}
	if c.ConnIdleTimeout > 0 {
		opts = append(opts, kgo.ConnIdleTimeout(c.ConnIdleTimeout))
	}
	if mechs := mechanisms(c.SASL); len(mechs) > 0 {
		opts = append(opts, kgo.SASL(mechs...))
	}
	return opts
}
