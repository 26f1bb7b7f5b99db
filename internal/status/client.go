package status

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// NewClient returns a kgo client for t, and checks that a seed broker
// answers (which is where an unreachable cluster, a TLS failure or a failed
// authentication shows). The client joins no group and consumes nothing:
// reading a group's offsets never triggers its rebalance. The caller closes
// it.
func NewClient(ctx context.Context, t Target) (*kgo.Client, error) {
	if err := t.validate(); err != nil {
		return nil, err
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(t.SeedBrokers...),
		kgo.ClientID(t.ClientID),
	}
	if t.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(t.TLS))
	}
	var mechs []sasl.Mechanism
	for _, s := range t.SASL {
		if s.Mechanism != "none" {
			mechs = append(mechs, saslMechanism(s))
		}
	}
	if len(mechs) > 0 {
		opts = append(opts, kgo.SASL(mechs...))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("invalid client options: %w", err)
	}
	if err := cl.Ping(ctx); err != nil {
		cl.Close()
		return nil, fmt.Errorf("cannot reach seed brokers %s%s: %w", strings.Join(t.SeedBrokers, ","), t.security(), err)
	}
	return cl, nil
}

// saslMechanism is the plugin's mapping of a mechanism name to franz-go's
// implementation (plugin/client.go keeps its own unexported); validate has
// rejected any other name.
func saslMechanism(s SASL) sasl.Mechanism {
	switch s.Mechanism {
	case "PLAIN":
		return plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism()
	case "SCRAM-SHA-256":
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha512Mechanism()
	default: // OAUTHBEARER
		return oauth.Auth{Token: s.Token, Extensions: s.Extensions}.AsMechanism()
	}
}
