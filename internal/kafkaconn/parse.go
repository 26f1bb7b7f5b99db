package kafkaconn

import (
	"errors"
	"strings"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// The kafka_watermark input's fields that Parse reads. The input's spec
// (plugin.ConfigSpec) declares them with these constants;
// TestParseEveryField parses each from it.
const (
	FieldSeedBrokers            = "seed_brokers"
	FieldClientID               = "client_id"
	FieldTLS                    = "tls"
	FieldSASL                   = "sasl"
	FieldSASLMechanism          = "mechanism"
	FieldSASLUsername           = "username"
	FieldSASLPassword           = "password"
	FieldSASLToken              = "token"
	FieldSASLExtensions         = "extensions"
	FieldSASLAWS                = "aws"
	FieldTCP                    = "tcp" // netutil.DialerConfigSpec's name
	FieldTCPConnectTimeout      = "connect_timeout"
	FieldSessionTimeout         = "session_timeout"
	FieldMetadataMaxAge         = "metadata_max_age"
	FieldRequestTimeoutOverhead = "request_timeout_overhead"
	FieldConnIdleTimeout        = "conn_idle_timeout"
)

// Parse reads the connection settings of a kafka_watermark input from its
// parsed config (parsed with the input's spec, which fills in defaults):
// seed_brokers (an entry may hold several comma-separated addresses),
// client_id, tls, sasl, the tcp block (parseDialer), session_timeout,
// metadata_max_age, request_timeout_overhead and conn_idle_timeout. A
// field the config does not hold is left zero. It reports every error it
// finds, joined, and checks no more than it must to build the dialer: the
// input validates the values (ValidateSASL among them).
func Parse(pc *service.ParsedConfig) (Config, error) {
	var c Config
	var errs []error
	if pc.Contains(FieldSeedBrokers) {
		v, err := pc.FieldStringList(FieldSeedBrokers)
		errs = append(errs, err)
		c.SeedBrokers = SplitEntries(v)
	}
	if pc.Contains(FieldClientID) {
		var err error
		c.ClientID, err = pc.FieldString(FieldClientID)
		errs = append(errs, err)
	}
	for _, d := range []struct {
		name string
		dst  *time.Duration
	}{
		{FieldSessionTimeout, &c.SessionTimeout},
		{FieldMetadataMaxAge, &c.MetadataMaxAge},
		{FieldRequestTimeoutOverhead, &c.RequestTimeoutOverhead},
		{FieldConnIdleTimeout, &c.ConnIdleTimeout},
	} {
		if pc.Contains(d.name) {
			var err error
			*d.dst, err = pc.FieldDuration(d.name)
			errs = append(errs, err)
		}
	}
	if pc.Contains(FieldTLS) {
		tlsConf, on, err := pc.FieldTLSToggled(FieldTLS)
		errs = append(errs, err)
		if on {
			c.TLS = tlsConf
		}
	}
	var err error
	c.SASL, err = parseSASL(pc)
	errs = append(errs, err)
	c.Dialer, err = parseDialer(pc)
	errs = append(errs, err)
	return c, errors.Join(errs...)
}

// SplitEntries splits list entries at commas and trims them, dropping empty
// ones, as the redpanda input reads seed_brokers.
func SplitEntries(list []string) []string {
	var out []string
	for _, e := range list {
		for part := range strings.SplitSeq(e, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}
